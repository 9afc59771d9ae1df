#include "frontend/graph_fusion.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace atvoss::frontend {
namespace {

// An epilogue chain rule of the header's table: the kernels it starts from and the steps,
// besides activations, that join them.
struct ChainRule {
  const char* name;
  std::set<OpFamily> families;
  std::set<std::string> steps;  // non-activation steps that join
  bool silu = false;            // takes x * Sigmoid(x) and the GELUs written out
  bool folds = false;           // fold-into-weights applies
};

const std::vector<ChainRule>& chain_rules() {
  static const std::vector<ChainRule> rules = {
      {"conv-epilogue", {OpFamily::conv, OpFamily::depthwise}, {"add", "bias"}, true, true},
      {"matmul-epilogue", {OpFamily::matmul}, {"add", "bias", "layernorm"}, true, false},
      {"rows-activations", {OpFamily::rows}, {}, false, false},
  };
  return rules;
}

const ChainRule* rule_for(const Workload& w) {
  if (!w.info().takes_epilogue) return nullptr;
  for (const auto& r : chain_rules()) {
    if (r.families.count(w.family())) return &r;
  }
  return nullptr;
}

bool is_activation(const std::string& step) {
  return !step.empty() && step != "add" && step != "scale" && step != "batchnorm" && step != "layernorm";
}

class Fuser {
 public:
  Fuser(Graph& g, const ScalarOf& scalar) : g_(g) {
    if (!scalar) return;
    for (Gelu& gelu : PatternView(g, scalar).gelus_owning_their_input()) gelus_[gelu.x] = std::move(gelu);
  }

  void run() {
    for (int i = 0; i < int(g_.nodes().size()); ++i) {
      const GraphNode& n = g_.nodes()[i];
      // A ConvTranspose's matmul writes the windows before their scatter-add: nothing after it
      // runs in its epilogue. A Conv's im2col matmul (onnx_import.cpp) writes channels-last
      // rows, laid out as no residual or folded weights are: activations only.
      if (n.fused_into >= 0 || !n.kernel || n.outputs.empty() || n.op == "ConvTranspose") continue;
      static const ChainRule im2col{"im2col-activations", {OpFamily::matmul}, {}, true, false};
      if (n.op == "Conv" && n.kernel->op() == "matmul") {
        fuse_after(i, im2col);
      } else if (const ChainRule* rule = rule_for(*n.kernel)) {
        fuse_after(i, *rule);
      }
    }
  }

 private:
  // The one node reading tensor t, unless it is read twice, is a graph output, or runs
  // in another kernel already. A node's first output is the one a chain follows (the others
  // of an inference node, such as a LayerNormalization's statistics, are not read).
  std::optional<int> sole_consumer(int t) const {
    const GraphTensor& tensor = g_.tensors()[t];
    if (tensor.output || tensor.consumers.size() != 1) return std::nullopt;
    const int c = tensor.consumers.front();
    if (g_.nodes()[c].fused_into >= 0 || g_.nodes()[c].outputs.empty()) return std::nullopt;
    return c;
  }

  // The operand of a two-input node other than t; -1 if it has not two.
  static int other_input(const GraphNode& n, int t) {
    if (n.inputs.size() != 2) return -1;
    return n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
  }

  bool constant(int t) const { return t >= 0 && g_.tensors()[t].constant; }

  // A Mul (either side) or Div (t divided) by a constant: scales the weights of a conv.
  bool constant_scale(const GraphNode& n, int t) const {
    if (n.step != "scale") return false;
    if (n.op == "Div" && n.inputs.front() != t) return false;
    return constant(other_input(n, t));
  }

  // x * Sigmoid(x): (Sigmoid, Mul) when t feeds only these two and the Sigmoid only the Mul.
  std::optional<std::pair<int, int>> silu_after(int t) const {
    const GraphTensor& tensor = g_.tensors()[t];
    if (tensor.output || tensor.consumers.size() != 2) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const int s = tensor.consumers[k], m = tensor.consumers[1 - k];
      const GraphNode& sig = g_.nodes()[s];
      const GraphNode& mul = g_.nodes()[m];
      if (sig.fused_into >= 0 || mul.fused_into >= 0 || sig.op != "Sigmoid" || mul.op != "Mul") continue;
      if (sig.outputs.empty() || mul.outputs.empty() || sole_consumer(sig.outputs[0]) != m) continue;
      if (other_input(mul, t) == sig.outputs[0]) return std::make_pair(s, m);
    }
    return std::nullopt;
  }

  // The epilogue op node n is when it reads t after chain under rule (empty: it does not join).
  std::string step_of(const GraphNode& n, int t, const std::vector<std::string>& chain, const ChainRule& rule) const {
    auto has = [&](const char* e) { return std::find(chain.begin(), chain.end(), e) != chain.end(); };
    std::string step = n.step;
    if (step == "add" && constant(other_input(n, t)) && !has("bias") && !has("add")) step = "bias";
    if (is_activation(step) || rule.steps.count(step)) return step;
    return "";
  }

  void take(int node, int into, const char* rule) {
    g_.node(node).fused_into = into;
    g_.node(node).fused_by = rule;
  }

  // The GELU of tensor t, none of its nodes fused yet, else null.
  const Gelu* gelu_after(int t) const {
    const auto it = gelus_.find(t);
    if (it == gelus_.end()) return nullptr;
    const auto& nodes = it->second.nodes;
    const bool free = std::none_of(nodes.begin(), nodes.end(), [&](int n) { return g_.nodes()[n].fused_into >= 0; });
    return free ? &it->second : nullptr;
  }

  void fuse_after(int i, const ChainRule& rule) {
    const Workload& w = *g_.nodes()[i].kernel;
    std::vector<std::string> chain = w.epilogue();
    auto has = [&](const std::string& e) { return std::find(chain.begin(), chain.end(), e) != chain.end(); };
    int t = g_.nodes()[i].outputs[0];
    while (true) {
      if (const Gelu* gelu = rule.silu ? gelu_after(t) : nullptr; gelu && !has(gelu->tanh ? "gelu" : "gelu_erf")) {
        for (int n : gelu->nodes) take(n, i, "gelu");
        chain.push_back(gelu->tanh ? "gelu" : "gelu_erf");
        t = gelu->out;
        continue;
      }
      if (const auto silu = rule.silu ? silu_after(t) : std::nullopt; silu && !has("silu")) {
        take(silu->first, i, "silu");
        take(silu->second, i, "silu");
        chain.push_back("silu");
        t = g_.nodes()[silu->second].outputs[0];
        continue;
      }
      const auto next = sole_consumer(t);
      if (!next) break;
      const GraphNode& n = g_.nodes()[*next];
      const bool right_after = chain.empty() || chain == std::vector<std::string>{"bias"};
      if (rule.folds && right_after && (n.step == "batchnorm" || constant_scale(n, t))) {
        if (chain.empty() && n.step == "batchnorm") chain.push_back("bias");  // its shift
        take(*next, i, "fold-into-weights");
        t = n.outputs[0];
        continue;
      }
      const std::string step = step_of(n, t, chain, rule);
      if (step.empty() || has(step)) break;
      chain.push_back(step);
      take(*next, i, rule.name);
      t = n.outputs[0];
    }
    if (chain != w.epilogue()) {
      Json j = w.to_json();
      j["epilogue"] = chain;
      g_.node(i).kernel = Workload::from_json(j);
    }
  }

  Graph& g_;
  std::map<int, Gelu> gelus_;  // by x
};

}  // namespace

void fuse_graph(Graph& g, const ScalarOf& scalar) { Fuser(g, scalar).run(); }

}  // namespace atvoss::frontend
