#include "frontend/graph_patterns.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace atvoss::frontend {
namespace {

int other_input(const GraphNode& n, int t) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
}

}  // namespace

int PatternView::inner_producer(int t) const {
  const GraphTensor& tensor = g_.tensors()[t];
  if (tensor.output || tensor.consumers.size() != 1 || tensor.producer < 0) return -1;
  return g_.nodes()[tensor.producer].outputs.size() == 1 ? tensor.producer : -1;
}

int PatternView::inner_reader(int t, const std::string& op) const {
  const GraphTensor& tensor = g_.tensors()[t];
  if (tensor.output || tensor.consumers.size() != 1) return -1;
  const GraphNode& r = g_.nodes()[tensor.consumers[0]];
  return r.op == op && r.outputs.size() == 1 ? tensor.consumers[0] : -1;
}

bool PatternView::scalar_is(int t, double v) const {
  const auto c = scalar_ ? scalar_(t) : std::nullopt;
  return c && std::abs(*c - v) <= 1e-6 * std::abs(v);
}

bool PatternView::takes_scalar(int i, const std::string& op, int t, double v) const {
  const GraphNode& n = g_.nodes()[i];
  if (n.op != op || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  return (n.inputs[0] == t && scalar_is(n.inputs[1], v)) || (n.inputs[1] == t && scalar_is(n.inputs[0], v));
}

int PatternView::times_scalar(int i, double v) const {
  const GraphNode& n = g_.nodes()[i];
  if (n.op != "Mul" || n.inputs.size() != 2 || n.outputs.size() != 1) return -1;
  if (scalar_is(n.inputs[1], v)) return n.inputs[0];
  return scalar_is(n.inputs[0], v) ? n.inputs[1] : -1;
}

int PatternView::squared(int q) const {
  const GraphNode& n = g_.nodes()[q];
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return -1;
  if (n.op == "Pow") return scalar_is(n.inputs[1], 2) ? n.inputs[0] : -1;
  return n.op == "Mul" && n.inputs[0] == n.inputs[1] ? n.inputs[0] : -1;
}

int PatternView::over_root_two(int d) const {
  const GraphNode& n = g_.nodes()[d];
  if (n.op == "Div" && n.inputs.size() == 2 && n.outputs.size() == 1) {
    return scalar_is(n.inputs[1], std::sqrt(2.0)) ? n.inputs[0] : -1;
  }
  return times_scalar(d, std::sqrt(0.5));
}

int PatternView::cube_of(int t, std::vector<int>& nodes) const {
  const int p = inner_producer(t);
  if (p < 0 || g_.nodes()[p].inputs.size() != 2) return -1;
  const GraphNode& n = g_.nodes()[p];
  const int a = n.inputs[0], b = n.inputs[1];
  if (n.op == "Pow") {
    if (!scalar_is(b, 3.0)) return -1;
    nodes.push_back(p);
    return a;
  }
  if (n.op != "Mul") return -1;
  for (const auto& [square, x] : {std::pair{a, b}, std::pair{b, a}}) {  // (x * x) * x or x * (x * x)
    const int q = inner_producer(square);
    if (q >= 0 && g_.nodes()[q].op == "Mul" && g_.nodes()[q].inputs == std::vector<int>{x, x}) {
      nodes.insert(nodes.end(), {p, q});
      return x;
    }
  }
  return -1;
}

std::optional<Gelu> PatternView::gelu_end(int xt, int f, std::vector<int> nodes) const {
  const int a = inner_reader(g_.nodes()[f].outputs[0], "Add");
  if (xt < 0 || a < 0 || !takes_scalar(a, "Add", g_.nodes()[f].outputs[0], 1.0)) return std::nullopt;
  const int m = inner_reader(g_.nodes()[a].outputs[0], "Mul");
  if (m < 0) return std::nullopt;
  nodes.insert(nodes.end(), {a, m});
  const GraphNode& mul = g_.nodes()[m];
  const int other = other_input(mul, g_.nodes()[a].outputs[0]);
  if (other == xt) {  // (x * (1 + f)) * 0.5
    const int half = inner_reader(mul.outputs[0], "Mul");
    if (half < 0 || !takes_scalar(half, "Mul", mul.outputs[0], 0.5)) return std::nullopt;
    nodes.push_back(half);
    return Gelu{xt, g_.nodes()[half].outputs[0], nodes};
  }
  const int h = other >= 0 ? inner_producer(other) : -1;  // (x * 0.5) * (1 + f)
  if (h < 0 || !takes_scalar(h, "Mul", xt, 0.5)) return std::nullopt;
  nodes.push_back(h);
  return Gelu{xt, mul.outputs[0], nodes};
}

std::optional<Gelu> PatternView::erf_gelu_at(int e) const {
  const GraphNode& erf = g_.nodes()[e];
  if (erf.inputs.size() != 1 || erf.outputs.size() != 1) return std::nullopt;
  const int d = inner_producer(erf.inputs[0]);
  if (d < 0) return std::nullopt;
  return gelu_end(over_root_two(d), e, {d, e});
}

std::optional<Gelu> PatternView::tanh_gelu_at(int t) const {
  const GraphNode& tanh = g_.nodes()[t];
  if (tanh.inputs.size() != 1 || tanh.outputs.size() != 1) return std::nullopt;
  const int s = inner_producer(tanh.inputs[0]);
  const int inner = s >= 0 ? times_scalar(s, std::sqrt(2.0 / std::acos(-1.0))) : -1;
  const int sum = inner >= 0 ? inner_producer(inner) : -1;  // x + 0.044715 x^3
  if (sum < 0 || g_.nodes()[sum].op != "Add" || g_.nodes()[sum].inputs.size() != 2) return std::nullopt;
  const std::vector<int>& terms = g_.nodes()[sum].inputs;
  for (int k = 0; k < 2; ++k) {
    std::vector<int> nodes = {t, s, sum};
    const int c = inner_producer(terms[1 - k]);
    const int cube = c >= 0 ? times_scalar(c, 0.044715) : -1;
    if (cube < 0) continue;
    nodes.push_back(c);
    if (cube_of(cube, nodes) != terms[k]) continue;
    auto g = gelu_end(terms[k], t, nodes);
    if (g) g->tanh = true;
    return g;
  }
  return std::nullopt;
}

std::optional<Gelu> PatternView::gelu_at(int n) const {
  const std::string& op = g_.nodes()[n].op;
  return op == "Erf" ? erf_gelu_at(n) : op == "Tanh" ? tanh_gelu_at(n) : std::nullopt;
}

std::vector<Gelu> PatternView::gelus_owning_their_input() const {
  std::vector<Gelu> out;
  for (std::size_t n = 0; n < g_.nodes().size(); ++n) {
    const auto g = gelu_at(int(n));
    if (!g) continue;
    const GraphTensor& x = g_.tensors()[g->x];
    const std::set<int> inside(g->nodes.begin(), g->nodes.end());
    if (!x.output && std::all_of(x.consumers.begin(), x.consumers.end(), [&](int c) { return inside.count(c) > 0; })) {
      out.push_back(*g);
    }
  }
  return out;
}

}  // namespace atvoss::frontend
