// Map: Model() = read the file and the graph (the plan's, checked against the file, or a fresh
// import) -> one Builder pass over the nodes in order (kernel, plain, view or layout steps; the
// epilogue of a kernel node grown through its fused nodes while the host computes them exactly)
// -> lifetimes of every buffer -> the memory plan -> one arena. run() = inputs in, each step,
// outputs out.
#include "engine/model.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "engine/conv_ops.hpp"
#include "engine/onnx_file.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/onnx_import.hpp"
#include "host/digest.hpp"
#include "host/host_space.hpp"
#include "host/machine.hpp"
#include "lowering/knob_names.hpp"
#include "plan/model_plan.hpp"
#include "runtime/runtime.hpp"

namespace atvoss::engine {
namespace {

constexpr std::int64_t kAlign = 64;

const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  return ops;
}

// A tensor's data when a step runs: a buffer of the arena, or a constant of the file.
struct Ref {
  int slot = -1;
  const float* constant = nullptr;
};

struct Value {
  Shape shape;
  int plain = -1, nhwc = -1;  // slots holding it in ONNX order, in NHWC order
  bool nhwc_first = false;    // its producer writes NHWC (a conv kernel)
  const float* constant = nullptr;
};

struct Slot {
  std::int64_t bytes = 0;
  int first = std::numeric_limits<int>::max(), last = -1;  // steps that write it first and read it last
};

struct Step {
  std::string node, kind;
  Json info = Json::object();
  std::function<void()> run;
};

// An integer input's values are held as floats: each must be an integer a float holds exactly.
void require_exact_integers(const TensorInfo& input, const float* values) {
  constexpr float kExact = 16777216.0f;  // 2^24
  const std::int64_t n = elements(input.shape);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (std::trunc(v) == v && std::fabs(v) < kExact) continue;
    throw_bad_input("engine: input '" + input.name + "' (" + input.dtype + ") holds " + std::to_string(v) +
                    " at element " + std::to_string(i) + "; expected integers below 2^24 in magnitude");
  }
}

// The host kernels' epilogue ops a fused ONNX node is exactly, else "".
std::string exact_step(const onnx::NodeProto& n, const OnnxFile& file) {
  const std::string& op = n.op_type();
  if (op == "Relu") return "relu";
  if (op == "Sigmoid") return "sigmoid";
  if (op == "Gelu") return string_attr(n, "approximate", "none") == "tanh" ? "gelu" : "";
  if (op == "Clip") {  // a ReLU (min 0, no max) or a ReLU6 (min 0, max 6)
    float lo = float_attr(n, "min", -INFINITY), hi = float_attr(n, "max", INFINITY);
    if (n.input_size() > 1 && !n.input(1).empty()) {
      const auto* v = file.floats(n.input(1));
      if (!v || v->size() != 1) return "";
      lo = (*v)[0];
    }
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const auto* v = file.floats(n.input(2));
      if (!v || v->size() != 1) return "";
      hi = (*v)[0];
    }
    if (lo == 0 && hi == 6) return "relu6";
    return lo == 0 && std::isinf(hi) && hi > 0 ? "relu" : "";
  }
  return "";
}

}  // namespace

struct Model::Impl {
  ModelOptions options;
  std::unique_ptr<OnnxFile> file;
  frontend::Graph graph;
  std::unique_ptr<runtime::Runtime> rt;
  std::vector<Value> values;  // by graph tensor index
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<float*> ptr;  // per slot, into the arena
  std::unique_ptr<float[]> arena_storage;
  std::int64_t arena_bytes = 0;
  std::vector<int> input_tensors, output_tensors;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<std::unique_ptr<std::vector<float>>> owned;  // folded weights, biases
  std::vector<runtime::PreparedWeights> packed;
  // Five nodes computing x * 0.5 * (1 + erf(x / sqrt 2)) (torch's nn.GELU below opset 20, and
  // Hugging Face's gelu): the tensor x, the GELU's output and its nodes.
  struct ErfGelu {
    int x = -1, out = -1;
    std::vector<int> nodes;
  };

  std::set<int> absorbed;                   // nodes an earlier step computes (sole_relu_reader)
  std::vector<ErfGelu> erf_gelus;           // find_erf_gelus
  std::map<int, std::size_t> erf_gelu_of;   // a node of one: its index there
  std::map<std::string, Schedule> planned;  // workload key -> the plan's schedule
  int kernels = 0, kernels_from_plan = 0;
  int threads = 1;  // the cores the kernels and the larger plain ops run on

  // --- building ---------------------------------------------------------------------------

  int new_slot(const Shape& s) {
    slots.push_back({elements(s) * std::int64_t(sizeof(float))});
    return int(slots.size()) - 1;
  }
  void reads(int slot) {
    if (slot >= 0) slots[slot].last = std::max(slots[slot].last, int(steps.size()));
  }
  void writes(int slot) {
    if (slot >= 0) slots[slot].first = std::min(slots[slot].first, int(steps.size()));
  }
  const float* at(const Ref& r) const { return r.constant ? r.constant : ptr[r.slot]; }
  const float* owned_data(std::vector<float> v) {
    owned.push_back(std::make_unique<std::vector<float>>(std::move(v)));
    return owned.back()->data();
  }

  int tensor(const std::string& name) const { return graph.tensor_index(name); }

  // Tensor t in ONNX order (a layout step first if only NHWC holds it); read by the next step.
  Ref plain(int t, const std::string& who) {
    Value& v = values[t];
    if (v.constant) return {-1, v.constant};
    if (v.plain < 0 && v.nhwc < 0) {
      throw_bad_input("model: node '" + who + "' reads '" + graph.tensors()[t].name +
                      "', which no step computes (a constant subgraph the engine does not evaluate)");
    }
    if (v.plain < 0) {
      v.plain = new_slot(v.shape);
      add_to_nchw_step(t);
    }
    reads(v.plain);
    return {v.plain, nullptr};
  }

  // Tensor t in NHWC order where in_nhwc, else in ONNX order.
  Ref in_order(int t, bool in_nhwc, const std::string& who) {
    return in_nhwc ? Ref{nhwc(t, who), nullptr} : plain(t, who);
  }

  // Tensor t in NHWC order (a layout step first if only ONNX order holds it).
  int nhwc(int t, const std::string& who) {
    Value& v = values[t];
    if (v.nhwc < 0) {
      const Ref src = plain(t, who);
      v.nhwc = new_slot(v.shape);
      const int dst = v.nhwc;
      const Shape shape = v.shape;
      writes(dst);
      steps.push_back({graph.tensors()[t].name, "layout", {{"to", "nhwc"}}, [this, src, dst, shape] {
                         nchw_to_nhwc(at(src), ptr[dst], shape, threads);
                       }});
    }
    reads(v.nhwc);
    return v.nhwc;
  }

  void add_to_nchw_step(int t) {
    const Value& v = values[t];
    const int src = v.nhwc, dst = v.plain;
    const Shape shape = v.shape;
    reads(src);
    writes(dst);
    steps.push_back({graph.tensors()[t].name, "layout", {{"to", "nchw"}}, [this, src, dst, shape] {
                       nhwc_to_nchw(ptr[src], ptr[dst], shape, threads);
                     }});
  }

  // The output slot of tensor t, in ONNX order or NHWC.
  int output(int t, bool in_nhwc) {
    Value& v = values[t];
    if (v.shape.empty()) {
      throw_bad_input("model: tensor '" + graph.tensors()[t].name + "' has no known shape (shape inference)");
    }
    int& slot = in_nhwc ? v.nhwc : v.plain;
    slot = new_slot(v.shape);
    v.nhwc_first = in_nhwc;
    writes(slot);
    return slot;
  }

  void build() {
    values.resize(graph.tensors().size());
    for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
      const auto& gt = graph.tensors()[t];
      values[t].shape = gt.shape;
      if (const auto* c = file->floats(gt.name)) values[t].constant = c->data();
    }
    add_inputs();
    find_erf_gelus();
    add_nodes();
    add_outputs();
  }

  bool available(int t) const {
    const Value& v = values[t];
    return v.constant || v.plain >= 0 || v.nhwc >= 0 || graph.tensors()[t].constant;
  }

  // Whether node i and the nodes fused into it have every input they read from outside.
  bool ready(int i) const {
    std::vector<int> group = fused_nodes(i);
    group.push_back(i);
    std::set<int> inside;
    for (int g : group) inside.insert(graph.nodes()[g].outputs.begin(), graph.nodes()[g].outputs.end());
    for (int g : group) {
      for (int t : graph.nodes()[g].inputs) {
        if (!inside.count(t) && !available(t)) return false;
      }
    }
    return true;
  }

  // Nodes in an order where each runs after its inputs: the file's, except that a kernel waits
  // for the residual its fused Add reads, which the file may list after it.
  void add_nodes() {
    const int count = int(graph.nodes().size());
    std::vector<char> done(std::size_t(count), 0);
    // Constant subgraphs first (they read only constants, in the file's order): a step fused
    // into a kernel's group may read one before the file lists its producer.
    for (int i = 0; i < count; ++i) {
      if (!constant_outputs(graph.nodes()[i])) continue;
      add_node(i);
      done[i] = 1;
    }
    for (bool progress = true; progress;) {
      progress = false;
      for (int i = 0; i < count; ++i) {
        if (done[i] || absorbed.count(i) || graph.nodes()[i].fused_into >= 0 || !ready(i)) continue;
        add_node(i);
        done[i] = 1;
        progress = true;
      }
    }
    for (int i = 0; i < count; ++i) {
      if (!done[i] && !absorbed.count(i) && graph.nodes()[i].fused_into < 0) {
        throw_bad_input("model: node '" + graph.nodes()[i].name + "' never has all its inputs (a cycle?)");
      }
    }
  }

  // The graph inputs a step reads, in the graph's order (ONNX Runtime's; an input only shape
  // computations read, folded at load, is none).
  void add_inputs() {
    std::vector<int> read;
    for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
      const auto& gt = graph.tensors()[t];
      if (gt.producer < 0 && !values[t].constant && !gt.consumers.empty()) read.push_back(int(t));
    }
    std::stable_sort(read.begin(), read.end(), [&](int a, int b) {
      return file->input_position(graph.tensors()[a].name) < file->input_position(graph.tensors()[b].name);
    });
    for (int t : read) {
      const auto& gt = graph.tensors()[t];
      std::string type = file->input_type(gt.name);
      if (type.empty()) type = "float";
      if (type != "float" && type != "int64" && type != "int32" && type != "bool") {
        throw_bad_input("model: input '" + gt.name + "' is " + type +
                        "; the engine takes float, int64, int32 and bool inputs");
      }
      if (gt.shape.empty()) throw_bad_input("model: input '" + gt.name + "' has no known shape");
      values[t].plain = new_slot(gt.shape);
      slots[values[t].plain].first = -1;  // written before the first step
      input_tensors.push_back(t);
      inputs.push_back({gt.name, gt.shape, type});
    }
  }

  void add_outputs() {
    for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
      if (!graph.tensors()[t].output) continue;
      const Ref r = plain(int(t), "the graph's outputs");
      if (r.slot >= 0) slots[r.slot].last = std::numeric_limits<int>::max();  // read after the last step
      output_tensors.push_back(int(t));
      outputs.push_back({graph.tensors()[t].name, values[t].shape});
    }
  }

  void add_node(int i) {
    const frontend::GraphNode& n = graph.nodes()[i];
    if (n.fused_into >= 0) return;  // its kernel node runs it, or adds it as a plain step
    if (absorbed.count(i)) return;  // a step before it computes it (sole_relu_reader)
    if (n.outputs.empty()) return;
    const onnx::NodeProto* proto = file->node(n.name);
    if (constant_outputs(n)) {  // a constant subgraph: its values are the file's, or computed now
      if (proto && computable_now(n)) fold_constant_node(n, *proto);
      return;
    }
    if (!proto) throw_bad_input("model: the plan's node '" + n.name + "' is not in the ONNX file");
    if (n.op == "Reshape" && add_channel_shuffle(n)) return;
    if (view_ops().count(n.op)) return add_view(n);
    if (n.op == "Cast") return add_cast(n, *proto);
    if (n.kernel && add_kernel(i, *proto)) return;
    add_plain(n, *proto);
    for (int f : fused_nodes(i)) {  // in its order
      if (!absorbed.count(f)) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    }
  }

  bool constant_outputs(const frontend::GraphNode& n) const {
    if (n.outputs.empty()) return false;
    for (int o : n.outputs) {
      if (!graph.tensors()[o].constant) return false;
    }
    return true;
  }

  // Whether n's outputs are missing from the file while all its inputs are known constants.
  bool computable_now(const frontend::GraphNode& n) const {
    bool missing = false;
    for (int o : n.outputs) missing = missing || !values[o].constant;
    for (int t : n.inputs) {
      if (!values[t].constant) return false;
    }
    return missing;
  }

  // A node of constants only whose values the file does not hold (a Slice of a position-id
  // buffer, arithmetic on weights): built as its step would be, run once now over buffers of
  // its own, and its outputs kept as constants; the step leaves the model.
  void fold_constant_node(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const std::size_t first_step = steps.size(), first_slot = slots.size();
    if (view_ops().count(n.op))
      add_view(n);
    else if (n.op == "Cast")
      add_cast(n, p);
    else
      add_plain(n, p);
    ptr.resize(slots.size(), nullptr);
    for (std::size_t slot = first_slot; slot < slots.size(); ++slot) {
      owned.push_back(std::make_unique<std::vector<float>>(std::size_t(slots[slot].bytes) / sizeof(float)));
      ptr[slot] = owned.back()->data();
    }
    for (std::size_t i = first_step; i < steps.size(); ++i) steps[i].run();
    for (int o : n.outputs) {
      Value& v = values[o];
      if (v.plain >= 0) v.constant = ptr[v.plain];
      v.plain = -1;
    }
    steps.resize(first_step);
    for (std::size_t slot = first_slot; slot < slots.size(); ++slot) slots[slot] = Slot{};
  }

  void add_view(const frontend::GraphNode& n) {
    const int in = n.inputs.at(0), out = n.outputs.at(0);
    Value& v = values[out];
    if (values[in].constant) {
      v.constant = values[in].constant;
      return;
    }
    if (elements(v.shape) != elements(values[in].shape)) {
      throw_bad_input("model: node '" + n.name + "' changes the element count (" +
                      std::to_string(elements(values[in].shape)) + " -> " + std::to_string(elements(v.shape)) + ")");
    }
    v.plain = plain(in, n.name).slot;  // the same bytes, read under another shape
    slots[v.plain].last = std::max(slots[v.plain].last, int(steps.size()));
  }

  // Casts between the types the engine holds as floats (float, double, int64, int32, bool):
  // one that keeps the values (to float; integer or bool to integer; bool to bool) is a view;
  // float to an integer truncates toward zero and anything to bool tests against zero, as ONNX
  // Runtime does. Other types are refused naming both.
  void add_cast(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    using TP = onnx::TensorProto;
    const std::int64_t to = int_attr(p, "to", 0);
    std::string from = graph.tensors()[n.inputs.at(0)].dtype;
    if (from.empty()) from = "float";
    const bool from_float = from == "float" || from == "double";
    const bool from_int = from == "int64" || from == "int32";
    const bool to_float = to == TP::FLOAT || to == TP::DOUBLE, to_int = to == TP::INT64 || to == TP::INT32;
    if ((!from_float && !from_int && from != "bool") || (!to_float && !to_int && to != TP::BOOL)) {
      unsupported(n, "a cast to " + TP::DataType_Name(static_cast<TP::DataType>(to)) + " from '" + from +
                         "' (float, double, int64, int32 and bool only)");
    }
    if (to_float || (to_int && !from_float) || (to == TP::BOOL && from == "bool")) return add_view(n);
    add_unary_op(n, to_int ? "Trunc" : "NotZero", 0, 0);
  }

  // --- kernel steps -----------------------------------------------------------------------

  struct Chain {
    std::vector<std::string> epilogue;
    int out = -1;           // the tensor the kernel writes: the last fused node's output
    int residual = -1;      // the tensor "add" reads
    std::vector<int> rest;  // fused nodes run as plain steps after the kernel
  };

  // The fused nodes of kernel node i, in chain order.
  std::vector<int> fused_nodes(int i) const {
    std::vector<int> f;
    for (int j = i + 1; j < int(graph.nodes().size()); ++j) {
      if (graph.nodes()[j].fused_into == i) f.push_back(j);
    }
    return f;
  }

  static bool has(const std::vector<std::string>& v, const char* e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  }

  // The constant c as one value per output channel (k of them), or nullopt.
  std::optional<std::vector<float>> per_channel(const std::string& tensor, std::int64_t k) const {
    const auto* c = file->floats(tensor);
    if (!c) return std::nullopt;
    if (c->size() == 1) return std::vector<float>(std::size_t(k), (*c)[0]);
    if (std::int64_t(c->size()) == k) return *c;
    return std::nullopt;
  }

  static int other_input(const frontend::GraphNode& n, int t) {
    if (n.inputs.size() != 2) return -1;
    return n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
  }

  // Grows the epilogue of a kernel writing tensor `out` with k output channels (or columns)
  // through its fused nodes while the host kernel computes each exactly; folds BN and
  // constant scales into weights (fold: scale per channel of weights and bias) when allowed.
  Chain chain_of(int i, std::int64_t k, std::vector<float>& bias, bool has_bias, bool conv,
                 const std::function<void(const std::vector<float>&)>& scale_weights) {
    Chain c;
    if (has_bias) c.epilogue.push_back("bias");
    c.out = graph.nodes()[i].outputs[0];
    const std::vector<int> fused = fused_nodes(i);
    std::size_t f = 0;
    for (; f < fused.size(); ++f) {
      const frontend::GraphNode& n = graph.nodes()[fused[f]];
      const onnx::NodeProto& p = *file->node(n.name);
      if (n.fused_by == "fold-into-weights") {
        if (!conv || !fold(n, p, c, k, bias, scale_weights)) break;
      } else if (n.fused_by == "silu") {
        if (f + 1 >= fused.size() || has(c.epilogue, "silu")) break;
        c.epilogue.push_back("silu");
        c.out = graph.nodes()[fused[++f]].outputs[0];
        continue;
      } else if (!add_step(n, p, c, k, bias)) {
        break;
      }
      c.out = n.outputs[0];
    }
    for (; f < fused.size(); ++f) c.rest.push_back(fused[f]);
    return c;
  }

  bool fold(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k, std::vector<float>& bias,
            const std::function<void(const std::vector<float>&)>& scale_weights) {
    std::vector<float> scale(std::size_t(k), 1.0f), shift(std::size_t(k), 0.0f);
    if (n.op == "BatchNormalization") {
      const auto g = per_channel(p.input(1), k), b = per_channel(p.input(2), k);
      const auto m = per_channel(p.input(3), k), v = per_channel(p.input(4), k);
      if (!g || !b || !m || !v) return false;
      const double eps = float_attr(p, "epsilon", 1e-5f);
      for (std::int64_t o = 0; o < k; ++o) {
        scale[o] = float((*g)[o] / std::sqrt(double((*v)[o]) + eps));
        shift[o] = float((*b)[o] - double((*m)[o]) * scale[o]);
      }
    } else {  // Mul by a constant, or Div of the chain by one
      const int t = n.inputs[0] == c.out ? n.inputs[1] : n.inputs[0];
      const auto s = per_channel(graph.tensors()[t].name, k);
      if (!s) return false;
      for (std::int64_t o = 0; o < k; ++o) scale[o] = n.op == "Div" ? 1.0f / (*s)[o] : (*s)[o];
    }
    scale_weights(scale);
    for (std::int64_t o = 0; o < k; ++o) bias[o] = bias[o] * scale[o] + shift[o];
    if (!has(c.epilogue, "bias")) c.epilogue.insert(c.epilogue.begin(), "bias");
    return true;
  }

  bool add_step(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k,
                std::vector<float>& bias) {
    if (n.step == "add") {
      const int other = other_input(n, c.out);
      if (other < 0) return false;
      if (values[other].constant) {  // a constant added: the bias, before anything else runs
        const auto b = per_channel(graph.tensors()[other].name, k);
        if (!b || c.epilogue.size() > (has(c.epilogue, "bias") ? 1u : 0u)) return false;
        for (std::int64_t o = 0; o < k; ++o) bias[o] += (*b)[o];
        if (!has(c.epilogue, "bias")) c.epilogue.push_back("bias");
        return true;
      }
      if (has(c.epilogue, "add") || values[other].shape != values[n.outputs[0]].shape) return false;
      c.epilogue.push_back("add");
      c.residual = other;
      return true;
    }
    const std::string step = exact_step(p, *file);
    if (step.empty() || has(c.epilogue, step.c_str())) return false;
    c.epilogue.push_back(step);
    return true;
  }

  Workload kernel_workload(const Workload& w, const std::vector<std::string>& epilogue) const {
    Json j = w.to_json();
    j["epilogue"] = epilogue;
    j["dtype"] = "float32";
    return Workload::from_json(j);
  }

  // Compiles w's kernel now (or takes it from the compile cache) and counts where its schedule
  // comes from.
  void prepare_kernel(const Workload& w, Json& info) {
    const runtime::Choice& choice = rt->choose(w);
    rt->kernel(w);
    ++kernels;
    kernels_from_plan += choice.kind == runtime::ChoiceKind::exact ? 1 : 0;
    info["workload"] = w.to_json();
    info["schedule"] = choice.schedule.to_json();
    info["choice"] = std::string(runtime::to_string(choice.kind));
  }

  bool add_kernel(int i, const onnx::NodeProto& p) {
    const frontend::GraphNode& n = graph.nodes()[i];
    if (n.op == "ConvTranspose") return add_conv_transpose_kernel(i, p);
    const std::string& op = n.kernel->op();
    if (n.op == "Conv" && op == "matmul") {  // the importer's im2col task (add_conv_as_matmuls)
      add_plain_conv(n, p);
      return true;
    }
    if (op == "conv2d" || op == "depthwise_conv2d") return add_conv(i, p);
    if (op == "matmul" || op == "batch_matmul") return add_matmul(i, p);
    return false;
  }

  bool add_conv(int i, const onnx::NodeProto& p) {
    const frontend::GraphNode& n = graph.nodes()[i];
    const Workload& w0 = *n.kernel;
    const bool depthwise = w0.op() == "depthwise_conv2d";
    const auto* weights = file->floats(p.input(1));
    if (!weights) return false;
    const std::int64_t c = w0.dim("C"), r = w0.dim("R"), s = w0.dim("S");
    const std::int64_t k = depthwise ? c : w0.dim("K"), cin = depthwise ? 1 : c;
    std::vector<float> oihw = *weights, bias(std::size_t(k), 0.0f);
    const bool has_bias = p.input_size() > 2 && !p.input(2).empty();
    if (has_bias) {
      const auto* b = file->floats(p.input(2));
      if (!b || std::int64_t(b->size()) != k) return false;
      bias = *b;
    }
    const std::int64_t per_out = cin * r * s;
    Chain ch = chain_of(i, k, bias, has_bias, true, [&](const std::vector<float>& sc) {
      for (std::int64_t o = 0; o < k; ++o) {
        for (std::int64_t e = 0; e < per_out; ++e) oihw[o * per_out + e] *= sc[o];
      }
    });
    const Workload w = kernel_workload(w0, ch.epilogue);
    if (!host::supports(w)) return false;
    // OIHW -> HWIO (conv2d: R x S x C x K) or R x S x C (depthwise).
    std::vector<float> hwio(oihw.size());
    for (std::int64_t o = 0; o < k; ++o) {
      for (std::int64_t ci = 0; ci < cin; ++ci) {
        for (std::int64_t u = 0; u < r * s; ++u) {
          const float v = oihw[(o * cin + ci) * r * s + u];
          if (depthwise) {
            hwio[u * c + o] = v;
          } else {
            hwio[(u * c + ci) * k + o] = v;
          }
        }
      }
    }
    const float* filter = owned_data(std::move(hwio));
    const float* bias_data = has(ch.epilogue, "bias") ? owned_data(std::move(bias)) : nullptr;
    const int in = nhwc(n.inputs[0], n.name);
    const int res = ch.residual >= 0 ? nhwc(ch.residual, n.name) : -1;
    const int out = output(ch.out, true);
    Step step{n.name, "kernel", Json::object(), nullptr};
    prepare_kernel(w, step.info);
    const std::size_t packed_at = packed.size();
    if (!depthwise) packed.push_back(rt->prepare_weights(w, filter));
    step.run = [this, w, filter, bias_data, in, res, out, depthwise, packed_at] {
      host::AtvossArgs args{};
      args.a = ptr[in];
      args.b = filter;
      args.c = ptr[out];
      args.bias = bias_data;
      args.residual = res >= 0 ? ptr[res] : nullptr;
      if (!depthwise) runtime::Runtime::use_prepared(w, packed[packed_at], args);
      rt->run(w, args);
    };
    steps.push_back(std::move(step));
    for (int f : ch.rest) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    return true;
  }

  // A ConvTranspose of one group with constant weights, as the importer's task says: its
  // matmul ([N x H x W, C] NHWC input x the weights as [C, kh x kw x K]) into a buffer of
  // windows, then their scatter-add with the bias into the NHWC output (col2im_nhwc). The
  // plain NCHW loop it replaces took 373 ms of a U-Net's 448.
  bool add_conv_transpose_kernel(int i, const onnx::NodeProto& p) {
    const frontend::GraphNode& n = graph.nodes()[i];
    const Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs.at(1)].shape, ys = values[n.outputs[0]].shape;
    const auto* weights = file->floats(p.input(1));
    if (!weights || xs.size() != 4 || ws.size() != 4 || ys.size() != 4 || int_attr(p, "group", 1) != 1) return false;
    const ConvAttrs a = conv_transpose_attrs(n, p, xs, ws, ys);
    const std::int64_t c = ws[0], k = ws[1], kh = ws[2], kw = ws[3];
    std::vector<float> b(weights->size());  // [c][u][v][k] from ONNX's [c][k][u][v]
    transpose(weights->data(), {c, k, kh * kw}, {0, 2, 1}, b.data());
    const float* b_data = owned_data(std::move(b));
    const float* bias = constant_of(n, p, 2, k);
    const Workload w = kernel_workload(*n.kernel, {});
    const int in = nhwc(n.inputs[0], n.name);
    const int windows = new_slot({w.dim("M"), w.dim("N")});
    writes(windows);
    push_matmul_kernel(n.name, w, in, b_data, nullptr, windows);
    reads(windows);
    const int y = output(n.outputs[0], true);
    push(
        n, [=, this] { col2im_nhwc(ptr[windows], xs, kh, kw, a, bias, ptr[y], ys, threads); },
        Json{{"as", "scatter-add of the windows"}});
    return true;
  }

  // A kernel step of matmul w: A in slot a, the constant B (packed once, where w's kernel packs
  // it), the bias (or null), C into slot c.
  void push_matmul_kernel(const std::string& name, const Workload& w, int a, const float* b, const float* bias, int c) {
    Step step{name, "kernel", Json::object(), nullptr};
    prepare_kernel(w, step.info);
    const long packed_at = prepare_constant_b(w, b);
    step.run = [this, w, a, b, bias, c, packed_at] {
      host::AtvossArgs args{};
      args.a = ptr[a];
      args.b = b;
      args.c = ptr[c];
      args.bias = bias;
      if (packed_at >= 0) runtime::Runtime::use_prepared(w, packed[std::size_t(packed_at)], args);
      rt->run(w, args);
    };
    steps.push_back(std::move(step));
  }

  // A constant B packed once by w's kernel, as the conv filters are: the index of its packing,
  // or -1 where the kernel reads B in place (nothing to pack; the copy prepare_weights makes
  // for that case is dropped, B itself stays constant).
  long prepare_constant_b(const Workload& w, const float* b) {
    runtime::PreparedWeights prepared = rt->prepare_weights(w, b);
    if (!prepared.packed()) return -1;
    packed.push_back(std::move(prepared));
    return long(packed.size()) - 1;
  }

  bool add_matmul(int i, const onnx::NodeProto& p) {
    const frontend::GraphNode& n = graph.nodes()[i];
    const Workload& w0 = *n.kernel;
    const bool gemm = n.op == "Gemm";
    const std::int64_t k = w0.dim("K"), cols = w0.dim("N");
    if (gemm && int_attr(p, "transA", 0) != 0) return false;
    const int b_tensor = n.inputs.at(1);
    const float* b_data = nullptr;
    std::vector<float> bias(std::size_t(cols), 0.0f);
    bool has_bias = false;
    if (gemm) {
      const auto* b = file->floats(graph.tensors()[b_tensor].name);
      if (!b) return false;
      const float alpha = float_attr(p, "alpha", 1.0f), beta = float_attr(p, "beta", 1.0f);
      std::vector<float> kn(std::size_t(k * cols));
      const bool tb = int_attr(p, "transB", 0) != 0;
      for (std::int64_t a = 0; a < k; ++a) {
        for (std::int64_t j = 0; j < cols; ++j) kn[a * cols + j] = alpha * (tb ? (*b)[j * k + a] : (*b)[a * cols + j]);
      }
      b_data = owned_data(std::move(kn));
      if (p.input_size() > 2 && !p.input(2).empty()) {
        const auto c = per_channel(p.input(2), cols);
        if (!c) return false;
        for (std::int64_t j = 0; j < cols; ++j) bias[j] = beta * (*c)[j];
        has_bias = true;
      }
    }
    Chain ch = chain_of(i, cols, bias, has_bias, false, nullptr);
    const Workload w = kernel_workload(w0, ch.epilogue);
    if (!host::supports(w)) return false;
    const Ref a = plain(n.inputs[0], n.name);
    const Ref b = b_data ? Ref{-1, b_data} : plain(b_tensor, n.name);
    const int res = ch.residual >= 0 ? plain(ch.residual, n.name).slot : -1;
    const float* bias_data = has(ch.epilogue, "bias") ? owned_data(std::move(bias)) : nullptr;
    const int out = output(ch.out, false);
    Step step{n.name, "kernel", Json::object(), nullptr};
    prepare_kernel(w, step.info);
    const long packed_at = b.constant ? prepare_constant_b(w, b.constant) : -1;
    step.run = [this, w, a, b, bias_data, res, out, packed_at] {
      host::AtvossArgs args{};
      args.a = at(a);
      args.b = at(b);
      args.c = ptr[out];
      args.bias = bias_data;
      args.residual = res >= 0 ? ptr[res] : nullptr;
      if (packed_at >= 0) runtime::Runtime::use_prepared(w, packed[std::size_t(packed_at)], args);
      rt->run(w, args);
    };
    steps.push_back(std::move(step));
    for (int f : ch.rest) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    return true;
  }

  // --- plain steps ------------------------------------------------------------------------

  [[noreturn]] void unsupported(const frontend::GraphNode& n, const std::string& why) const {
    throw_bad_input("model: node '" + n.name + "' (" + n.op + "): " + why);
  }

  std::int64_t axis_of(const frontend::GraphNode& n, std::int64_t axis, std::size_t rank) const {
    const std::int64_t a = axis < 0 ? axis + std::int64_t(rank) : axis;
    if (a < 0 || a >= std::int64_t(rank)) unsupported(n, "axis " + std::to_string(axis) + " out of range");
    return a;
  }

  void push(const frontend::GraphNode& n, std::function<void()> run, Json info = Json::object()) {
    info["op"] = n.op;
    steps.push_back({n.name, "plain", std::move(info), std::move(run)});
  }

  float scalar_input(const onnx::NodeProto& p, int index, float fallback) const {
    if (p.input_size() <= index || p.input(index).empty()) return fallback;
    const auto* v = file->floats(p.input(index));
    if (!v || v->size() != 1) throw_bad_input("model: node input '" + p.input(index) + "' must be a constant scalar");
    return (*v)[0];
  }

  void add_plain(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const std::string& op = n.op;
    const int index = int(&n - graph.nodes().data());
    if (absorbed.count(index) || add_erf_gelu(index)) return;
    if (n.inputs.empty()) unsupported(n, "no input");
    if (op == "Clip" || op == "LeakyRelu" || op == "Elu" || op == "HardSigmoid" || op == "Gelu" ||
        unary(op, nullptr, nullptr, 0)) {
      return add_unary(n, p);
    }
    if (op == "Sum" && n.inputs.size() == 2) return add_binary(n, "Add");
    if (op == "Div" && is_integer(n.outputs[0])) return add_binary(n, "IntDiv");
    if (binary_op(op)) return add_binary(n, op);
    if (op == "Where") return add_where(n);
    if (op == "Expand") return add_expand(n);
    if (op == "MaxPool" || op == "AveragePool") return add_pool(n, p);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return add_global_pool(n);
    if (op == "Concat") return add_concat(n, p);
    if (op == "Transpose") return add_transpose(n, p);
    if (op == "Softmax" || op == "LogSoftmax") return add_softmax(n, p);
    if (op == "LayerNormalization") return add_layer_norm(n, p);
    if (op == "BatchNormalization") return add_batch_norm(n, p);
    if (op == "LRN") return add_lrn(n, p);
    if (op == "Gather") return add_gather(n, p);
    if (op == "Slice") return add_slice(n, p);
    if (op == "Split") return add_split(n, p);
    if (op == "Pad") return add_pad(n, p);
    if (op.rfind("Reduce", 0) == 0) return add_reduce(n, p);
    if (op == "Conv") return add_plain_conv(n, p);
    if (op == "ConvTranspose") return add_conv_transpose(n, p);
    if (op == "Tile") return add_tile(n);
    if (op == "ConstantOfShape") return add_constant_of_shape(n, p);
    if (op == "DepthToSpace" || op == "SpaceToDepth") return add_depth_space(n, p);
    if (op == "ArgMax" || op == "ArgMin") return add_arg_reduce(n, p);
    if (op == "Range") return add_range(n, p);
    if (op == "InstanceNormalization") return add_instance_norm(n, p);
    if (op == "Resize" || op == "Upsample") return add_resize(n, p);
    if (op == "Gemm" || op == "MatMul") return add_plain_gemm(n, p);
    unsupported(n, "the engine has no step for this op");
  }

  void add_unary(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    std::string op = n.op;
    float alpha = 0, beta = 0;
    if (op == "LeakyRelu") alpha = float_attr(p, "alpha", 0.01f);
    if (op == "Elu") alpha = float_attr(p, "alpha", 1.0f);
    if (op == "HardSigmoid") alpha = float_attr(p, "alpha", 0.2f), beta = float_attr(p, "beta", 0.5f);
    if (op == "Gelu" && string_attr(p, "approximate", "none") == "tanh") op = "GeluTanh";
    if (op == "Clip") {
      alpha = scalar_input(p, 1, float_attr(p, "min", -INFINITY));
      beta = scalar_input(p, 2, float_attr(p, "max", INFINITY));
    }
    add_unary_op(n, op, alpha, beta);
  }

  // Elementwise ops run in whichever order holds their input: a conv's NHWC output stays NHWC
  // through a Clip (ReLU6), an activation or a residual Add, with no layout step either side
  // (MobileNetV2 spent 40 % of its run transposing around its ReLU6s).
  bool held_nhwc(int t) const { return values[t].nhwc_first && values[t].shape.size() == 4; }

  void add_unary_op(const frontend::GraphNode& n, const std::string& op, float alpha, float beta) {
    add_unary_op(n, n.inputs[0], n.outputs[0], op, alpha, beta);
  }
  void add_unary_op(const frontend::GraphNode& n, int xt, int yt, const std::string& op, float alpha, float beta) {
    const bool in_nhwc = held_nhwc(xt);
    const Ref x = in_order(xt, in_nhwc, n.name);
    const int y = output(yt, in_nhwc);
    const std::int64_t count = elements(values[yt].shape);
    push(n, [this, op, x, y, count, alpha, beta] { unary(op, at(x), ptr[y], count, alpha, beta, threads); });
  }

  // --- the erf GELU as exporters write it ----------------------------------------------------

  // Whether tensor t is a constant scalar within 1e-6 of v.
  bool scalar_is(int t, double v) const {
    const auto* c = file->floats(graph.tensors()[t].name);
    return c && c->size() == 1 && std::abs((*c)[0] - v) <= 1e-6 * std::abs(v);
  }
  // Whether node i is op(t, v) or op(v, t) (op commutative), v a constant scalar within 1e-6.
  bool takes_scalar(int i, const std::string& op, int t, double v) const {
    const frontend::GraphNode& n = graph.nodes()[i];
    if (n.op != op || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    return (n.inputs[0] == t && scalar_is(n.inputs[1], v)) || (n.inputs[1] == t && scalar_is(n.inputs[0], v));
  }

  // x where node d computes x / sqrt 2 (Div by sqrt 2, or Mul by 1 / sqrt 2 either way round), else -1.
  int over_root_two(int d) const {
    const frontend::GraphNode& n = graph.nodes()[d];
    if (n.inputs.size() != 2 || n.outputs.size() != 1) return -1;
    if (n.op == "Div") return scalar_is(n.inputs[1], std::sqrt(2.0)) ? n.inputs[0] : -1;
    if (n.op != "Mul") return -1;
    if (scalar_is(n.inputs[1], std::sqrt(0.5))) return n.inputs[0];
    return scalar_is(n.inputs[0], std::sqrt(0.5)) ? n.inputs[1] : -1;
  }

  // The erf GELU whose Erf node is e: x / sqrt 2 (over_root_two) into Erf, plus 1, then times x
  // and times 0.5 in either order. Each inner tensor has its one reader.
  std::optional<ErfGelu> erf_gelu_at(int e) const {
    const frontend::GraphNode& erf = graph.nodes()[e];
    if (erf.inputs.size() != 1 || erf.outputs.size() != 1) return std::nullopt;
    const int d = graph.tensors()[erf.inputs[0]].producer;
    if (d < 0 || graph.tensors()[erf.inputs[0]].consumers.size() != 1) return std::nullopt;
    const int xt = over_root_two(d);
    const int a = sole_reader(erf.outputs[0], "Add");
    if (xt < 0 || a < 0 || !takes_scalar(a, "Add", erf.outputs[0], 1.0)) return std::nullopt;
    const int m = sole_reader(graph.nodes()[a].outputs[0], "Mul");
    if (m < 0) return std::nullopt;
    const frontend::GraphNode& mul = graph.nodes()[m];
    const int other = other_input(mul, graph.nodes()[a].outputs[0]);
    if (other == xt) {  // (x * (1 + erf)) * 0.5
      const int half = sole_reader(mul.outputs[0], "Mul");
      if (half < 0 || !takes_scalar(half, "Mul", mul.outputs[0], 0.5)) return std::nullopt;
      return ErfGelu{xt, graph.nodes()[half].outputs[0], {d, e, a, m, half}};
    }
    const int h = other >= 0 ? graph.tensors()[other].producer : -1;  // (x * 0.5) * (1 + erf)
    if (h < 0 || graph.tensors()[other].consumers.size() != 1 || !takes_scalar(h, "Mul", xt, 0.5)) return std::nullopt;
    return ErfGelu{xt, mul.outputs[0], {h, d, e, a, m}};
  }

  // Every erf GELU of the graph, by its nodes (found before any step is added).
  void find_erf_gelus() {
    for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
      if (graph.nodes()[i].op != "Erf") continue;
      if (const auto g = erf_gelu_at(int(i))) {
        for (int node : g->nodes) erf_gelu_of[node] = erf_gelus.size();
        erf_gelus.push_back(*g);
      }
    }
  }

  // At the first of an erf GELU's nodes the steps reach: one step for all five (the fused
  // node "Gelu" ONNX Runtime runs; five passes over the tensor where there was one), and the
  // other four absorbed.
  bool add_erf_gelu(int i) {
    const auto at = erf_gelu_of.find(i);
    if (at == erf_gelu_of.end()) return false;
    const ErfGelu& g = erf_gelus[at->second];
    for (int node : g.nodes) absorbed.insert(node);
    add_unary_op(graph.nodes()[i], g.x, g.out, "Gelu", 0, 0);
    steps.back().info["as"] = "erf gelu";
    return true;
  }

  // The shape input t reads as in NHWC order for an NHWC output of shape so, or nullopt when it
  // cannot be read so: a tensor held in NHWC of the output's shape, one whose H and W are 1 (the
  // same bytes in either order: a squeeze-excitation's scale), or a scalar.
  std::optional<Shape> nhwc_operand(int t, const Shape& so) const {
    const Shape& s = values[t].shape;
    const Shape so_nhwc = {so[0], so[2], so[3], so[1]};
    if (held_nhwc(t) && s == so) return so_nhwc;
    if (s.size() == 4 && s[2] == 1 && s[3] == 1) return Shape{s[0], 1, 1, s[1]};
    if (elements(s) == 1) return s;
    return std::nullopt;
  }

  bool is_integer(int t) const {
    const std::string& d = graph.tensors()[t].dtype;
    return d == "int64" || d == "int32";
  }

  void add_where(const frontend::GraphNode& n) {
    if (n.inputs.size() != 3) unsupported(n, "three inputs expected");
    std::array<Ref, 3> in;
    std::array<Shape, 3> shapes;
    for (int k = 0; k < 3; ++k) in[k] = plain(n.inputs[k], n.name), shapes[k] = values[n.inputs[k]].shape;
    const Shape so = values[n.outputs[0]].shape;
    const int y = output(n.outputs[0], false);
    push(n, [this, in, shapes, so, y] {
      where(at(in[0]), shapes[0], at(in[1]), shapes[1], at(in[2]), shapes[2], ptr[y], so);
    });
  }

  // Expand(x, shape): x broadcast to the output's shape (known once the shape is folded).
  void add_expand(const frontend::GraphNode& n) {
    const Shape xs = values[n.inputs[0]].shape, so = values[n.outputs[0]].shape;
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [this, x, xs, so, y] { where(nullptr, {}, at(x), xs, at(x), xs, ptr[y], so); });
  }

  void add_binary(const frontend::GraphNode& n, const std::string& op) {
    if (n.inputs.size() != 2) unsupported(n, "two inputs expected");
    const float* exponent = op == "Pow" ? values[n.inputs[1]].constant : nullptr;
    if (exponent && elements(values[n.inputs[1]].shape) == 1 && *exponent == 2.0f) {
      return add_unary_op(n, "Square", 0, 0);
    }
    Shape sa = values[n.inputs[0]].shape, sb = values[n.inputs[1]].shape, so = values[n.outputs[0]].shape;
    const int ta = n.inputs[0], tb = n.inputs[1];
    if (so.size() == 4 && (held_nhwc(ta) || held_nhwc(tb))) {
      const auto na = nhwc_operand(ta, so), nb = nhwc_operand(tb, so);
      if (na && nb) {
        const Ref a = in_order(ta, held_nhwc(ta), n.name);
        const Ref b = in_order(tb, held_nhwc(tb), n.name);
        const int y = output(n.outputs[0], true);
        const Shape sy = {so[0], so[2], so[3], so[1]}, ha = *na, hb = *nb;
        push(n, [this, op, a, b, y, ha, hb, sy] { binary(op, at(a), ha, at(b), hb, ptr[y], sy, threads); });
        return;
      }
    }
    const Ref a = plain(ta, n.name), b = plain(tb, n.name);
    const int y = output(n.outputs[0], false);
    push(n, [this, op, a, b, y, sa, sb, so] { binary(op, at(a), sa, at(b), sb, ptr[y], so, threads); });
  }

  void add_pool(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
    if (xs.size() != 4 || ys.size() != 4) unsupported(n, "2-D pools only");
    const auto kernel = ints_attr(p, "kernel_shape");
    if (kernel.size() != 2) unsupported(n, "kernel_shape must have 2 dims");
    Window w;
    w.kh = kernel[0];
    w.kw = kernel[1];
    const auto strides = ints_attr(p, "strides"), dil = ints_attr(p, "dilations"), pads = ints_attr(p, "pads");
    if (strides.size() == 2) w.sh = strides[0], w.sw = strides[1];
    if (dil.size() == 2) w.dh = dil[0], w.dw = dil[1];
    if (pads.size() == 4) w.pad_top = pads[0], w.pad_left = pads[1], w.pad_bottom = pads[2], w.pad_right = pads[3];
    const std::string auto_pad = string_attr(p, "auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const std::int64_t ph = std::max<std::int64_t>(0, (ys[2] - 1) * w.sh + (w.kh - 1) * w.dh + 1 - xs[2]);
      const std::int64_t pw = std::max<std::int64_t>(0, (ys[3] - 1) * w.sw + (w.kw - 1) * w.dw + 1 - xs[3]);
      const bool lower = auto_pad == "SAME_LOWER";
      w.pad_top = lower ? (ph + 1) / 2 : ph / 2;
      w.pad_left = lower ? (pw + 1) / 2 : pw / 2;
      w.pad_bottom = ph - w.pad_top;
      w.pad_right = pw - w.pad_left;
    }
    w.count_include_pad = int_attr(p, "count_include_pad", 0) != 0;
    const bool max = n.op == "MaxPool";
    if (n.outputs.size() > 1 && !graph.tensors()[n.outputs[1]].consumers.empty()) unsupported(n, "Indices output");
    // Pools run in whichever order holds their input: a conv's NHWC output stays NHWC.
    if (values[n.inputs[0]].nhwc_first) {
      const int x = nhwc(n.inputs[0], n.name);
      const int y = output(n.outputs[0], true);
      push(n, [this, x, y, xs, ys, w, max] { pool(max, ptr[x], xs, ptr[y], ys, w, true, threads); });
      return;
    }
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [this, x, y, xs, ys, w, max] { pool(max, at(x), xs, ptr[y], ys, w, false, threads); });
  }

  void add_global_pool(const frontend::GraphNode& n) {
    const Shape xs = values[n.inputs[0]].shape;
    if (xs.size() < 3) unsupported(n, "input of rank >= 3 expected");
    const bool max = n.op == "GlobalMaxPool";
    const bool in_nhwc = values[n.inputs[0]].nhwc_first && xs.size() == 4;
    const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
    const int y = output(n.outputs[0], false);  // [N, C, 1, 1]: the same bytes in either order
    push(n, [this, x, y, xs, max, in_nhwc] { global_pool(max, at(x), xs, ptr[y], in_nhwc); });
  }

  void add_concat(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape ys = values[n.outputs[0]].shape;
    const std::int64_t axis = axis_of(n, int_attr(p, "axis", 0), ys.size());
    bool all_nhwc = ys.size() == 4 && axis == 1;
    for (int t : n.inputs) all_nhwc = all_nhwc && values[t].nhwc_first;
    std::vector<Ref> in;
    std::vector<Shape> shapes;
    for (int t : n.inputs) {
      in.push_back(in_order(t, all_nhwc, n.name));
      shapes.push_back(values[t].shape);
    }
    const int y = output(n.outputs[0], all_nhwc);
    push(n, [this, in, shapes, axis, y, all_nhwc] {
      std::vector<const float*> data;
      for (const auto& r : in) data.push_back(at(r));
      concat(data, shapes, axis, ptr[y], all_nhwc, threads);
    });
  }

  void add_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    std::vector<std::int64_t> perm = ints_attr(p, "perm");
    if (perm.empty()) {
      for (std::size_t d = xs.size(); d-- > 0;) perm.push_back(std::int64_t(d));
    }
    if (perm.size() != xs.size()) unsupported(n, "perm does not match the input's rank");
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [this, x, xs, perm, y] { transpose(at(x), xs, perm, ptr[y], threads); });
  }

  void add_softmax(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    Shape xs = values[n.inputs[0]].shape;
    const bool old = file->opset() < 13;  // before opset 13: over every dim from axis on
    std::int64_t axis = axis_of(n, int_attr(p, "axis", old ? 1 : -1), xs.size());
    if (old) {
      xs = {elements(Shape(xs.begin(), xs.begin() + axis)), elements(Shape(xs.begin() + axis, xs.end()))};
      axis = 1;
    }
    const bool log = n.op == "LogSoftmax";
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [this, x, xs, axis, y, log] { softmax(at(x), xs, axis, ptr[y], log, threads); });
  }

  const float* constant_of(const frontend::GraphNode& n, const onnx::NodeProto& p, int index, std::int64_t count) {
    if (p.input_size() <= index || p.input(index).empty()) return nullptr;
    const auto* v = file->floats(p.input(index));
    if (!v || std::int64_t(v->size()) != count) {
      unsupported(n, "input '" + p.input(index) + "' must be a constant of " + std::to_string(count) + " values");
    }
    return v->data();
  }

  void add_layer_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const std::int64_t axis = axis_of(n, int_attr(p, "axis", -1), xs.size());
    const std::int64_t len = elements(Shape(xs.begin() + axis, xs.end()));
    const float* gamma = constant_of(n, p, 1, len);
    const float* beta = constant_of(n, p, 2, len);
    const float eps = float_attr(p, "epsilon", 1e-5f);
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n,
         [this, x, xs, axis, eps, gamma, beta, y] { layer_norm(at(x), xs, axis, eps, gamma, beta, ptr[y], threads); });
  }

  void add_batch_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    if (xs.size() < 2) unsupported(n, "input of rank >= 2 expected");
    const std::int64_t c = xs[1];
    const float *scale = constant_of(n, p, 1, c), *bias = constant_of(n, p, 2, c);
    const float *mean = constant_of(n, p, 3, c), *var = constant_of(n, p, 4, c);
    const float eps = float_attr(p, "epsilon", 1e-5f);
    const bool in_nhwc = held_nhwc(n.inputs[0]);  // DenseNet's BN after a concat of convs
    const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
    // A Relu that alone reads the result runs in the same pass, writing its own output (one
    // pass over each of DenseNet's concats where there were two); its node adds no step.
    const int relu = sole_relu_reader(n.outputs[0]);
    if (relu >= 0) absorbed.insert(relu);
    const int y = output(relu >= 0 ? graph.nodes()[relu].outputs[0] : n.outputs[0], in_nhwc);
    push(n, [=, this] { batch_norm(at(x), xs, scale, bias, mean, var, eps, ptr[y], in_nhwc, threads, relu >= 0); });
  }

  // The Relu node that is tensor t's one reader (t not a graph output), or -1.
  int sole_relu_reader(int t) const {
    const int c = sole_reader(t, "Relu");
    return c >= 0 && graph.nodes()[c].inputs.size() == 1 ? c : -1;
  }

  // The node of type op, of one output, that is tensor t's one reader (t not a graph output),
  // or -1.
  int sole_reader(int t, const std::string& op) const {
    const auto& tensor = graph.tensors()[t];
    if (tensor.output || tensor.consumers.size() != 1) return -1;
    const int c = tensor.consumers[0];
    const frontend::GraphNode& r = graph.nodes()[c];
    const bool alone = r.fused_into < 0 || r.fused_into == tensor.producer;  // or in the BN's fusion group
    return r.op == op && alone && r.outputs.size() == 1 ? c : -1;
  }

  // ShuffleNet's channel shuffle as exporters write it, Reshape to [N, g, C / g, H, W], Transpose
  // by [0, 2, 1, 3, 4] and Reshape back to [N, C, H, W], of a tensor held in NHWC: one step that
  // transposes each pixel's channels as [g, C / g] in NHWC, for the three nodes (in ONNX order
  // each took a layout change before and after it).
  bool add_channel_shuffle(const frontend::GraphNode& n) {
    const int xt = n.inputs.at(0), grouped = n.outputs.at(0);
    if (!held_nhwc(xt)) return false;
    const Shape xs = values[xt].shape, gs = values[grouped].shape;
    if (gs.size() != 5 || gs[0] != xs[0] || gs[1] * gs[2] != xs[1] || gs[3] != xs[2] || gs[4] != xs[3]) return false;
    const int swap = sole_reader(grouped, "Transpose");
    if (swap < 0 ||
        ints_attr(*file->node(graph.nodes()[swap].name), "perm") != std::vector<std::int64_t>{0, 2, 1, 3, 4})
      return false;
    const int back = sole_reader(graph.nodes()[swap].outputs[0], "Reshape");
    if (back < 0 || values[graph.nodes()[back].outputs[0]].shape != xs) return false;
    absorbed.insert(swap);
    absorbed.insert(back);
    const int x = nhwc(xt, n.name), y = output(graph.nodes()[back].outputs[0], true);
    const std::int64_t pixels = xs[0] * xs[2] * xs[3], groups = gs[1], per_group = gs[2];
    push(
        n, [=, this] { shuffle_channels(ptr[x], pixels, groups, per_group, ptr[y], threads); },
        Json{{"as", "channel shuffle"}});
    return true;
  }

  void add_lrn(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    if (xs.size() != 4) unsupported(n, "4-D input expected");
    const std::int64_t size = int_attr(p, "size", 1);
    const float alpha = float_attr(p, "alpha", 1e-4f), beta = float_attr(p, "beta", 0.75f);
    const float bias = float_attr(p, "bias", 1.0f);
    const bool in_nhwc = held_nhwc(n.inputs[0]);  // GoogLeNet's and AlexNet's, after a conv
    const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
    const int y = output(n.outputs[0], in_nhwc);
    push(n, [=, this] { lrn(at(x), xs, size, alpha, beta, bias, ptr[y], in_nhwc, threads); });
  }

  void add_gather(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const auto* idx = p.input_size() > 1 ? file->ints(p.input(1)) : nullptr;
    const std::int64_t axis = axis_of(n, int_attr(p, "axis", 0), xs.size());
    const Ref x = plain(n.inputs[0], n.name);
    if (!idx) {  // indices computed by the model (token ids): read and checked in every run
      const Ref ids = plain(n.inputs.at(1), n.name);
      const std::int64_t count = elements(values[n.inputs[1]].shape);
      const int y = output(n.outputs[0], false);
      const std::string name = n.name;
      push(n, [=, this] {
        if (!gather_by(at(x), xs, at(ids), count, axis, ptr[y])) {
          throw_bad_input("engine: node '" + name + "' (Gather): an index is outside [-" + std::to_string(xs[axis]) +
                          ", " + std::to_string(xs[axis]) + ")");
        }
      });
      return;
    }
    const int y = output(n.outputs[0], false);
    const std::int64_t* indices = idx->data();
    const std::int64_t count = std::int64_t(idx->size());
    push(n, [=, this] { gather(at(x), xs, indices, count, axis, ptr[y]); });
  }

  // An int64 list from constant input `index`, else attribute `attr`; nullopt where neither.
  std::optional<std::vector<std::int64_t>> ints_of(const frontend::GraphNode& n, const onnx::NodeProto& p, int index,
                                                   const std::string& attr) const {
    if (p.input_size() > index && !p.input(index).empty()) {
      const auto* v = file->ints(p.input(index));
      if (!v) unsupported(n, "input '" + p.input(index) + "' must be a constant");
      return *v;
    }
    for (const auto& a : p.attribute()) {
      if (a.name() == attr) return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    }
    return std::nullopt;
  }

  void add_slice(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
    const auto starts = ints_of(n, p, 1, "starts"), ends = ints_of(n, p, 2, "ends");
    if (!starts || !ends || ys.size() != xs.size()) unsupported(n, "starts and ends must be constants");
    std::vector<std::int64_t> axes = ints_of(n, p, 3, "axes").value_or(std::vector<std::int64_t>{});
    const std::vector<std::int64_t> steps = ints_of(n, p, 4, "steps").value_or(std::vector<std::int64_t>{});
    if (axes.empty()) {
      for (std::size_t d = 0; d < starts->size(); ++d) axes.push_back(std::int64_t(d));
    }
    std::vector<std::int64_t> from(xs.size(), 0), step(xs.size(), 1);
    for (std::size_t i = 0; i < axes.size() && i < starts->size(); ++i) {
      const std::int64_t d = axis_of(n, axes[i], xs.size()), dim = xs[d];
      step[d] = i < steps.size() ? steps[i] : 1;
      if (step[d] == 0) unsupported(n, "a step of 0");
      std::int64_t b = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
      from[d] = step[d] > 0 ? std::clamp<std::int64_t>(b, 0, dim) : std::clamp<std::int64_t>(b, 0, dim - 1);
    }
    add_strided_slice(n, n.inputs[0], n.outputs[0], from, step);
  }

  // Output y of x from `from` at `step` along each dim (ONNX order), in whichever order holds
  // x: a conv's NHWC output is sliced in NHWC (ShuffleNet splits its channels between convs),
  // each pixel's channels one run of a copy.
  void add_strided_slice(const frontend::GraphNode& n, int xt, int yt, std::vector<std::int64_t> from,
                         std::vector<std::int64_t> step) {
    Shape xs = values[xt].shape, ys = values[yt].shape;
    const bool in_nhwc = held_nhwc(xt);
    const Ref x = in_order(xt, in_nhwc, n.name);
    const int y = output(yt, in_nhwc);
    if (in_nhwc) {
      for (auto* v : {&xs, &ys, &from, &step}) *v = {(*v)[0], (*v)[2], (*v)[3], (*v)[1]};
    }
    push(n, [=, this] { strided_slice(at(x), xs, from, step, ptr[y], ys, threads); });
  }

  void add_split(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const std::int64_t axis = axis_of(n, int_attr(p, "axis", 0), xs.size());
    std::int64_t offset = 0;
    for (int out : n.outputs) {
      const Shape ys = values[out].shape;
      if (ys.size() != xs.size()) unsupported(n, "output shape unknown");
      std::vector<std::int64_t> from(xs.size(), 0), step(xs.size(), 1);
      from[axis] = offset;
      offset += ys[axis];
      add_strided_slice(n, n.inputs[0], out, from, step);
    }
  }

  void add_pad(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
    const std::string mode_name = string_attr(p, "mode", "constant");
    static const std::map<std::string, PadMode> modes = {
        {"constant", PadMode::constant}, {"reflect", PadMode::reflect}, {"edge", PadMode::edge}};
    if (!modes.count(mode_name)) unsupported(n, "mode '" + mode_name + "' (constant, reflect and edge are)");
    const PadMode mode = modes.at(mode_name);
    if (p.input_size() > 3 && !p.input(3).empty()) unsupported(n, "the axes input");
    const auto pads = ints_of(n, p, 1, "pads");
    if (!pads || pads->size() != 2 * xs.size() || ys.size() != xs.size()) unsupported(n, "pads must be a constant");
    const std::vector<std::int64_t> before(pads->begin(), pads->begin() + std::ptrdiff_t(xs.size()));
    const float value = scalar_input(p, 2, float_attr(p, "value", 0.0f));
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { pad(at(x), xs, before, mode, value, ptr[y], ys); });
  }

  void add_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const std::vector<std::int64_t> axes = ints_of(n, p, 1, "axes").value_or(std::vector<std::int64_t>{});
    if (axes.empty() && int_attr(p, "noop_with_empty_axes", 0) != 0) unsupported(n, "noop_with_empty_axes");
    std::vector<bool> reduced(xs.size(), axes.empty());
    for (auto a : axes) reduced[axis_of(n, a, xs.size())] = true;
    const std::string op = n.op;
    static const std::set<std::string> reductions = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"};
    if (!reductions.count(op)) unsupported(n, "the engine has no step for this reduction");
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);  // keepdims or not: the same values in the same order
    push(n, [=, this] { reduce(op, at(x), xs, reduced, ptr[y]); });
  }

  // A Conv's or ConvTranspose's groups, strides, dilations and explicit top and left pads.
  static ConvAttrs conv_attrs(const onnx::NodeProto& p) {
    ConvAttrs a;
    a.groups = int_attr(p, "group", 1);
    const auto strides = ints_attr(p, "strides"), dil = ints_attr(p, "dilations"), pads = ints_attr(p, "pads");
    if (strides.size() == 2) a.sh = strides[0], a.sw = strides[1];
    if (dil.size() == 2) a.dh = dil[0], a.dw = dil[1];
    if (pads.size() == 4) a.pad_top = pads[0], a.pad_left = pads[1];
    return a;
  }

  void add_plain_conv(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs.at(1)].shape, ys = values[n.outputs[0]].shape;
    if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) unsupported(n, "2-D convolutions only");
    ConvAttrs a = conv_attrs(p);
    const std::string auto_pad = string_attr(p, "auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const std::int64_t ph = std::max<std::int64_t>(0, (ys[2] - 1) * a.sh + (ws[2] - 1) * a.dh + 1 - xs[2]);
      const std::int64_t pw = std::max<std::int64_t>(0, (ys[3] - 1) * a.sw + (ws[3] - 1) * a.dw + 1 - xs[3]);
      a.pad_top = auto_pad == "SAME_LOWER" ? (ph + 1) / 2 : ph / 2;
      a.pad_left = auto_pad == "SAME_LOWER" ? (pw + 1) / 2 : pw / 2;
    }
    if (add_conv_as_matmuls(n, p, xs, ws, ys, a)) return;
    const Ref x = plain(n.inputs[0], n.name), w = plain(n.inputs[1], n.name);
    const float* bias = constant_of(n, p, 2, ys[1]);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { conv_nchw(at(x), xs, at(w), ws, bias, ptr[y], ys, a); });
  }

  // A conv no tuned conv kernel takes (groups, uneven pads or strides, dilations, a 1 x 7
  // kernel's pads) with constant weights: its input windows as rows (im2col_nhwc) times each
  // group's weights, [N x OH x OW, R x S x Cg] x [R x S x Cg, Kg], on the tuned matmul kernel
  // (batch_matmul over several groups), the groups' columns then joined into the NHWC output
  // with the bias (join_groups). One group's matmul is the importer's task for the node (its
  // im2col_task, the same workload), so a plan's schedule runs it. The plain NCHW loop it
  // replaces ran Inception v3's 1x7 and 7x1 convs at 0.01x ONNX Runtime.
  bool add_conv_as_matmuls(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs, const Shape& ws,
                           const Shape& ys, const ConvAttrs& a) {
    const auto* weights = file->floats(p.input(1));
    const std::int64_t groups = a.groups, k = ws[0], cg = ws[1], r = ws[2], s = ws[3], kg = k / groups;
    if (!weights || groups < 1 || xs[1] != cg * groups || k % groups != 0) return false;
    const std::int64_t pixels = ys[0] * ys[2] * ys[3], depth = r * s * cg;
    const float* bias = constant_of(n, p, 2, k);
    if (groups > 1 && grouped_conv_fits(k, cg, kg)) {
      add_grouped_conv(n, xs, ys, GroupedConv{r, s, cg, a, false}, pack_grouped_weights(weights->data(), k, cg, r, s),
                       bias);
      return true;
    }
    // One group: a matmul with the bias; several: one batch_matmul over the groups (a kernel
    // call per group of ResNeXt's 32 cost a parallel region each), the bias added as the
    // groups are joined.
    Json dims{{"M", pixels}, {"N", kg}, {"K", depth}};
    if (groups > 1) dims["B"] = groups;
    const Workload w =
        Workload::from_json(Json{{"op", groups > 1 ? "batch_matmul" : "matmul"},
                                 {"dtype", "float32"},
                                 {"dims", dims},
                                 {"epilogue", bias && groups == 1 ? Json::array({"bias"}) : Json::array()}});
    std::vector<float> b(weights->size());  // [g][(u, v, ci)][ko] from ONNX's [g][ko][ci][(u, v)]
    transpose(weights->data(), {groups, kg, cg, r * s}, {0, 3, 2, 1}, b.data());
    const float* b_data = owned_data(std::move(b));
    const int in = nhwc(n.inputs[0], n.name);
    const int rows = new_slot({groups, pixels, depth});
    writes(rows);
    push(
        n, [=, this] { im2col_nhwc(ptr[in], xs, r, s, a, ptr[rows], ys, threads); }, Json{{"as", "im2col"}});
    reads(rows);
    const int parts = groups == 1 ? output(n.outputs[0], true) : new_slot({groups, pixels, kg});
    writes(parts);
    push_matmul_kernel(n.name, w, rows, b_data, groups == 1 ? bias : nullptr, parts);
    if (groups == 1) return true;
    reads(parts);
    const int y = output(n.outputs[0], true);
    push(
        n, [=, this] { join_groups(ptr[parts], groups, pixels, kg, bias, ptr[y], threads); },
        Json{{"as", "groups joined"}});
    return true;
  }

  // A grouped conv of 2, 4, 8 or 16 channels a group, in NHWC, with the Relu that alone reads it.
  void add_grouped_conv(const frontend::GraphNode& n, const Shape& xs, const Shape& ys, GroupedConv g,
                        std::vector<float> packed, const float* bias) {
    const int relu = sole_relu_reader(n.outputs[0]);
    if (relu >= 0) absorbed.insert(relu);
    g.relu = relu >= 0;
    const float* w = owned_data(std::move(packed));
    const int in = nhwc(n.inputs[0], n.name);
    const int y = output(relu >= 0 ? graph.nodes()[relu].outputs[0] : n.outputs[0], true);
    push(
        n, [=, this] { grouped_conv_nhwc(ptr[in], xs, w, bias, g, ptr[y], ys, threads); },
        Json{{"as", g.relu ? "grouped conv, relu" : "grouped conv"}});
  }

  // A ConvTranspose's groups, strides, dilations and top and left pads (auto_pad's included).
  ConvAttrs conv_transpose_attrs(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                 const Shape& ws, const Shape& ys) const {
    if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) unsupported(n, "2-D transposed convolutions only");
    ConvAttrs a = conv_attrs(p);
    const std::string auto_pad = string_attr(p, "auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // The padding that makes the full output (stride * (in - 1) + the dilated kernel) the
      // output's size, split as ONNX Runtime splits it: SAME_UPPER trims the odd one at the end.
      const std::int64_t th = std::max<std::int64_t>(0, a.sh * (xs[2] - 1) + (ws[2] - 1) * a.dh + 1 - ys[2]);
      const std::int64_t tw = std::max<std::int64_t>(0, a.sw * (xs[3] - 1) + (ws[3] - 1) * a.dw + 1 - ys[3]);
      a.pad_top = auto_pad == "SAME_UPPER" ? th / 2 : th - th / 2;
      a.pad_left = auto_pad == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
    }
    if (xs[1] != ws[0] || ys[1] != ws[1] * a.groups) unsupported(n, "weight shape does not match the channels");
    return a;
  }

  void add_conv_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs.at(1)].shape, ys = values[n.outputs[0]].shape;
    const ConvAttrs a = conv_transpose_attrs(n, p, xs, ws, ys);
    const Ref x = plain(n.inputs[0], n.name), w = plain(n.inputs[1], n.name);
    const float* bias = constant_of(n, p, 2, ys[1]);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { conv_transpose_nchw(at(x), xs, at(w), ws, bias, ptr[y], ys, a); });
  }

  // ConstantOfShape: its `value` (one element; default 0) everywhere in the output's shape.
  void add_constant_of_shape(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    float value = 0;
    for (const auto& a : p.attribute()) {
      if (a.name() != "value" || !a.has_t()) continue;
      onnx::TensorProto t = a.t();
      t.set_name(n.name + "/value");
      const auto v = single_value(t);
      if (!v) unsupported(n, "attribute 'value' must hold one float or integer");
      value = *v;
    }
    const std::int64_t count = elements(values[n.outputs[0]].shape);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { std::fill_n(ptr[y], count, value); });
  }

  // DepthToSpace (DCR or CRD) and SpaceToDepth of [N, C, H, W]: a reshape to 6 dims and a
  // transpose, as ONNX defines them.
  void add_depth_space(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const std::int64_t b = int_attr(p, "blocksize", 0);
    if (xs.size() != 4 || b < 1) unsupported(n, "a 4-D input and a blocksize >= 1 expected");
    const std::int64_t c = xs[1], h = xs[2], w = xs[3];
    Shape six;
    std::vector<std::int64_t> perm;
    if (n.op == "SpaceToDepth") {
      six = {xs[0], c, h / b, b, w / b, b};
      perm = {0, 3, 5, 1, 2, 4};
    } else if (string_attr(p, "mode", "DCR") == "CRD") {
      six = {xs[0], c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      six = {xs[0], b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
    if (elements(six) != elements(xs)) unsupported(n, "the blocksize does not divide the input");
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { transpose(at(x), six, perm, ptr[y]); });
  }

  // ArgMax / ArgMin along axis: the index (as a float, as the engine holds integers) of the
  // first extreme, or the last with select_last_index.
  void add_arg_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    const std::int64_t axis = axis_of(n, int_attr(p, "axis", 0), xs.size());
    const bool max = n.op == "ArgMax", last = int_attr(p, "select_last_index", 0) != 0;
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= xs[d];
    for (std::size_t d = std::size_t(axis) + 1; d < xs.size(); ++d) inner *= xs[d];
    const std::int64_t len = xs[std::size_t(axis)];
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] {
      const float* in = at(x);
      for (std::int64_t o = 0; o < outer; ++o) {
        for (std::int64_t i = 0; i < inner; ++i) {
          std::int64_t best = 0;
          for (std::int64_t k = 1; k < len; ++k) {
            const float v = in[(o * len + k) * inner + i], b = in[(o * len + best) * inner + i];
            if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
          }
          ptr[y][o * inner + i] = float(best);
        }
      }
    });
  }

  // Range(start, limit, delta): start, start + delta, ... as many as the output holds.
  void add_range(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const float start = scalar_input(p, 0, 0), delta = scalar_input(p, 2, 1);
    const std::int64_t count = elements(values[n.outputs[0]].shape);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] {
      for (std::int64_t i = 0; i < count; ++i) ptr[y][i] = start + float(i) * delta;
    });
  }

  void add_tile(const frontend::GraphNode& n) {
    const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
    if (xs.size() != ys.size()) unsupported(n, "repeats must match the input's rank");
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { tile(at(x), xs, ptr[y], ys); });
  }

  void add_instance_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape;
    if (xs.size() < 3) unsupported(n, "input of rank >= 3 expected");
    const float *scale = constant_of(n, p, 1, xs[1]), *bias = constant_of(n, p, 2, xs[1]);
    if (!scale || !bias) unsupported(n, "scale and B must be constants");
    const float eps = float_attr(p, "epsilon", 1e-5f);
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { instance_norm(at(x), xs, scale, bias, eps, ptr[y]); });
  }

  // Resize (opset 10: scales; 11+: roi, scales, sizes) and Upsample (7: scales attribute; 9:
  // scales input, asymmetric coordinates) of the last two dims of a 4-D tensor.
  void add_resize(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
    if (xs.size() != 4 || ys.size() != 4 || xs[0] != ys[0] || xs[1] != ys[1]) {
      unsupported(n, "4-D input resized along its last two dims only");
    }
    ResizeAttrs a;
    const std::string mode = string_attr(p, "mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "bilinear") unsupported(n, "mode '" + mode + "'");
    a.linear = mode != "nearest";
    const bool legacy = n.op == "Upsample" || file->opset() < 11;  // asymmetric, as opset 10 defined
    a.coordinates = legacy ? "asymmetric" : string_attr(p, "coordinate_transformation_mode", "half_pixel");
    a.nearest = legacy ? "floor" : string_attr(p, "nearest_mode", "round_prefer_floor");
    static const std::set<std::string> modes = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
    if (!modes.count(a.coordinates)) unsupported(n, "coordinate_transformation_mode '" + a.coordinates + "'");
    std::vector<float> scales;  // Upsample-7's attribute, else the input
    for (const auto& attr : p.attribute()) {
      if (attr.name() == "scales") scales.assign(attr.floats().begin(), attr.floats().end());
    }
    const int scales_at = n.op == "Upsample" || file->opset() < 11 ? 1 : 2;
    if (p.input_size() > scales_at && !p.input(scales_at).empty()) {
      const auto* s = file->floats(p.input(scales_at));
      if (s && !s->empty()) scales = *s;
    }
    a.scale_h = scales.size() == 4 ? scales[2] : float(ys[2]) / float(xs[2]);
    a.scale_w = scales.size() == 4 ? scales[3] : float(ys[3]) / float(xs[3]);
    const bool in_nhwc = held_nhwc(n.inputs[0]);  // a conv's output upsampled (YOLO's neck, FPNs)
    const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
    const int y = output(n.outputs[0], in_nhwc);
    push(n, [=, this] { resize(at(x), xs, ptr[y], ys, a, in_nhwc, threads); });
  }

  void add_plain_gemm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
    const Shape as = values[n.inputs[0]].shape, bs = values[n.inputs.at(1)].shape;
    const bool gemm = n.op == "Gemm";
    if (bs.size() != 2 || (gemm && as.size() != 2) || as.size() < 2) unsupported(n, "2-D weights expected");
    const bool ta = gemm && int_attr(p, "transA", 0) != 0, tb = gemm && int_attr(p, "transB", 0) != 0;
    const std::int64_t m = ta ? as[1] : elements(as) / as.back(), k = ta ? as[0] : as.back();
    const std::int64_t cols = tb ? bs[0] : bs[1];
    const float alpha = gemm ? float_attr(p, "alpha", 1.0f) : 1.0f, beta = gemm ? float_attr(p, "beta", 1.0f) : 0.0f;
    const Ref a = plain(n.inputs[0], n.name), b = plain(n.inputs[1], n.name);
    Ref c{};
    Shape cs;
    if (gemm && p.input_size() > 2 && !p.input(2).empty()) {
      c = plain(n.inputs[2], n.name);
      cs = values[n.inputs[2]].shape;
    }
    const bool has_c = c.slot >= 0 || c.constant;
    const int y = output(n.outputs[0], false);
    push(n, [=, this] {
      engine::gemm(at(a), at(b), has_c ? at(c) : nullptr, cs, ptr[y], m, cols, k, ta, tb, alpha, beta);
    });
  }

  // --- memory -----------------------------------------------------------------------------

  // Each input copied into its slot (an integer input checked first).
  void load_inputs(const std::vector<const float*>& in) {
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!in[i]) throw_bad_input("engine: input '" + inputs[i].name + "' is null");
      const Value& v = values[input_tensors[i]];
      if (inputs[i].dtype != "float") require_exact_integers(inputs[i], in[i]);
      std::memcpy(ptr[v.plain], in[i], std::size_t(elements(v.shape)) * sizeof(float));
    }
  }

  void plan_arena() {
    std::vector<execution::Allocation> lifetimes;
    const double end = double(steps.size()) + 1;
    for (std::size_t s = 0; s < slots.size(); ++s) {
      const Slot& slot = slots[s];
      const double first = slot.first == std::numeric_limits<int>::max() ? 0 : double(slot.first);
      const double last = slot.last == std::numeric_limits<int>::max() ? end : double(std::max(slot.last, slot.first));
      lifetimes.push_back({std::to_string(s), 0, std::max<std::int64_t>(slot.bytes, 1), first, last + 1});
    }
    const execution::MemoryPlan plan = execution::plan_allocations(lifetimes, kAlign);
    arena_bytes = plan.peak_bytes;
    arena_storage.reset(new float[std::size_t(arena_bytes / std::int64_t(sizeof(float))) + kAlign]);
    auto base = reinterpret_cast<std::uintptr_t>(arena_storage.get());
    base = (base + kAlign - 1) / kAlign * kAlign;
    ptr.assign(slots.size(), nullptr);
    for (const auto& a : plan.allocations) {
      ptr[std::stoul(a.tensor)] = reinterpret_cast<float*>(base + std::uintptr_t(a.offset));
    }
  }
};

namespace {

// The plan's graph must be the file's: the same nodes, ops and tensor shapes.
void check_plan_matches(const frontend::Graph& planned, const frontend::Graph& file_graph, const std::string& path) {
  auto refuse = [&](const std::string& what) {
    throw_bad_input("engine: the model plan is not of '" + path + "': " + what);
  };
  if (planned.nodes().size() != file_graph.nodes().size()) {
    refuse(std::to_string(planned.nodes().size()) + " nodes in the plan, " + std::to_string(file_graph.nodes().size()) +
           " in the file");
  }
  for (std::size_t i = 0; i < planned.nodes().size(); ++i) {
    const auto &a = planned.nodes()[i], &b = file_graph.nodes()[i];
    if (a.name != b.name || a.op != b.op) refuse("node " + std::to_string(i) + " is '" + a.name + "' in the plan");
  }
  for (const auto& t : file_graph.tensors()) {
    const int i = planned.tensor_index(t.name);
    if (i < 0 || planned.tensors()[i].shape != t.shape) refuse("tensor '" + t.name + "' has another shape");
  }
}

// The plan's schedules as the runtime's table. threads > 0 (the caller's "cores the kernels run
// on") caps each schedule's threads knob: a plan tuned on two cores, run on one, must not start
// a second thread on a core the caller kept for other work (a 2-thread ResNet-50 plan run on
// one free core took 12x its time, its kernels' threads waiting for each other).
std::shared_ptr<const table::ScheduleTable> plan_table(const plan::ModelPlan& p, int threads) {
  table::TableHeader header;
  header.target_name = p.target.name;
  header.target_key = p.target.key();
  std::vector<table::TableEntry> entries;
  for (const auto& t : p.tasks) {
    Schedule s = t.schedule;
    if (threads > 0 && s.has(std::string(knobs::threads)) && s.at(std::string(knobs::threads)) > threads) {
      s.set(std::string(knobs::threads), threads);
    }
    entries.push_back({t.workload, s, t.time_us, t.provenance});
  }
  return std::make_shared<const table::ScheduleTable>(header, entries);
}

}  // namespace

Model::Model(const std::string& onnx_path, const ModelOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  m.file = std::make_unique<OnnxFile>(onnx_path, frontend::BoundDims{options.batch, options.dims});
  frontend::OnnxImportOptions io;
  io.batch = options.batch;
  io.dims = options.dims;
  io.float_dtype = DType::float32;
  m.graph = frontend::import_bound_onnx(m.file->model(), onnx_path, io).graph();
  runtime::RuntimeOptions ro;
  ro.build = options.build;
  ro.default_threads = options.threads > 0 ? options.threads : host::this_machine().physical_cores;
  m.threads = ro.default_threads;
  if (!options.plan.empty()) {
    const plan::ModelPlan p = plan::ModelPlan::load(options.plan);
    if (p.graph.empty()) throw_bad_input("engine: the model plan '" + options.plan + "' has no graph");
    check_plan_matches(p.graph, m.graph, onnx_path);
    if (!p.model_sha256.empty() && p.model_sha256 != host::sha256_hex(read_input_file(onnx_path, "model"))) {
      throw_bad_input("engine: the model plan '" + options.plan + "' was tuned for another file than '" + onnx_path +
                      "' (its sha256 differs: other weights)");
    }
    m.graph = p.graph;
    ro.loaded_table = plan_table(p, options.threads);
  }
  m.rt = std::make_unique<runtime::Runtime>(std::move(ro));
  m.build();
  m.plan_arena();
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const std::vector<TensorInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return impl_->outputs; }
std::int64_t Model::arena_bytes() const { return impl_->arena_bytes; }

void Model::run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.inputs.size() || outputs.size() != m.outputs.size()) {
    throw_bad_input("engine: " + std::to_string(m.inputs.size()) + " inputs and " + std::to_string(m.outputs.size()) +
                    " outputs expected, got " + std::to_string(inputs.size()) + " and " +
                    std::to_string(outputs.size()));
  }
  m.load_inputs(inputs);
  for (const auto& s : m.steps) s.run();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) throw_bad_input("engine: output '" + m.outputs[i].name + "' is null");
    const Value& v = m.values[m.output_tensors[i]];
    const float* src = v.constant ? v.constant : m.ptr[v.plain];
    std::memcpy(outputs[i], src, std::size_t(elements(v.shape)) * sizeof(float));
  }
}

std::vector<std::vector<float>> Model::run(const std::vector<const float*>& inputs) {
  std::vector<std::vector<float>> out;
  std::vector<float*> ptrs;
  for (const auto& o : impl_->outputs) out.emplace_back(std::size_t(elements(o.shape)));
  for (auto& o : out) ptrs.push_back(o.data());
  run(inputs, ptrs);
  return out;
}

Json Model::profile(const std::vector<const float*>& inputs, int runs) {
  Impl& m = *impl_;
  std::vector<float*> ptrs;
  std::vector<std::vector<float>> out;
  for (const auto& o : m.outputs) ptrs.push_back(out.emplace_back(std::size_t(elements(o.shape))).data());
  run(inputs, ptrs);  // inputs checked
  std::vector<std::vector<double>> times(m.steps.size());
  for (int r = 0; r < std::max(runs, 1); ++r) {
    m.load_inputs(inputs);  // a step may have reused an input's bytes once its readers ran
    for (std::size_t i = 0; i < m.steps.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      m.steps[i].run();
      times[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
  }
  Json steps = Json::array();
  double total = 0;
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    const double us = times[i][times[i].size() / 2];
    total += us;
    Json j = m.steps[i].info;
    j["node"] = m.steps[i].node;
    j["kind"] = m.steps[i].kind;
    j["us"] = us;
    steps.push_back(j);
  }
  return {{"steps", steps}, {"total_us", total}};
}

Json Model::describe() const {
  Json steps = Json::array();
  for (const auto& s : impl_->steps) {
    Json j = s.info;
    j["node"] = s.node;
    j["kind"] = s.kind;
    steps.push_back(j);
  }
  return {{"steps", steps},
          {"arena_bytes", impl_->arena_bytes},
          {"kernels", impl_->kernels},
          {"kernels_from_plan", impl_->kernels_from_plan}};
}

}  // namespace atvoss::engine
