// Model::Impl's plain steps (internal/model_impl.hpp): every operator no tuned kernel runs, over
// the plain loops of plain_ops.hpp and conv_ops.hpp, and the GELU as exporters write it.
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "engine/einsum.hpp"
#include "engine/internal/model_impl.hpp"

namespace atvoss::engine {

float Model::Impl::scalar_input(const onnx::NodeProto& p, int index, float fallback) const {
  if (p.input_size() <= index || p.input(index).empty()) return fallback;
  const auto* v = file->floats(p.input(index));
  if (!v || v->size() != 1) throw_bad_input("model: node input '" + p.input(index) + "' must be a constant scalar");
  return (*v)[0];
}

void Model::Impl::add_plain(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const std::string& op = n.op;
  const int index = int(&n - graph.nodes().data());
  if (absorbed.count(index) || add_pattern(index)) return;
  if (n.inputs.empty()) unsupported(n, "no input");
  if (wraps_around(n)) {
    unsupported(n, "arithmetic on " + graph.tensors()[n.outputs[0]].dtype +
                       " wraps around there, and the engine computes in float32");
  }
  if (op == "Clip" || op == "LeakyRelu" || op == "Elu" || op == "HardSigmoid" || op == "Gelu" ||
      unary(op, nullptr, nullptr, 0)) {
    return add_unary(n, p);
  }
  if (op == "Sum" && n.inputs.size() == 2) return add_binary(n, "Add");
  const bool variadic = op == "Sum" || op == "Mean" || op == "Max" || op == "Min";
  if (variadic && (n.inputs.size() != 2 || op == "Mean")) return add_variadic(n);
  if (op == "Mod") return add_binary(n, int_attr(p, "fmod", 0) != 0 ? "FMod" : "Mod");
  if (op == "CumSum") return add_cumsum(n, p);
  if (op == "Trilu") return add_trilu(n, p);
  if (op == "GatherElements") return add_gather_elements(n, p);
  if (op == "GatherND") return add_gather_nd(n, p);
  if (op == "TopK") return add_top_k(n, p);
  if (op == "RNN" || op == "GRU" || op == "LSTM") return add_rnn(n, p);
  if (op == "Einsum") return add_einsum(n, p);
  if (op == "OneHot") return add_one_hot(n, p);
  if (op == "GridSample") return add_grid_sample(n, p);
  if (op == "LpNormalization" || op == "Hardmax" || op == "MeanVarianceNormalization") {
    return add_axis_normalization(n, p);
  }
  if (op == "EyeLike") return add_eye_like(n, p);
  if (op == "ScatterND" || op == "ScatterElements" || op == "Scatter") return add_scatter(n, p);
  if (op == "GroupNormalization") return add_group_norm(n, p);
  if (op == "RMSNormalization") return add_rms_norm(n, p);
  if (op == "Div" && is_integer(n.outputs[0])) return add_binary(n, "IntDiv");
  if (binary_op(op)) return add_binary(n, op);
  if (op == "Where") return add_where(n);
  if (op == "Expand") return add_expand(n);
  if ((op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") && add_window_nd(n, p)) return;
  if (op == "MaxPool" || op == "AveragePool") return add_pool(n, p);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return add_global_pool(n);
  if (op == "LpPool" || op == "GlobalLpPool") return add_lp_pool(n, p);
  if (op == "Concat") return add_concat(n, p);
  if (op == "Transpose") return add_transpose(n, p);
  if (op == "Softmax" || op == "LogSoftmax") return add_softmax(n, p);
  if (op == "LayerNormalization") return add_layer_norm(n, p);
  if (op == "BatchNormalization") return add_batch_norm(n, p);
  if (op == "ImageScaler") return add_image_scaler(n, p);
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
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return add_quantize_linear(n, p);
  if (op == "DynamicQuantizeLinear") return add_dynamic_quantize_linear(n);
  if (op == "Resize" || op == "Upsample") return add_resize(n, p);
  if (op == "Gemm" || op == "MatMul") return add_plain_gemm(n, p);
  unsupported(n, "the engine has no step for this op");
}

bool Model::Impl::wraps_around(const frontend::GraphNode& n) const {
  static const std::set<std::string> narrow = {"int8", "int16", "uint8", "uint16", "uint32"};
  static const std::set<std::string> arithmetic = {
      "Add", "Sub", "Mul", "Pow", "Sum", "Neg", "CumSum", "ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"};
  return arithmetic.count(n.op) && n.outputs.size() == 1 && narrow.count(graph.tensors()[n.outputs[0]].dtype);
}

void Model::Impl::add_unary(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  std::string op = n.op;
  float alpha = 0, beta = 0;
  if (op == "LeakyRelu") alpha = float_attr(p, "alpha", 0.01f);
  if (op == "Elu") alpha = float_attr(p, "alpha", 1.0f);
  if (op == "HardSigmoid") alpha = float_attr(p, "alpha", 0.2f), beta = float_attr(p, "beta", 0.5f);
  if (op == "Gelu" && string_attr(p, "approximate", "none") == "tanh") op = "GeluTanh";
  if (op == "Selu")
    alpha = float_attr(p, "alpha", 1.67326319217681884765625f),
    beta = float_attr(p, "gamma", 1.05070102214813232421875f);
  if (op == "ThresholdedRelu" || op == "Celu") alpha = float_attr(p, "alpha", 1.0f);
  if (op == "Shrink") alpha = float_attr(p, "lambd", 0.5f), beta = float_attr(p, "bias", 0.0f);
  if (op == "ScaledTanh" || op == "ParametricSoftplus" || op == "Affine") {
    alpha = float_attr(p, "alpha", 1.0f), beta = float_attr(p, "beta", op == "Affine" ? 0.0f : 1.0f);
  }
  if (op == "IsInf") alpha = float(int_attr(p, "detect_negative", 1)), beta = float(int_attr(p, "detect_positive", 1));
  if (op == "Clip") {
    alpha = scalar_input(p, 1, float_attr(p, "min", -INFINITY));
    beta = scalar_input(p, 2, float_attr(p, "max", INFINITY));
  }
  add_unary_op(n, op, alpha, beta);
}

void Model::Impl::add_unary_op(const frontend::GraphNode& n, int xt, int yt, const std::string& op, float alpha,
                               float beta) {
  const bool in_nhwc = held_nhwc(xt);
  const Ref x = in_order(xt, in_nhwc, n.name);
  const int y = output(yt, in_nhwc);
  const std::int64_t count = elements(values[yt].shape);
  push(n, [this, op, x, y, count, alpha, beta] { unary(op, at(x), ptr[y], count, alpha, beta, threads); });
}

frontend::PatternView Model::Impl::view() const {
  return frontend::PatternView(graph, [this](int t) -> std::optional<double> {
    const auto* c = file->floats(graph.tensors()[t].name);
    return c && c->size() == 1 ? std::optional<double>((*c)[0]) : std::nullopt;
  });
}

bool Model::Impl::last_axis_mean(int r, int x) const {
  const frontend::GraphNode& n = graph.nodes()[r];
  if (n.op != "ReduceMean" || n.inputs.empty() || n.inputs[0] != x || n.outputs.size() != 1) return false;
  Shape kept = values[x].shape;
  if (kept.empty()) return false;
  kept.back() = 1;
  return values[n.outputs[0]].shape == kept;
}

const float* Model::Impl::row_constant(int i, const std::string& op, int t, std::int64_t len) const {
  const frontend::GraphNode& n = graph.nodes()[i];
  if (n.op != op || n.inputs.size() != 2 || n.outputs.size() != 1) return nullptr;
  const int c = n.inputs[0] == t ? n.inputs[1] : n.inputs[1] == t ? n.inputs[0] : -1;
  if (c < 0) return nullptr;
  const Shape& s = values[c].shape;
  const auto* v = file->floats(graph.tensors()[c].name);
  if (!v || std::int64_t(v->size()) != len || (len > 1 && s.back() != len)) return nullptr;
  return v->data();
}

std::optional<Model::Impl::Pattern> Model::Impl::layer_norm_at(const frontend::PatternView& v, int r) const {
  const frontend::GraphNode& mean = graph.nodes()[r];
  if (mean.inputs.empty() || !last_axis_mean(r, mean.inputs[0])) return std::nullopt;
  const int x = mean.inputs[0];
  const int sub = v.inner_reader(mean.outputs[0], "Sub");
  if (sub < 0 || graph.nodes()[sub].inputs != std::vector<int>{x, mean.outputs[0]}) return std::nullopt;
  const int d = graph.nodes()[sub].outputs[0];
  const frontend::GraphTensor& diff = graph.tensors()[d];
  const std::set<int> readers(diff.consumers.begin(), diff.consumers.end());  // a Mul of it by itself reads it twice
  if (diff.output || readers.size() != 2) return std::nullopt;
  const bool div_first = graph.nodes()[*readers.begin()].op == "Div";
  const int sq = *std::next(readers.begin(), div_first ? 1 : 0), div = *std::next(readers.begin(), div_first ? 0 : 1);
  const auto& sqn = graph.nodes()[sq];
  if (v.squared(sq) != d) return std::nullopt;
  const int var = v.inner_reader(sqn.outputs[0], "ReduceMean");
  if (var < 0 || !last_axis_mean(var, sqn.outputs[0])) return std::nullopt;
  float eps = 0;
  std::vector<int> nodes = {r, sub, sq, var};
  const int root = root_plus_epsilon(v, var, eps, nodes);
  if (root < 0 || graph.nodes()[div].op != "Div" || graph.nodes()[div].outputs.size() != 1 ||
      graph.nodes()[div].inputs != std::vector<int>{d, graph.nodes()[root].outputs[0]} ||
      v.inner_reader(graph.nodes()[root].outputs[0], "Div") != div) {
    return std::nullopt;
  }
  nodes.push_back(div);
  return with_affine(v, Pattern{Pattern::Kind::layer_norm, x, graph.nodes()[div].outputs[0], nodes, eps}, true);
}

int Model::Impl::root_plus_epsilon(const frontend::PatternView& v, int var, float& eps, std::vector<int>& nodes) const {
  const int add = v.inner_reader(graph.nodes()[var].outputs[0], "Add");
  const float* e = add >= 0 ? row_constant(add, "Add", graph.nodes()[var].outputs[0], 1) : nullptr;
  const int root = e ? v.inner_reader(graph.nodes()[add].outputs[0], "Sqrt") : -1;
  if (root < 0) return -1;
  eps = *e;
  nodes.insert(nodes.end(), {add, root});
  return root;
}

std::optional<Model::Impl::Pattern> Model::Impl::rms_norm_at(const frontend::PatternView& v, int q) const {
  const int x = v.squared(q);
  const int sq = graph.nodes()[q].outputs[0];
  const int var = x >= 0 ? v.inner_reader(sq, "ReduceMean") : -1;
  if (var < 0 || !last_axis_mean(var, sq) || values[x].shape != values[sq].shape) return std::nullopt;
  Pattern p{Pattern::Kind::rms_norm, x, -1, {q, var}};
  const int root = root_plus_epsilon(v, var, p.epsilon, p.nodes);
  if (root < 0) return std::nullopt;
  const int s = graph.nodes()[root].outputs[0];
  if (const int div = v.inner_reader(s, "Div"); div >= 0 && graph.nodes()[div].inputs == std::vector<int>{x, s}) {
    p.nodes.push_back(div);
    p.out = graph.nodes()[div].outputs[0];
  } else if (const int inv = v.inner_reader(s, "Reciprocal"); inv >= 0) {
    const int r = graph.nodes()[inv].outputs[0], mul = v.inner_reader(r, "Mul");
    if (mul < 0 || other_input(graph.nodes()[mul], r) != x) return std::nullopt;
    p.nodes.insert(p.nodes.end(), {inv, mul});
    p.out = graph.nodes()[mul].outputs[0];
  } else {
    return std::nullopt;
  }
  return with_affine(v, p, false);
}

Model::Impl::Pattern Model::Impl::with_affine(const frontend::PatternView& v, Pattern p, bool beta) const {
  const std::int64_t len = values[p.x].shape.back();
  for (const char* op : {"Mul", "Add"}) {  // gamma, then beta
    const int next = v.inner_reader(p.out, op);
    const float* c = next >= 0 && (beta || op[0] == 'M') ? row_constant(next, op, p.out, len) : nullptr;
    if (!c) break;
    (op[0] == 'M' ? p.gamma : p.beta) = c;
    p.nodes.push_back(next);
    p.out = graph.nodes()[next].outputs[0];
  }
  return p;
}

void Model::Impl::find_patterns() {
  const frontend::PatternView v = view();
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const std::string& op = graph.nodes()[i].op;
    if (pattern_of.count(int(i))) continue;  // a LayerNorm's square is no RMSNorm's
    std::optional<Pattern> g;
    if (const auto gelu = v.gelu_at(int(i))) {
      g = Pattern{gelu->tanh ? Pattern::Kind::tanh_gelu : Pattern::Kind::erf_gelu, gelu->x, gelu->out, gelu->nodes};
    } else if (op == "ReduceMean") {
      g = layer_norm_at(v, int(i));
    } else if (op == "Pow" || op == "Mul") {
      g = rms_norm_at(v, int(i));
    }
    if (!g || std::any_of(g->nodes.begin(), g->nodes.end(), [&](int n) { return pattern_of.count(n) > 0; })) continue;
    for (int node : g->nodes) pattern_of[node] = patterns.size();
    patterns.push_back(*g);
  }
}

bool Model::Impl::add_pattern(int i) {
  const auto found = pattern_of.find(i);
  if (found == pattern_of.end()) return false;
  const Pattern& g = patterns[found->second];
  for (int node : g.nodes) absorbed.insert(node);
  const frontend::GraphNode& n = graph.nodes()[i];
  if (g.kind == Pattern::Kind::layer_norm) {
    const Shape xs = values[g.x].shape;
    const Ref x = plain(g.x, n.name);
    const int y = output(g.out, false);
    push(n, [this, x, xs, g, y] {
      layer_norm(at(x), xs, std::int64_t(xs.size()) - 1, g.epsilon, g.gamma, g.beta, ptr[y], threads);
    });
    steps.back().info["as"] = "layer norm";
  } else if (g.kind == Pattern::Kind::rms_norm) {
    const Shape xs = values[g.x].shape;
    const Ref x = plain(g.x, n.name);
    const int y = output(g.out, false);
    push(n, [this, x, xs, g, y] { rms_norm(at(x), xs, std::int64_t(xs.size()) - 1, g.epsilon, g.gamma, ptr[y]); });
    steps.back().info["as"] = "rms norm";
  } else {
    const bool tanh = g.kind == Pattern::Kind::tanh_gelu;
    add_unary_op(n, g.x, g.out, tanh ? "GeluTanh" : "Gelu", 0, 0);
    steps.back().info["as"] = tanh ? "tanh gelu" : "erf gelu";
  }
  // The importer's fusion groups (graph_fusion.hpp) may go on past the pattern's end (an
  // activation of its output in its last node's group): those nodes run after it, in order.
  for (int node : g.nodes) {
    for (int f : fused_nodes(node)) {
      if (std::find(g.nodes.begin(), g.nodes.end(), f) == g.nodes.end())
        add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    }
  }
  return true;
}

std::optional<Shape> Model::Impl::nhwc_operand(int t, const Shape& so) const {
  const Shape& s = values[t].shape;
  const Shape so_nhwc = {so[0], so[2], so[3], so[1]};
  if (held_nhwc(t) && s == so) return so_nhwc;
  if (s.size() == 4 && s[2] == 1 && s[3] == 1) return Shape{s[0], 1, 1, s[1]};
  if (elements(s) == 1) return s;
  return std::nullopt;
}

void Model::Impl::add_where(const frontend::GraphNode& n) {
  if (n.inputs.size() != 3) unsupported(n, "three inputs expected");
  std::array<Ref, 3> in;
  std::array<Shape, 3> shapes;
  for (int k = 0; k < 3; ++k) in[k] = plain(n.inputs[k], n.name), shapes[k] = values[n.inputs[k]].shape;
  const Shape so = values[n.outputs[0]].shape;
  const int y = output(n.outputs[0], false);
  push(n, [this, in, shapes, so, y] {
    where(at(in[0]), shapes[0], at(in[1]), shapes[1], at(in[2]), shapes[2], ptr[y], so, threads);
  });
}

void Model::Impl::add_expand(const frontend::GraphNode& n) {
  const Shape xs = values[n.inputs[0]].shape, so = values[n.outputs[0]].shape;
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [this, x, xs, so, y] { where(nullptr, {}, at(x), xs, at(x), xs, ptr[y], so, threads); });
}

void Model::Impl::add_binary(const frontend::GraphNode& n, const std::string& op) {
  if (n.inputs.size() != 2) unsupported(n, "two inputs expected");
  const float* exponent = op == "Pow" ? values[n.inputs[1]].constant : nullptr;
  if (exponent && elements(values[n.inputs[1]].shape) == 1 && (*exponent == 2.0f || *exponent == 3.0f)) {
    return add_unary_op(n, *exponent == 2.0f ? "Square" : "Cube", 0, 0);
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

void Model::Impl::require_within(const frontend::GraphNode& n, const Shape& is, const Shape& xs,
                                 std::size_t axis) const {
  for (std::size_t d = 0; d < is.size(); ++d) {
    if (d != axis && is[d] > xs[d]) unsupported(n, "indices larger than data along dim " + std::to_string(d));
  }
}

void Model::Impl::add_variadic(const frontend::GraphNode& n) {
  if (n.inputs.size() == 1) return add_view(n);  // the sum, mean, max or min of one tensor
  const std::string op = n.op == "Sum" || n.op == "Mean" ? "Add" : n.op;
  const float scale = n.op == "Mean" ? 1.0f / float(n.inputs.size()) : 1.0f;
  std::vector<Ref> in;
  std::vector<Shape> shapes;
  for (int t : n.inputs) in.push_back(plain(t, n.name)), shapes.push_back(values[t].shape);
  const Shape so = values[n.outputs[0]].shape;
  const int y = output(n.outputs[0], false);
  // The first two into the output, then each other one into it (the output is no input's slot).
  push(n, [this, op, in, shapes, so, y, scale] {
    float* out = ptr[y];
    binary(op, at(in[0]), shapes[0], at(in[1]), shapes[1], out, so, threads);
    for (std::size_t k = 2; k < in.size(); ++k) binary(op, out, so, at(in[k]), shapes[k], out, so, threads);
    if (scale != 1.0f) {
      for (std::int64_t i = 0; i < elements(so); ++i) out[i] *= scale;
    }
  });
}

void Model::Impl::add_cumsum(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const auto axis = ints_of(n, p, 1, "axis");
  if (!axis || axis->size() != 1) unsupported(n, "input 'axis' must be a constant scalar");
  const std::size_t a = std::size_t(axis_of(n, (*axis)[0], xs.size()));
  const bool exclusive = int_attr(p, "exclusive", 0) != 0, reverse = int_attr(p, "reverse", 0) != 0;
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { cumulative_sum(at(x), xs, a, exclusive, reverse, ptr[y]); });
}

void Model::Impl::add_trilu(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  if (xs.size() < 2) unsupported(n, "an input of at least 2 dims expected");
  std::int64_t k = 0;
  if (p.input_size() > 1 && !p.input(1).empty()) {
    const auto v = ints_of(n, p, 1, "k");
    if (!v || v->size() != 1) unsupported(n, "input 'k' must be a constant scalar");
    k = (*v)[0];
  }
  const bool upper = int_attr(p, "upper", 1) != 0;
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { trilu(at(x), xs, k, upper, ptr[y]); });
}

void Model::Impl::add_gather_elements(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 2) unsupported(n, "two inputs expected");
  const Shape xs = values[n.inputs[0]].shape, is = values[n.inputs[1]].shape;
  if (xs.size() != is.size()) unsupported(n, "data and indices of one rank expected");
  const std::size_t axis = std::size_t(axis_of(n, int_attr(p, "axis", 0), xs.size()));
  require_within(n, is, xs, axis);
  const Ref x = plain(n.inputs[0], n.name), ids = plain(n.inputs[1], n.name);
  const int y = output(n.outputs[0], false);
  const std::string name = n.name;
  push(n, [=, this] {
    if (!gather_elements(at(x), xs, at(ids), is, axis, ptr[y])) {
      throw_bad_input("engine: node '" + name + "' (GatherElements): an index is outside [-" +
                      std::to_string(xs[axis]) + ", " + std::to_string(xs[axis]) + ")");
    }
  });
}

void Model::Impl::add_gather_nd(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 2) unsupported(n, "two inputs expected");
  const Shape xs = values[n.inputs[0]].shape, is = values[n.inputs[1]].shape;
  const std::int64_t b = int_attr(p, "batch_dims", 0);
  if (is.empty() || b < 0 || std::size_t(b) >= is.size() || std::size_t(b + is.back()) > xs.size() ||
      !std::equal(is.begin(), is.begin() + b, xs.begin())) {
    unsupported(n, "indices' last dim plus batch_dims must not exceed data's rank, and the batch dims must match");
  }
  const Ref x = plain(n.inputs[0], n.name), ids = plain(n.inputs[1], n.name);
  const int y = output(n.outputs[0], false);
  const std::string name = n.name;
  push(n, [=, this] {
    if (!gather_nd(at(x), xs, at(ids), is, b, ptr[y])) {
      throw_bad_input("engine: node '" + name + "' (GatherND): an index is outside its dim");
    }
  });
}

void Model::Impl::add_einsum(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  std::vector<Shape> shapes;
  std::vector<Ref> in;
  for (int t : n.inputs) shapes.push_back(values[t].shape), in.push_back(plain(t, n.name));
  EinsumPlan plan;
  try {
    plan = plan_einsum(string_attr(p, "equation"), shapes);
  } catch (const Error& e) {
    unsupported(n, e.what());
  }
  if (plan.output != values[n.outputs[0]].shape) unsupported(n, "the equation's output is not the inferred shape");
  const int y = output(n.outputs[0], false);
  push(n, [this, plan, in, y] {
    std::vector<const float*> operands;
    for (const Ref& r : in) operands.push_back(at(r));
    einsum(plan, operands, ptr[y], threads);
  });
}

void Model::Impl::add_top_k(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::size_t axis = std::size_t(axis_of(n, int_attr(p, "axis", -1), xs.size()));
  // Before opset 10, k is an attribute.
  const auto k = n.inputs.size() > 1 ? ints_of(n, p, 1, "k") : std::optional(std::vector{int_attr(p, "k", -1)});
  if (!k || k->size() != 1 || (*k)[0] < 0 || (*k)[0] > xs[axis])
    unsupported(n, "input 'K' must be a constant in [0, the axis]");
  if (n.outputs.size() != 2) unsupported(n, "two outputs expected");
  const bool largest = int_attr(p, "largest", 1) != 0;
  const Ref x = plain(n.inputs[0], n.name);
  const int values_out = output(n.outputs[0], false), indices_out = output(n.outputs[1], false);
  const std::int64_t count = (*k)[0];
  push(n, [=, this] { top_k(at(x), xs, axis, count, largest, ptr[values_out], ptr[indices_out]); });
}

void Model::Impl::add_grid_sample(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 2) unsupported(n, "two inputs expected");
  const Shape xs = values[n.inputs[0]].shape, gs = values[n.inputs[1]].shape, ys = values[n.outputs[0]].shape;
  if (xs.size() != 4 || gs.size() != 4 || gs[3] != 2 || gs[0] != xs[0]) {
    unsupported(n, "X [N, C, H, W] and grid [N, H_out, W_out, 2] expected (2-D sampling only)");
  }
  GridSampleAttrs a;
  // Opset 16 names the modes bilinear and bicubic, opset 20 linear and cubic.
  a.mode = string_attr(p, "mode", "linear");
  if (a.mode == "bilinear") a.mode = "linear";
  if (a.mode == "bicubic") a.mode = "cubic";
  a.padding = string_attr(p, "padding_mode", "zeros");
  a.align_corners = int_attr(p, "align_corners", 0) != 0;
  if (a.mode != "linear" && a.mode != "nearest" && a.mode != "cubic") unsupported(n, "mode '" + a.mode + "'");
  if (a.padding != "zeros" && a.padding != "border" && a.padding != "reflection") {
    unsupported(n, "padding_mode '" + a.padding + "'");
  }
  if (ys != Shape{xs[0], xs[1], gs[1], gs[2]}) unsupported(n, "not the inferred shape");
  const Ref x = plain(n.inputs[0], n.name), grid = plain(n.inputs[1], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { grid_sample(at(x), xs, at(grid), gs, ptr[y], a, threads); });
}

void Model::Impl::add_eye_like(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  if (xs.size() != 2) unsupported(n, "a 2-D input expected");
  const std::int64_t k = int_attr(p, "k", 0);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { eye_like(xs[0], xs[1], k, ptr[y]); });
}

void Model::Impl::add_axis_normalization(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  Shape xs = values[n.inputs[0]].shape;
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  if (n.op == "MeanVarianceNormalization") {
    std::vector<std::int64_t> axes = ints_attr(p, "axes");
    if (axes.empty()) axes = {0, 2, 3};
    std::vector<bool> reduced(xs.size(), false);
    for (auto a : axes) reduced[std::size_t(axis_of(n, a, xs.size()))] = true;
    return push(n, [=, this] { mean_variance_normalize(at(x), xs, reduced, ptr[y]); });
  }
  const bool hard = n.op == "Hardmax";
  std::int64_t axis = axis_of(n, int_attr(p, "axis", -1), xs.size());
  if (hard && file->opset() < 13) {  // before opset 13: over every dim from axis on, as one
    xs = {elements(Shape(xs.begin(), xs.begin() + axis)), elements(Shape(xs.begin() + axis, xs.end()))};
    axis = 1;
  }
  const auto order = int_attr(p, "p", 2);
  if (!hard && order != 1 && order != 2) unsupported(n, "attribute 'p' must be 1 or 2");
  push(n, [=, this] {
    if (hard) {
      hardmax(at(x), xs, std::size_t(axis), ptr[y]);
    } else {
      lp_normalize(at(x), xs, std::size_t(axis), int(order), ptr[y]);
    }
  });
}

void Model::Impl::add_one_hot(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 3) unsupported(n, "three inputs expected");
  const Shape is = values[n.inputs[0]].shape;
  const float depth = scalar_input(p, 1, 0.0f);  // of any numeric type
  const float* pair = constant_of(n, p, 2, 2);
  if (!(depth >= 1) || std::trunc(depth) != depth) unsupported(n, "input 'depth' must be a whole constant >= 1");
  if (!pair) unsupported(n, "input 'values' must be a constant [off, on]");
  const std::int64_t axis = int_attr(p, "axis", -1);
  const std::size_t at_axis = std::size_t(axis_of(n, axis, is.size() + 1));
  const float off = pair[0], on = pair[1];
  const Ref ids = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  const std::int64_t d = std::int64_t(depth);
  push(n, [=, this] { one_hot(at(ids), is, d, at_axis, off, on, ptr[y]); });
}

void Model::Impl::add_scatter(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 3) unsupported(n, "three inputs expected");
  const Shape xs = values[n.inputs[0]].shape, is = values[n.inputs[1]].shape;
  static const std::map<std::string, ScatterReduce> reductions = {{"none", ScatterReduce::none},
                                                                  {"add", ScatterReduce::add},
                                                                  {"mul", ScatterReduce::mul},
                                                                  {"max", ScatterReduce::max},
                                                                  {"min", ScatterReduce::min}};
  const std::string how = string_attr(p, "reduction", "none");
  if (!reductions.count(how)) unsupported(n, "reduction '" + how + "' (none, add, mul, max and min are)");
  const ScatterReduce reduce = reductions.at(how);
  const bool nd = n.op == "ScatterND";
  if (nd && (is.empty() || is.back() < 0 || std::size_t(is.back()) > xs.size())) {
    unsupported(n, "indices' last dim exceeds data's rank");
  }
  if (!nd && is.size() != xs.size()) unsupported(n, "data and indices of one rank expected");
  const std::size_t axis = nd ? 0 : std::size_t(axis_of(n, int_attr(p, "axis", 0), xs.size()));
  // Where the updates are read from: indices' shape (elements), or its tuples' and data's slices (ND).
  Shape updates = is;
  if (nd) updates.pop_back(), updates.insert(updates.end(), xs.begin() + is.back(), xs.end());
  if (values[n.inputs[2]].shape != updates) unsupported(n, "updates of another shape than indices and data give");
  if (!nd) require_within(n, is, xs, axis);
  const Ref x = plain(n.inputs[0], n.name), ids = plain(n.inputs[1], n.name), up = plain(n.inputs[2], n.name);
  const int y = output(n.outputs[0], false);
  const std::string name = n.name, op = n.op;
  push(n, [=, this] {
    std::copy_n(at(x), elements(xs), ptr[y]);
    const bool ok = nd ? scatter_nd(ptr[y], xs, at(ids), is, at(up), reduce)
                       : scatter_elements(ptr[y], xs, at(ids), is, at(up), axis, reduce);
    if (!ok) throw_bad_input("engine: node '" + name + "' (" + op + "): an index is outside its dim");
  });
}

void Model::Impl::add_group_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::int64_t groups = int_attr(p, "num_groups", 0);
  if (xs.size() < 3 || groups < 1 || xs[1] % groups != 0) unsupported(n, "num_groups must divide the channels");
  // Opset 21 scales each channel; opset 18 each group (its scale and bias hold num_groups values).
  const bool per_group = elements(values[n.inputs.at(1)].shape) == groups && groups != xs[1];
  const std::int64_t count = per_group ? groups : xs[1];
  const float *scale = constant_of(n, p, 1, count), *bias = constant_of(n, p, 2, count);
  if (!scale || !bias) unsupported(n, "scale and bias must be constants");
  const float eps = float_attr(p, "epsilon", 1e-5f);
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { group_norm(at(x), xs, groups, scale, bias, per_group, eps, ptr[y], threads); });
}

void Model::Impl::add_rms_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::int64_t axis = axis_of(n, int_attr(p, "axis", -1), xs.size());
  const std::int64_t len = elements(Shape(xs.begin() + axis, xs.end()));
  const float* scale = constant_of(n, p, 1, len);
  if (!scale) unsupported(n, "scale must be a constant of one value per normalized element");
  const float eps = float_attr(p, "epsilon", 1e-5f);
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { rms_norm(at(x), xs, axis, eps, scale, ptr[y]); });
}

WindowNd Model::Impl::window_nd(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                const std::vector<std::int64_t>& kernel, const Shape& ys, bool transposed) const {
  const std::size_t rank = xs.size() - 2;
  WindowNd a;
  a.kernel = kernel;
  a.strides = ints_attr(p, "strides");
  a.dilations = ints_attr(p, "dilations");
  const auto pads = ints_attr(p, "pads");
  if (a.strides.empty()) a.strides.assign(rank, 1);
  if (a.dilations.empty()) a.dilations.assign(rank, 1);
  a.pad_begin.assign(rank, 0);
  a.pad_end.assign(rank, 0);
  if (!pads.empty() && pads.size() != 2 * rank)
    unsupported(n, "pads must have " + std::to_string(2 * rank) + " values");
  for (std::size_t d = 0; d < pads.size() / 2; ++d) a.pad_begin[d] = pads[d], a.pad_end[d] = pads[d + rank];
  if (kernel.size() != rank || a.strides.size() != rank || a.dilations.size() != rank) {
    unsupported(n, "kernel_shape, strides and dilations must have " + std::to_string(rank) + " values");
  }
  const std::string auto_pad = string_attr(p, "auto_pad", "NOTSET");
  for (std::size_t d = 0; d < rank && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"); ++d) {
    // The padding that makes the output ys's: a transposed conv's full output trimmed to it.
    const std::int64_t in = transposed ? ys[d + 2] : xs[d + 2], out = transposed ? xs[d + 2] : ys[d + 2];
    const std::int64_t total =
        std::max<std::int64_t>(0, (out - 1) * a.strides[d] + (kernel[d] - 1) * a.dilations[d] + 1 - in);
    // SAME_UPPER puts the odd one at the end, SAME_LOWER at the start (add_plain_conv's and
    // conv_transpose_attrs's rules).
    a.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a.pad_end[d] = total - a.pad_begin[d];
  }
  a.groups = int_attr(p, "group", 1);
  a.count_include_pad = int_attr(p, "count_include_pad", 0) != 0;
  return a;
}

void Model::Impl::add_lp_pool(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  if (xs.size() < 3 || ys.size() != xs.size()) unsupported(n, "[N, C, spatial...] input and output expected");
  const bool global = n.op == "GlobalLpPool";
  const std::vector<std::int64_t> kernel = global ? Shape(xs.begin() + 2, xs.end()) : ints_attr(p, "kernel_shape");
  WindowNd a = window_nd(n, p, xs, kernel, ys, false);
  // Debian's libonnx 1.12 infers opset 18's dilated LpPool without its dilations.
  if (std::any_of(a.dilations.begin(), a.dilations.end(), [](std::int64_t d) { return d != 1; })) {
    unsupported(n, "dilations other than 1");
  }
  a.p = float(int_attr(p, "p", 2));
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { pool_nd(PoolKind::lp, at(x), xs, ptr[y], ys, a, threads); });
}

bool Model::Impl::add_window_nd(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  if (xs.size() < 5) return false;
  if (ys.size() != xs.size()) unsupported(n, "output shape unknown");
  const bool pool = n.op == "MaxPool" || n.op == "AveragePool";
  if (pool) {
    if (n.outputs.size() > 1 && !graph.tensors()[n.outputs[1]].consumers.empty()) unsupported(n, "Indices output");
    const WindowNd a = window_nd(n, p, xs, ints_attr(p, "kernel_shape"), ys, false);
    const PoolKind kind = n.op == "MaxPool" ? PoolKind::max : PoolKind::average;
    const Ref x = plain(n.inputs[0], n.name);
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { pool_nd(kind, at(x), xs, ptr[y], ys, a, threads); });
    return true;
  }
  const Shape ws = values[n.inputs.at(1)].shape;
  if (ws.size() != xs.size()) unsupported(n, "weights of the input's rank expected");
  const bool transposed = n.op == "ConvTranspose";
  const WindowNd a = window_nd(n, p, xs, Shape(ws.begin() + 2, ws.end()), ys, transposed);
  const std::int64_t cin = transposed ? ws[0] : ws[1] * a.groups, cout = transposed ? ws[1] * a.groups : ws[0];
  if (a.groups < 1 || xs[1] != cin || ys[1] != cout || xs[1] % a.groups != 0) {
    unsupported(n, "weight shape does not match the channels");
  }
  // A node with a kernel task came here only after add_kernel's try of the same failed.
  if (!transposed && !n.kernel && add_conv3d_kernel(n, p, a)) return true;
  const Ref x = plain(n.inputs[0], n.name), w = plain(n.inputs[1], n.name);
  const float* bias = constant_of(n, p, 2, ys[1]);
  // A Relu that alone reads a conv's result runs in its bias pass (add_batch_norm's way).
  const int relu = transposed ? -1 : sole_relu_reader(n.outputs[0]);
  if (relu >= 0) absorbed.insert(relu);
  const int y = output(relu >= 0 ? graph.nodes()[relu].outputs[0] : n.outputs[0], false);
  if (transposed) {
    const auto offsets = std::make_shared<const std::vector<std::int32_t>>(tap_offsets(ys, xs, a));
    push(n, [=, this] { conv_transpose_nd(at(x), xs, at(w), bias, ptr[y], ys, a, *offsets, threads); });
  } else {
    const auto offsets = std::make_shared<const std::vector<std::int32_t>>(tap_offsets(xs, ys, a));
    push(n, [=, this] { conv_nd(at(x), xs, at(w), bias, ptr[y], ys, a, *offsets, threads, relu >= 0); });
  }
  return true;
}

void Model::Impl::add_pool(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  // A 1-D pool runs as the 2-D pool of its [N, C, 1, L] view (the same bytes), in ONNX's order.
  const bool one_d = xs.size() == 3 && ys.size() == 3;
  if (one_d) xs.insert(xs.begin() + 2, 1), ys.insert(ys.begin() + 2, 1);
  if (xs.size() != 4 || ys.size() != 4) unsupported(n, "1-D and 2-D pools only");
  const std::size_t dims = one_d ? 1 : 2;
  const auto kernel = ints_attr(p, "kernel_shape");
  if (kernel.size() != dims) unsupported(n, "kernel_shape must have " + std::to_string(dims) + " dims");
  Window w;
  w.kh = one_d ? 1 : kernel[0];
  w.kw = kernel[dims - 1];
  const auto strides = ints_attr(p, "strides"), dil = ints_attr(p, "dilations"), pads = ints_attr(p, "pads");
  if (one_d) {
    if (strides.size() == 1) w.sw = strides[0];
    if (dil.size() == 1) w.dw = dil[0];
    if (pads.size() == 2) w.pad_left = pads[0], w.pad_right = pads[1];
  }
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
  if (!one_d && values[n.inputs[0]].nhwc_first) {
    const int x = nhwc(n.inputs[0], n.name);
    const int y = output(n.outputs[0], true);
    push(n, [this, x, y, xs, ys, w, max] { pool(max, ptr[x], xs, ptr[y], ys, w, true, threads); });
    return;
  }
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [this, x, y, xs, ys, w, max] { pool(max, at(x), xs, ptr[y], ys, w, false, threads); });
}

void Model::Impl::add_global_pool(const frontend::GraphNode& n) {
  const Shape xs = values[n.inputs[0]].shape;
  if (xs.size() < 3) unsupported(n, "input of rank >= 3 expected");
  const bool max = n.op == "GlobalMaxPool";
  const bool in_nhwc = values[n.inputs[0]].nhwc_first && xs.size() == 4;
  const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
  const int y = output(n.outputs[0], false);  // [N, C, 1, 1]: the same bytes in either order
  push(n, [this, x, y, xs, max, in_nhwc] { global_pool(max, at(x), xs, ptr[y], in_nhwc); });
}

void Model::Impl::add_concat(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape ys = values[n.outputs[0]].shape;
  const std::int64_t axis = axis_of(n, int_attr(p, "axis", 0), ys.size());
  // Where a kernel wrote its input in place (concat_place), the output is NHWC already and
  // the step copies only the other inputs: none, and it adds no step.
  const int made = values[n.outputs[0]].nhwc;
  bool all_nhwc = made >= 0 || (ys.size() == 4 && axis == 1);
  for (int t : n.inputs) all_nhwc = all_nhwc && (made >= 0 || values[t].nhwc_first);
  std::vector<std::optional<Ref>> in;
  std::vector<Shape> shapes;
  for (int t : n.inputs) {
    in.push_back(values[t].in_concat ? std::nullopt : std::optional<Ref>(in_order(t, all_nhwc, n.name)));
    shapes.push_back(values[t].shape);
  }
  if (std::none_of(in.begin(), in.end(), [](const auto& r) { return r.has_value(); })) return;
  const int y = made >= 0 ? made : output(n.outputs[0], all_nhwc);
  push(n, [this, in, shapes, axis, y, all_nhwc] {
    std::vector<const float*> data;
    for (const auto& r : in) data.push_back(r ? at(*r) : nullptr);
    concat(data, shapes, axis, ptr[y], all_nhwc, threads);
  });
}

void Model::Impl::add_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_softmax(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

const float* Model::Impl::constant_of(const frontend::GraphNode& n, const onnx::NodeProto& p, int index,
                                      std::int64_t count) {
  if (p.input_size() <= index || p.input(index).empty()) return nullptr;
  const auto* v = file->floats(p.input(index));
  if (!v || std::int64_t(v->size()) != count) {
    unsupported(n, "input '" + p.input(index) + "' must be a constant of " + std::to_string(count) + " values");
  }
  return v->data();
}

void Model::Impl::add_layer_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::int64_t axis = axis_of(n, int_attr(p, "axis", -1), xs.size());
  const std::int64_t len = elements(Shape(xs.begin() + axis, xs.end()));
  const float* gamma = constant_of(n, p, 1, len);
  const float* beta = constant_of(n, p, 2, len);
  const float eps = float_attr(p, "epsilon", 1e-5f);
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [this, x, xs, axis, eps, gamma, beta, y] { layer_norm(at(x), xs, axis, eps, gamma, beta, ptr[y], threads); });
}

void Model::Impl::add_batch_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

// Opset 1's experimental ImageScaler (Tiny YOLOv2's first op): x scale + bias[c], as a batch
// norm of mean 0 and variance 1.
void Model::Impl::add_image_scaler(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::vector<float> bias = floats_attr(p, "bias");
  if (xs.size() != 4 || std::int64_t(bias.size()) != xs[1])
    unsupported(n, "[N, C, H, W] and C values of bias expected");
  const auto c = std::size_t(xs[1]);
  const float* scale = owned_data(std::vector<float>(c, float_attr(p, "scale", 1.0f)));
  const float *shift = owned_data(bias), *mean = owned_data(std::vector<float>(c, 0.0f));
  const float* var = owned_data(std::vector<float>(c, 1.0f));
  const bool in_nhwc = held_nhwc(n.inputs[0]);
  const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
  const int y = output(n.outputs[0], in_nhwc);
  push(n, [=, this] { batch_norm(at(x), xs, scale, shift, mean, var, 0.0f, ptr[y], in_nhwc, threads, false); });
}

int Model::Impl::sole_reader(int t, const std::string& op) const {
  const auto& tensor = graph.tensors()[t];
  if (tensor.output || tensor.consumers.size() != 1) return -1;
  const int c = tensor.consumers[0];
  const frontend::GraphNode& r = graph.nodes()[c];
  const bool alone = r.fused_into < 0 || r.fused_into == tensor.producer;  // or in the BN's fusion group
  return r.op == op && alone && r.outputs.size() == 1 ? c : -1;
}

bool Model::Impl::add_channel_shuffle(const frontend::GraphNode& n) {
  const int xt = n.inputs.at(0), grouped = n.outputs.at(0);
  if (!held_nhwc(xt)) return false;
  const Shape xs = values[xt].shape, gs = values[grouped].shape;
  if (gs.size() != 5 || gs[0] != xs[0] || gs[1] * gs[2] != xs[1] || gs[3] != xs[2] || gs[4] != xs[3]) return false;
  const int swap = sole_reader(grouped, "Transpose");
  if (swap < 0 || ints_attr(*file->node(graph.nodes()[swap].name), "perm") != std::vector<std::int64_t>{0, 2, 1, 3, 4})
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

void Model::Impl::add_lrn(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_gather(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

std::optional<std::vector<std::int64_t>> Model::Impl::ints_of(const frontend::GraphNode& n, const onnx::NodeProto& p,
                                                              int index, const std::string& attr) const {
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

void Model::Impl::add_slice(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_strided_slice(const frontend::GraphNode& n, int xt, int yt, std::vector<std::int64_t> from,
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

void Model::Impl::add_split(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_pad(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  const std::string mode_name = string_attr(p, "mode", "constant");
  static const std::map<std::string, PadMode> modes = {
      {"constant", PadMode::constant}, {"reflect", PadMode::reflect}, {"edge", PadMode::edge}, {"wrap", PadMode::wrap}};
  if (!modes.count(mode_name)) unsupported(n, "mode '" + mode_name + "' (constant, reflect, edge and wrap are)");
  const PadMode mode = modes.at(mode_name);
  auto pads = ints_of(n, p, 1, "pads");
  // Opset 18's axes: the pads of those axes only (the others unpadded).
  if (const auto axes = ints_of(n, p, 3, "axes"); axes && pads && pads->size() == 2 * axes->size()) {
    std::vector<std::int64_t> full(2 * xs.size(), 0);
    for (std::size_t i = 0; i < axes->size(); ++i) {
      const std::size_t a = std::size_t(axis_of(n, (*axes)[i], xs.size()));
      full[a] = (*pads)[i], full[a + xs.size()] = (*pads)[i + axes->size()];
    }
    pads = full;
  }
  if (!pads || pads->size() != 2 * xs.size() || ys.size() != xs.size()) unsupported(n, "pads must be a constant");
  const std::vector<std::int64_t> before(pads->begin(), pads->begin() + std::ptrdiff_t(xs.size()));
  const float value = scalar_input(p, 2, float_attr(p, "value", 0.0f));
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { pad(at(x), xs, before, mode, value, ptr[y], ys, threads); });
}

void Model::Impl::add_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  const std::vector<std::int64_t> axes = ints_of(n, p, 1, "axes").value_or(std::vector<std::int64_t>{});
  const std::string op = n.op;
  if (!reduce_op(op)) unsupported(n, "the engine has no step for this reduction");
  // No axes and noop_with_empty_axes: the input as it is (opset 18's form of "reduce nothing").
  if (axes.empty() && int_attr(p, "noop_with_empty_axes", 0) != 0) return add_view(n);
  std::vector<bool> reduced(xs.size(), axes.empty());
  for (auto a : axes) reduced[axis_of(n, a, xs.size())] = true;
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);  // keepdims or not: the same values in the same order
  push(n, [=, this] { reduce(op, at(x), xs, reduced, ptr[y]); });
}

void Model::Impl::add_constant_of_shape(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_depth_space(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_arg_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p) {
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

void Model::Impl::add_range(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const float start = scalar_input(p, 0, 0), delta = scalar_input(p, 2, 1);
  const std::int64_t count = elements(values[n.outputs[0]].shape);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] {
    for (std::int64_t i = 0; i < count; ++i) ptr[y][i] = start + float(i) * delta;
  });
}

void Model::Impl::add_tile(const frontend::GraphNode& n) {
  const Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  if (xs.size() != ys.size()) unsupported(n, "repeats must match the input's rank");
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { tile(at(x), xs, ptr[y], ys); });
}

void Model::Impl::add_instance_norm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape xs = values[n.inputs[0]].shape;
  if (xs.size() < 3) unsupported(n, "input of rank >= 3 expected");
  const float *scale = constant_of(n, p, 1, xs[1]), *bias = constant_of(n, p, 2, xs[1]);
  if (!scale || !bias) unsupported(n, "scale and B must be constants");
  const float eps = float_attr(p, "epsilon", 1e-5f);
  const Ref x = plain(n.inputs[0], n.name);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { instance_norm(at(x), xs, scale, bias, eps, ptr[y], threads); });
}

namespace {

// The values an integer type of ONNX holds, as floats; nullopt for another type.
std::optional<std::pair<float, float>> integer_range(const std::string& type) {
  static const std::map<std::string, std::pair<float, float>> ranges = {{"uint8", {0.0f, 255.0f}},
                                                                        {"int8", {-128.0f, 127.0f}},
                                                                        {"uint16", {0.0f, 65535.0f}},
                                                                        {"int16", {-32768.0f, 32767.0f}},
                                                                        {"uint4", {0.0f, 15.0f}},
                                                                        {"int4", {-8.0f, 7.0f}},
                                                                        {"int32", {-2147483648.0f, 2147483647.0f}}};
  const auto it = ranges.find(type);
  if (it == ranges.end()) return std::nullopt;
  return it->second;
}

}  // namespace

void Model::Impl::add_quantize_linear(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const bool quantize = n.op == "QuantizeLinear";
  const Shape xs = values[n.inputs[0]].shape;
  if (int_attr(p, "block_size", 0) != 0) unsupported(n, "block_size: blocked quantization");
  const int scale_t = n.inputs.at(1), zero_t = n.inputs.size() > 2 ? n.inputs[2] : -1;
  Quantization q;
  q.count = elements(values[scale_t].shape);
  if (zero_t >= 0 && elements(values[zero_t].shape) != q.count) {
    unsupported(n, "x_zero_point must have x_scale's " + std::to_string(q.count) + " values");
  }
  // Constants, or computed at run time (DynamicQuantizeLinear's) and read when the step runs.
  const Ref scale = plain(scale_t, n.name);
  const Ref zero =
      zero_t < 0 ? Ref{-1, owned_data(std::vector<float>(std::size_t(q.count), 0.0f))} : plain(zero_t, n.name);
  // A scalar scale applies to every element, whatever the axis (a bias's rank 1 and axis 1).
  const std::size_t axis = q.count == 1 ? 0 : std::size_t(axis_of(n, int_attr(p, "axis", 1), xs.size()));
  if (q.count != 1 && (values[scale_t].shape.size() != 1 || xs[axis] != q.count)) {
    unsupported(n, "x_scale must be a scalar or one value per index of axis " + std::to_string(axis));
  }
  if (quantize) {
    const auto range = integer_range(graph.tensors()[n.outputs[0]].dtype);
    if (!range) unsupported(n, "output type '" + graph.tensors()[n.outputs[0]].dtype + "': integer types only");
    std::tie(q.low, q.high) = *range;
  }
  // Per tensor, either order; per channel of a tensor a conv wrote NHWC, its channels last.
  const bool in_nhwc = held_nhwc(n.inputs[0]) && (q.count == 1 || axis == 1);
  q.inner = in_nhwc ? 1 : elements(Shape(xs.begin() + std::ptrdiff_t(std::min(axis + 1, xs.size())), xs.end()));
  const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
  const std::vector<int> back = quantize ? dequantizing_readers(n, p) : std::vector<int>{};
  absorbed.insert(back.begin(), back.end());
  q.round_trip = !back.empty();
  const int y_t = back.empty() ? n.outputs[0] : graph.nodes()[back[0]].outputs[0];
  const int y = output(y_t, in_nhwc);
  for (std::size_t r = 1; r < back.size(); ++r) alias_of(y_t, graph.nodes()[back[r]].outputs[0]);
  const std::int64_t count = elements(xs);
  push(n, [=, this] {
    Quantization now = q;
    now.scale = at(scale);
    now.zero = at(zero);
    (quantize ? quantize_linear : dequantize_linear)(at(x), count, now, ptr[y], threads);
  });
}

std::vector<int> Model::Impl::dequantizing_readers(const frontend::GraphNode& n, const onnx::NodeProto& p) const {
  const auto& tensor = graph.tensors()[n.outputs[0]];
  if (tensor.output || tensor.consumers.empty()) return {};
  std::vector<int> readers;
  for (const int d : tensor.consumers) {
    const frontend::GraphNode& dq = graph.nodes()[d];
    const onnx::NodeProto* dp = file->node(dq.name);
    if (dq.op != "DequantizeLinear" || dq.fused_into >= 0 || dq.outputs.size() != 1 || !dp ||
        dq.inputs.size() != n.inputs.size() || dq.inputs[0] != n.outputs[0] || absorbed.count(d)) {
      return {};
    }
    if (int_attr(*dp, "axis", 1) != int_attr(p, "axis", 1) || int_attr(*dp, "block_size", 0) != 0) return {};
    for (std::size_t i = 1; i < n.inputs.size(); ++i) {  // the same scale and zero point, or equal constants
      const int a = n.inputs[i], b = dq.inputs[i];
      if (a == b) continue;
      const float *va = values[a].constant, *vb = values[b].constant;
      const std::int64_t count = elements(values[a].shape);
      if (!va || !vb || elements(values[b].shape) != count || !std::equal(va, va + count, vb)) return {};
    }
    if (std::find(readers.begin(), readers.end(), d) == readers.end()) readers.push_back(d);
  }
  return readers;
}

void Model::Impl::add_dynamic_quantize_linear(const frontend::GraphNode& n) {
  if (n.outputs.size() != 3) unsupported(n, "outputs y, y_scale and y_zero_point expected");
  const Ref x = plain(n.inputs.at(0), n.name);
  const std::int64_t count = elements(values[n.inputs[0]].shape);
  const int y = output(n.outputs[0], false), scale = output(n.outputs[1], false), zero = output(n.outputs[2], false);
  push(n, [=, this] { dynamic_quantize_linear(at(x), count, ptr[y], ptr[scale], ptr[zero], threads); });
}

void Model::Impl::add_resize(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  Shape xs = values[n.inputs[0]].shape, ys = values[n.outputs[0]].shape;
  if (xs.size() != ys.size() || xs.size() < 3 || xs.size() > 5 || xs[0] != ys[0] || xs[1] != ys[1]) {
    unsupported(n, "3-D to 5-D input resized along the dims after the second only");
  }
  ResizeAttrs a;
  const std::string mode = string_attr(p, "mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear" && mode != "cubic" && mode != "bicubic") {
    unsupported(n, "mode '" + mode + "'");
  }
  a.cubic = mode == "cubic" || mode == "bicubic";
  a.linear = !a.cubic && mode != "nearest";
  a.cubic_a = float_attr(p, "cubic_coeff_a", -0.75f);
  a.exclude_outside = int_attr(p, "exclude_outside", 0) != 0;
  const bool legacy = n.op == "Upsample" || file->opset() < 11;  // asymmetric, as opset 10 defined
  a.coordinates = legacy ? "asymmetric" : string_attr(p, "coordinate_transformation_mode", "half_pixel");
  a.nearest = legacy ? "floor" : string_attr(p, "nearest_mode", "round_prefer_floor");
  static const std::set<std::string> modes = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  if (!modes.count(a.coordinates)) unsupported(n, "coordinate_transformation_mode '" + a.coordinates + "'");
  // Antialiasing widens the filter only where the image shrinks.
  bool shrinks = false;
  for (std::size_t d = 2; d < xs.size(); ++d) shrinks = shrinks || ys[d] < xs[d];
  if (int_attr(p, "antialias", 0) != 0 && shrinks) unsupported(n, "antialias=1 downsampling");
  const std::vector<float> scales = resize_scales(n, p, xs, ys);
  if (xs.size() == 5) {
    if (a.cubic) unsupported(n, "cubic mode of a 5-D input");
    push(n, [=, this, x = plain(n.inputs[0], n.name), y = output(n.outputs[0], false)] {
      resize_nd(at(x), xs, ptr[y], ys, a, scales, threads);
    });
    return;
  }
  a.scale_h = xs.size() == 4 ? scales[2] : 1.0f;
  a.scale_w = scales.back();
  if (xs.size() == 3) {  // [N, C, L] (audio) as its [N, C, 1, L] view
    for (Shape* shape : {&xs, &ys}) shape->insert(shape->begin() + 2, 1);
  }
  // A conv's output upsampled (YOLO's neck, FPNs) stays NHWC, unless it is upsampled into a
  // model output (a segmentation head's logits): its smaller input goes to ONNX order instead.
  const bool into_output = graph.tensors()[n.outputs[0]].output && elements(ys) > elements(xs);
  const bool in_nhwc = held_nhwc(n.inputs[0]) && !into_output;
  const Ref x = in_order(n.inputs[0], in_nhwc, n.name);
  const int y = output(n.outputs[0], in_nhwc);
  push(n, [=, this] { resize(at(x), xs, ptr[y], ys, a, in_nhwc, threads); });
}

std::vector<float> Model::Impl::resize_scales(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                              const Shape& ys) const {
  std::vector<float> scales;  // Upsample-7's attribute, else the input
  for (const auto& attr : p.attribute()) {
    if (attr.name() == "scales") scales.assign(attr.floats().begin(), attr.floats().end());
  }
  const int scales_at = n.op == "Upsample" || file->opset() < 11 ? 1 : 2;
  if (p.input_size() > scales_at && !p.input(scales_at).empty()) {
    const auto* s = file->floats(p.input(scales_at));
    // The coordinates map back by the scale, which out / in matches only where in x scale is whole.
    if (!s) unsupported(n, "input 'scales' ('" + p.input(scales_at) + "') must be a constant");
    if (!s->empty()) scales = *s;
  }
  // Opset 18's axes: the scales (or sizes) list only those axes, in that order.
  const std::size_t rank = xs.size();
  std::vector<std::int64_t> axes = ints_attr(p, "axes");
  if (axes.empty()) {
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(std::int64_t(d));
  }
  for (auto& ax : axes) ax = axis_of(n, ax, rank);
  std::vector<float> full(rank, 1.0f);
  if (!scales.empty()) {
    if (scales.size() != axes.size()) {
      unsupported(n, std::to_string(scales.size()) + " scales for " + std::to_string(axes.size()) + " axes");
    }
    for (std::size_t i = 0; i < axes.size(); ++i) full[std::size_t(axes[i])] = scales[i];
    return full;
  }
  // Sizes given: "stretch" scales each axis by out / in; the other policies keep the aspect
  // ratio by one scale, from the sizes, for every axis listed.
  const std::string policy = string_attr(p, "keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (std::size_t d = 0; d < rank; ++d) full[d] = float(ys[d]) / float(xs[d]);
    return full;
  }
  if (policy != "not_larger" && policy != "not_smaller") unsupported(n, "keep_aspect_ratio_policy '" + policy + "'");
  const auto sizes = ints_of(n, p, 3, "");
  if (!sizes || sizes->size() != axes.size()) unsupported(n, "input 'sizes' must give one size per axis");
  float scale = policy == "not_larger" ? INFINITY : 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const float r = float((*sizes)[i]) / float(xs[std::size_t(axes[i])]);
    scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
  }
  for (const auto d : axes) full[std::size_t(d)] = scale;
  return full;
}

}  // namespace atvoss::engine
