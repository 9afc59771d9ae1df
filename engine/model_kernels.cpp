// Model::Impl's kernel steps (internal/model_impl.hpp): a conv or matmul node with the nodes fused
// into it run as one tuned host kernel, its epilogue grown while the kernel computes each fused
// node exactly; and the convs and Gemms no kernel takes, as plain steps.
#include <cmath>

#include "engine/internal/model_impl.hpp"
#include "engine/plain_ops.hpp"
#include "frontend/phase_conv.hpp"
#include "host/host_space.hpp"
#include "host/machine.hpp"

namespace atvoss::engine {
namespace {

// The host kernels' epilogue ops a fused ONNX node is exactly, else "".
std::string exact_step(const onnx::NodeProto& n, const OnnxFile& file) {
  const std::string& op = n.op_type();
  if (op == "Relu") return "relu";
  if (op == "Sigmoid") return "sigmoid";
  if (op == "Tanh") return "tanh";
  if (op == "HardSwish") return "hardswish";
  if (frontend::is_torch_hardsigmoid(n)) return "hardsigmoid";
  if (op == "Mish") return "mish";
  if (op == "Gelu") return string_attr(n, "approximate", "none") == "tanh" ? "gelu" : "gelu_erf";
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

std::vector<int> Model::Impl::fused_nodes(int i) const {
  std::vector<int> f;
  for (int j = i + 1; j < int(graph.nodes().size()); ++j) {
    if (graph.nodes()[j].fused_into == i) f.push_back(j);
  }
  return f;
}

std::optional<std::vector<float>> Model::Impl::per_channel(const std::string& tensor, std::int64_t k) const {
  const auto* c = file->floats(tensor);
  if (!c) return std::nullopt;
  if (c->size() == 1) return std::vector<float>(std::size_t(k), (*c)[0]);
  if (std::int64_t(c->size()) == k) return *c;
  return std::nullopt;
}

Model::Impl::Chain Model::Impl::chain_of(int i, std::int64_t k, std::vector<float>& bias, bool has_bias, bool conv,
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
    } else if (n.fused_by == "gelu") {
      if (!take_gelu(fused, f, c)) break;
      continue;
    } else if (n.fused_by == "silu") {
      if (f + 1 >= fused.size() || has(c.epilogue, "silu")) break;
      c.epilogue.push_back("silu");
      c.out = graph.nodes()[fused[++f]].outputs[0];
      continue;
    } else if (!add_step(n, p, c, k, bias, conv)) {
      break;
    }
    c.out = n.outputs[0];
  }
  for (; f < fused.size(); ++f) c.rest.push_back(fused[f]);
  return c;
}

bool Model::Impl::take_gelu(const std::vector<int>& fused, std::size_t& f, Chain& c) const {
  const auto it = pattern_of.find(fused[f]);
  if (it == pattern_of.end()) return false;
  const Pattern& g = patterns[it->second];
  const char* op = g.kind == Pattern::Kind::tanh_gelu ? "gelu" : "gelu_erf";
  if (g.kind == Pattern::Kind::layer_norm || g.kind == Pattern::Kind::rms_norm || g.x != c.out || has(c.epilogue, op) ||
      f + g.nodes.size() > fused.size() ||
      !std::is_permutation(g.nodes.begin(), g.nodes.end(), fused.begin() + std::ptrdiff_t(f))) {
    return false;
  }
  c.epilogue.push_back(op);
  c.out = g.out;
  f += g.nodes.size() - 1;
  return true;
}

bool Model::Impl::fold(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k,
                       std::vector<float>& bias, const std::function<void(const std::vector<float>&)>& scale_weights) {
  if (!scale_weights) return false;  // weights laid out already (an im2col conv's)
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

bool Model::Impl::add_step(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k,
                           std::vector<float>& bias, bool conv) {
  if (n.op == "LeakyRelu" || n.op == "PRelu") return add_slope(n, p, c, k, conv);
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

bool Model::Impl::add_slope(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k,
                            bool conv) {
  if (has(c.epilogue, "leaky_relu")) return false;
  if (n.op == "LeakyRelu") {
    c.slope.assign(std::size_t(k), float_attr(p, "alpha", 0.01f));
  } else {
    const Shape& out = values[c.out].shape;
    if (n.inputs.size() != 2 || n.inputs[0] != c.out || out.empty()) return false;
    auto s = broadcast_channels(n.inputs[1], out, conv ? 1 : out.size() - 1);
    if (!s) return false;
    c.slope = std::move(*s);
  }
  c.epilogue.push_back("leaky_relu");
  return true;
}

std::optional<std::vector<float>> Model::Impl::broadcast_channels(int t, const Shape& out, std::size_t axis) const {
  const Shape& s = values[t].shape;
  const auto* v = file->floats(graph.tensors()[t].name);
  if (!v || s.size() > out.size() || axis >= out.size()) return std::nullopt;
  const std::int64_t k = out[axis];
  if (v->size() == 1) return std::vector<float>(std::size_t(k), (*v)[0]);
  for (std::size_t d = 0; d < s.size(); ++d) {  // right-aligned: s[d] lies on out's axis d + out.size() - s.size()
    const bool on_channels = d + out.size() - s.size() == axis;
    if (s[d] != (on_channels ? k : 1)) return std::nullopt;
  }
  return std::int64_t(v->size()) == k ? std::optional(*v) : std::nullopt;
}

Model::Impl::ChannelData Model::Impl::channel_data(Chain& c, std::vector<float>& bias) {
  ChannelData d;
  if (has(c.epilogue, "bias")) d.bias = owned_data(std::move(bias));
  if (has(c.epilogue, "leaky_relu")) d.slope = owned_data(std::move(c.slope));
  if (has(c.epilogue, "requantize")) {
    d.grids = int(c.qout.size() / 2);
    d.qout = owned_data(std::move(c.qout));
  }
  return d;
}

Workload Model::Impl::kernel_workload(const Workload& w, const std::vector<std::string>& epilogue, DType dtype) const {
  Json j = w.to_json();
  j["epilogue"] = epilogue;
  j["dtype"] = std::string(to_string(dtype));
  return Workload::from_json(j);
}

void Model::Impl::prepare_kernel(const Workload& w, Json& info) {
  const runtime::Choice& choice = rt->choose(w);
  rt->kernel(w);
  ++kernels;
  kernels_from_plan += choice.kind == runtime::ChoiceKind::exact ? 1 : 0;
  info["workload"] = w.to_json();
  info["schedule"] = choice.schedule.to_json();
  info["choice"] = std::string(runtime::to_string(choice.kind));
}

bool Model::Impl::add_kernel(int i, const onnx::NodeProto& p) {
  const frontend::GraphNode& n = graph.nodes()[i];
  if (n.op == "ConvTranspose") return add_conv_transpose_kernel(i, p);
  const std::string& op = n.kernel->op();
  if (n.op == "Conv" && op == "matmul") {  // the importer's im2col task (add_conv_as_matmuls)
    add_plain_conv(n, p);
    return true;
  }
  const Shape& xs = values[n.inputs[0]].shape;
  if (n.op == "Conv" && xs.size() == 5) {  // the importer's 2-D conv of each output depth (depth_conv_dims)
    const Shape& ws = values[n.inputs.at(1)].shape;
    return add_conv3d_kernel(n, p,
                             window_nd(n, p, xs, Shape(ws.begin() + 2, ws.end()), values[n.outputs[0]].shape, false));
  }
  if (op == "conv2d" || op == "depthwise_conv2d") return add_conv(i, p);
  if (op == "matmul" || op == "batch_matmul") return add_matmul(i, p);
  return false;
}

void Model::Impl::push_matmul_kernel(const std::string& name, const Workload& w, int a, const float* b,
                                     const ChannelData& channels, int c, SlotOffsets at) {
  Step step{name, "kernel", Json::object(), nullptr};
  prepare_kernel(w, step.info);
  const long packed_at = prepare_constant_b(w, b);
  step.run = [this, w, a, b, channels, c, packed_at, at] {
    run_kernel(w, ptr[a] + at.a, b, channels, nullptr, ptr[c] + at.c, packed_at);
  };
  steps.push_back(std::move(step));
}

long Model::Impl::prepare_constant_b(const Workload& w, const float* b) {
  runtime::PreparedWeights prepared = rt->prepare_weights(w, b);
  if (!prepared.packed()) return -1;
  packed.push_back(std::move(prepared));
  return long(packed.size()) - 1;
}

bool Model::Impl::add_matmul(int i, const onnx::NodeProto& p) {
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
  const bool int8_shape = !gemm && w0.op() == "matmul";
  const Workload w8 = int8_shape ? pointwise_int8(w0.dim("M"), k, cols, ch.epilogue) : w;
  const std::optional<Int8Filter> codes =
      int8_shape && host::supports(w8) && host::runs_low_precision(w8, host::this_machine())
          ? int8_matrix(b_tensor, k, cols)
          : std::nullopt;
  const std::optional<RunGrid> grid = codes ? run_grid_of(n.inputs[0], n.name) : std::nullopt;
  const Ref a = plain(n.inputs[0], n.name);
  const Ref b = b_data ? Ref{-1, b_data} : plain(b_tensor, n.name);
  const int res = ch.residual >= 0 ? plain(ch.residual, n.name).slot : -1;
  const ChannelData channels = channel_data(ch, bias);
  const int out = output(ch.out, false);
  Step step{n.name, "kernel", Json::object(), nullptr};
  if (grid) {
    add_int8_kernel(std::move(step), w8, *grid, *codes, channels,
                    Int8Input{n.inputs[0], a, elements(values[n.inputs[0]].shape)}, res, out, outputs_of(ch));
    for (int f : ch.rest) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    return true;
  }
  prepare_kernel(w, step.info);
  const long packed_at = b.constant ? prepare_constant_b(w, b.constant) : -1;
  step.run = [this, w, a, b, channels, res, out, packed_at] {
    run_kernel(w, at(a), at(b), channels, res >= 0 ? ptr[res] : nullptr, ptr[out], packed_at);
  };
  steps.push_back(std::move(step));
  for (int f : ch.rest) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
  return true;
}

namespace {

// Each output channel o's weights (rows of per_out values) times sc[o]: a folded BN or scale.
void scale_rows(std::vector<float>& w, std::int64_t per_out, const std::vector<float>& sc) {
  for (std::size_t o = 0; o < sc.size(); ++o) {
    for (std::int64_t e = 0; e < per_out; ++e) w[o * std::size_t(per_out) + std::size_t(e)] *= sc[o];
  }
}

// OIHW weights (k outputs of cin channels, taps taps each) as the conv kernels read them: HWIO
// ([taps][cin][k]); a depthwise conv's (cin 1) as [taps][k].
std::vector<float> hwio_weights(const float* oihw, std::int64_t k, std::int64_t cin, std::int64_t taps) {
  std::vector<float> hwio(std::size_t(k * cin * taps));
  for (std::int64_t o = 0; o < k; ++o) {
    for (std::int64_t ci = 0; ci < cin; ++ci) {
      for (std::int64_t u = 0; u < taps; ++u)
        hwio[std::size_t((u * cin + ci) * k + o)] = oihw[(o * cin + ci) * taps + u];
    }
  }
  return hwio;
}

}  // namespace

bool Model::Impl::add_conv(int i, const onnx::NodeProto& p) {
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
  bool scaled = false;  // a BN or a scale folded in: the weights are no longer a filter's codes
  Chain ch = chain_of(i, k, bias, has_bias, true, [&](const std::vector<float>& sc) {
    scale_rows(oihw, per_out, sc);
    scaled = true;
  });
  if (take_requantize(ch)) take_residual_requantize(ch);
  const Workload w = kernel_workload(w0, ch.epilogue);
  if (!host::supports(w)) return false;
  absorbed.insert(ch.taken.begin(), ch.taken.end());
  const std::int64_t d = conv_attrs(p).dh;
  const std::optional<RunGrid> grid = depthwise || scaled || d > 1 ? std::nullopt : run_grid_of(n.inputs[0], n.name);
  const std::optional<Int8Filter> codes = grid ? int8_filter(n.inputs[1], k, cin, r * s) : std::nullopt;
  // A 1x1 conv with no padding reads every stride-th pixel: the product of their rows.
  const std::int64_t stride = w0.dim("stride");
  const bool pointwise = !depthwise && r == 1 && s == 1 && w0.dim("pad") == 0;
  Workload w8 = kernel_workload(w0, ch.epilogue, DType::int8);
  if (pointwise) {
    const Workload product = pointwise_int8(w0.dim("N") * w0.out_h() * w0.out_w(), c, k, ch.epilogue);
    if (stride == 1 || product.op() == "matmul") w8 = product;
  }
  const bool strided = stride > 1 && w8.op() == "matmul";
  const bool int8 = codes && host::supports(w8) && host::runs_low_precision(w8, host::this_machine());
  const float* filter = int8 ? nullptr : owned_data(hwio_weights(oihw.data(), k, cin, r * s));
  const ChannelData channels = channel_data(ch, bias);
  const int in = nhwc(n.inputs[0], n.name);
  const int res = ch.residual >= 0 ? nhwc(ch.residual, n.name) : -1;
  // An fp32 conv whose output alone a channel concat reads writes it there (concat_place).
  const bool dense_only =
      int8 || depthwise || d > 1 || !ch.rest.empty() || !ch.aliases.empty() || has(ch.epilogue, "requantize");
  const Placement place = dense_only ? Placement{} : concat_place(ch.out).value_or(Placement{});
  const int out = place.slot >= 0 ? place.slot : output(ch.out, true);
  for (const int t : ch.aliases) alias_of(ch.out, t);
  Step step{n.name, "kernel", Json::object(), nullptr};
  if (place.slot >= 0) step.info["into_concat"] = {{"offset", place.offset}, {"ld", place.ld}};
  if (int8) {
    const Shape& xs = values[n.inputs[0]].shape;
    const Int8Input input =
        strided ? Int8Input{n.inputs[0], Ref{in, nullptr}, w8.dim("M") * c, Shape{xs[0], xs[2], xs[3], xs[1]}, stride}
                : Int8Input{n.inputs[0], Ref{in, nullptr}, elements(xs)};
    add_int8_kernel(std::move(step), w8, *grid, *codes, channels, input, res, out, outputs_of(ch));
    return true;
  }
  prepare_kernel(w, step.info);
  const std::size_t packed_at = packed.size();
  if (!depthwise) packed.push_back(rt->prepare_weights(w, filter));
  if (d > 1) {  // the importer's conv over the phase images
    step.info["as"] = "dilated conv as d x d phase images";
    add_phase_conv(std::move(step), w, filter, channels, n.inputs[0], in, res, out, d, packed_at);
  } else {
    const std::shared_ptr<CodesOut> made = offer_codes(channels, outputs_of(ch), out);
    const std::int64_t at = place.offset, ld = place.ld;
    step.run = [this, w, filter, channels, in, res, out, depthwise, packed_at, made, at, ld] {
      run_kernel(w, ptr[in], filter, channels, res >= 0 ? ptr[res] : nullptr, ptr[out] + at,
                 depthwise ? -1 : long(packed_at),
                 made && made->written ? reinterpret_cast<std::uint8_t*>(ptr[made->slot]) : nullptr,
                 made && made->with_values, ld);
    };
    steps.push_back(std::move(step));
  }
  for (int f : ch.rest) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
  return true;
}

std::optional<Model::Impl::Placement> Model::Impl::concat_place(int t) {
  const int c = sole_reader(t, "Concat");
  if (c < 0) return std::nullopt;
  const frontend::GraphNode& cat = graph.nodes()[c];
  const onnx::NodeProto* proto = file->node(cat.name);
  const int y = cat.outputs[0];
  if (!proto || values[y].shape.size() != 4 || std::count(cat.inputs.begin(), cat.inputs.end(), t) != 1) {
    return std::nullopt;
  }
  const std::int64_t axis = int_attr(*proto, "axis", 0);
  if (axis != 1 && axis != -3) return std::nullopt;
  std::int64_t offset = 0;
  for (const int in : cat.inputs) {
    if (values[in].shape.size() != 4) return std::nullopt;
    if (in == t) break;
    offset += values[in].shape[1];
  }
  if (values[y].nhwc < 0) {
    output(y, true);
  } else {
    writes(values[y].nhwc);
  }
  values[t].in_concat = true;
  return Placement{values[y].nhwc, offset, values[y].shape[1]};
}

std::optional<Model::Impl::Grid> Model::Impl::grid_scale(const frontend::GraphNode& n, const std::string& type) const {
  const int shift = type == "uint8" ? 0 : type == "int8" ? 128 : -1;
  if (shift < 0 || n.inputs.size() < 2) return std::nullopt;
  const Value& scale = values[n.inputs[1]];
  if (!scale.constant || elements(scale.shape) != 1 || !(scale.constant[0] > 0)) return std::nullopt;
  return Grid{scale.constant[0], shift};
}

std::optional<Model::Impl::Grid> Model::Impl::grid_of_node(const frontend::GraphNode& n,
                                                           const std::string& type) const {
  std::optional<Grid> found = grid_scale(n, type);
  if (!found) return std::nullopt;
  Grid g = *found;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& zero = values[n.inputs[2]];
    if (!zero.constant || elements(zero.shape) != 1) return std::nullopt;
    g.zero += int(zero.constant[0]);
  }
  if (g.zero < 0 || g.zero > 255) return std::nullopt;
  return g;
}

bool Model::Impl::take_requantize(Chain& c) {
  if (!c.rest.empty()) return false;
  const int q = sole_reader(c.out, "QuantizeLinear");
  if (q < 0) return false;
  const frontend::GraphNode& qn = graph.nodes()[q];
  const std::optional<Grid> g = grid_of_node(qn, graph.tensors()[qn.outputs[0]].dtype);
  const std::vector<int> dq = g ? dequantizing_readers(qn, *file->node(qn.name)) : std::vector<int>{};
  if (dq.empty()) return false;
  c.epilogue.push_back("requantize");
  c.qout.insert(c.qout.end(), {g->scale, float(g->zero)});
  c.out = graph.nodes()[dq[0]].outputs[0];
  c.taken.push_back(q);
  c.taken.insert(c.taken.end(), dq.begin(), dq.end());
  for (std::size_t r = 1; r < dq.size(); ++r) c.aliases.push_back(graph.nodes()[dq[r]].outputs[0]);
  return true;
}

bool Model::Impl::take_residual_requantize(Chain& c) {
  if (c.residual >= 0 || !c.aliases.empty()) return false;
  const int a = sole_reader(c.out, "Add");
  if (a < 0) return false;
  const int other = other_input(graph.nodes()[a], c.out);
  if (other < 0 || other == c.out || values[other].constant || !available(other) ||
      values[other].shape != values[c.out].shape) {
    return false;
  }
  Chain grown = c;
  grown.epilogue.push_back("add");
  grown.residual = other;
  grown.out = graph.nodes()[a].outputs[0];
  grown.taken.push_back(a);
  if (const int r = sole_reader(grown.out, "Relu"); r >= 0) {
    grown.epilogue.push_back("relu");
    grown.out = graph.nodes()[r].outputs[0];
    grown.taken.push_back(r);
  }
  if (!take_requantize(grown)) return false;
  c = std::move(grown);
  return true;
}

std::optional<Model::Impl::Int8Filter> Model::Impl::int8_filter(int w, std::int64_t k, std::int64_t cin,
                                                                std::int64_t taps) const {
  const int p = graph.tensors()[w].producer;
  if (p < 0 || graph.nodes()[p].op != "DequantizeLinear") return std::nullopt;
  const frontend::GraphNode& dq = graph.nodes()[p];
  const onnx::NodeProto* proto = file->node(dq.name);
  const std::string& type = graph.tensors()[dq.inputs[0]].dtype;
  const auto* codes = file->ints(graph.tensors()[dq.inputs[0]].name);
  const auto* scale = file->floats(graph.tensors()[dq.inputs.at(1)].name);
  const auto* zero =
      dq.inputs.size() > 2 && dq.inputs[2] >= 0 ? file->ints(graph.tensors()[dq.inputs[2]].name) : nullptr;
  const std::int64_t per_out = cin * taps;
  if (!proto || (type != "int8" && type != "uint8") || !codes || std::int64_t(codes->size()) != k * per_out || !scale) {
    return std::nullopt;
  }
  const std::int64_t count = std::int64_t(scale->size());
  if ((count != 1 && (count != k || int_attr(*proto, "axis", 1) != 0)) ||
      (dq.inputs.size() > 2 && dq.inputs[2] >= 0 && (!zero || std::int64_t(zero->size()) != count))) {
    return std::nullopt;
  }
  Int8Filter f;
  f.codes.resize(std::size_t(k * per_out));
  f.scale.resize(std::size_t(k));
  for (std::int64_t o = 0; o < k; ++o) {
    const std::size_t at = std::size_t(count == 1 ? 0 : o);
    f.scale[std::size_t(o)] = (*scale)[at];
    const std::int64_t z = zero ? (*zero)[at] : 0;
    for (std::int64_t e = 0; e < per_out; ++e) {  // OIHW [o][ci][u] to HWIO [u][ci][o]
      const std::int64_t v = (*codes)[std::size_t(o * per_out + e)] - z;
      if (v < -128 || v > 127) return std::nullopt;
      const std::int64_t ci = e / taps, u = e % taps;
      f.codes[std::size_t((u * cin + ci) * k + o)] = std::int8_t(v);
    }
  }
  return f;
}

Workload Model::Impl::pointwise_int8(std::int64_t rows, std::int64_t c, std::int64_t k,
                                     const std::vector<std::string>& epilogue) const {
  const Workload tiles = Workload::from_json(
      Json{{"op", "matmul"}, {"dtype", "int8"}, {"epilogue", epilogue}, {"dims", {{"M", rows}, {"K", c}, {"N", k}}}});
  // A tile holds 16 rows of 64 codes of k: fewer would multiply mostly zeros (MobileNetV2's
  // 16- to 32-channel products ran 1.2-2x slower there, BERT's at one token 1.8x).
  constexpr std::int64_t kTileRows = 16, kTileRow = 64;
  if (rows >= kTileRows && c >= kTileRow && host::has_amx(tiles, host::this_machine()) && host::supports(tiles))
    return tiles;
  return Workload::from_json(Json{
      {"op", "conv2d"},
      {"dtype", "int8"},
      {"epilogue", epilogue},
      {"dims", {{"N", 1}, {"C", c}, {"H", 1}, {"W", rows}, {"K", k}, {"R", 1}, {"S", 1}, {"stride", 1}, {"pad", 0}}}});
}

std::shared_ptr<Model::Impl::CodesOut> Model::Impl::offer_codes(const ChannelData& channels,
                                                                const std::vector<int>& tensors, int values_slot) {
  if (!channels.qout || tensors.empty()) return nullptr;  // not requantized: no codes to give
  auto made = std::make_shared<CodesOut>();
  made->tensors = tensors;
  made->slot = int(slots.size());
  slots.push_back({elements(values[tensors[0]].shape)});
  made->values = values_slot;
  writes(made->slot);
  const float* last = channels.qout + 2 * (channels.grids - 1);  // the codes are on the last grid
  made->scale = last[0];
  made->zero = int(last[1]);
  made->steps.push_back(steps.size());
  codes_out.push_back(made);
  for (int t : tensors) codes_of[t] = made;
  return made;
}

void Model::Impl::compensate(std::int32_t* column, std::int64_t n, int zero) {
  for (std::int64_t j = 0; j < n; ++j) column[n + j] = zero * column[j];
}

std::vector<int> Model::Impl::outputs_of(const Chain& c) {
  std::vector<int> out = {c.out};
  out.insert(out.end(), c.aliases.begin(), c.aliases.end());
  return out;
}

void Model::Impl::settle_codes() {
  for (const auto& c : codes_out) {
    std::size_t consumers = 0;
    bool output = false;
    for (int t : c->tensors) {
      consumers += graph.tensors()[t].consumers.size();
      output = output || graph.tensors()[t].output;
    }
    const std::size_t readers = c->steps.size() - 1;
    // Codes for the int8 readers wherever there are any: each would make them from the values
    // in a pass of its own; the values as well where another reader or the graph's output needs them.
    c->written = readers > 0;
    c->with_values = output || readers != consumers;
    // The arena keeps no room for codes never written, nor for the readers' own once they are.
    for (int unused : c->written ? c->reader_codes : std::vector<int>{c->slot}) slots[std::size_t(unused)].bytes = 0;
    if (!c->written) continue;
    steps[c->steps[0]].info["codes_out"] = true;  // describe() shows the hand-off
    if (c->with_values) steps[c->steps[0]].info["values_out"] = true;
    for (std::size_t r = 1; r < c->steps.size(); ++r) steps[c->steps[r]].info["codes_in"] = true;
  }
}

std::optional<Model::Impl::RunGrid> Model::Impl::run_grid_of(int t, const std::string& who) {
  const int p = graph.tensors()[t].producer;
  if (p < 0 || graph.nodes()[p].op != "DequantizeLinear") return std::nullopt;
  const frontend::GraphNode& dq = graph.nodes()[p];
  const std::optional<Grid> found = grid_scale(dq, graph.tensors()[dq.inputs[0]].dtype);
  if (!found) return std::nullopt;
  RunGrid g{found->scale, Ref{-1, owned_data({0.0f})}, found->zero};
  if (dq.inputs.size() > 2 && dq.inputs[2] >= 0) {
    if (elements(values[dq.inputs[2]].shape) != 1 || !available(dq.inputs[2])) return std::nullopt;
    g.zero = plain(dq.inputs[2], who);
  }
  return g;
}

std::optional<Model::Impl::Int8Filter> Model::Impl::int8_matrix(int b, std::int64_t k, std::int64_t n) const {
  const Value& v = values[b];
  if (!v.constant || v.shape.size() != 2 || v.shape[0] != k || v.shape[1] != n) return std::nullopt;
  Int8Filter f;
  f.codes.resize(std::size_t(k * n));
  f.scale.assign(std::size_t(n), 1.0f);
  for (std::int64_t e = 0; e < k * n; ++e) {
    const float x = v.constant[e];
    if (x != std::nearbyint(x) || x < -128.0f || x > 127.0f) return std::nullopt;
    f.codes[std::size_t(e)] = std::int8_t(x);
  }
  return f;
}

void Model::Impl::add_int8_kernel(Step step, const Workload& w, const RunGrid& g, const Int8Filter& f,
                                  const ChannelData& channels, const Int8Input& in, int res, int out,
                                  const std::vector<int>& out_tensors) {
  const std::int64_t n = std::int64_t(f.scale.size()), k = std::int64_t(f.codes.size()) / n;
  std::vector<float> scale(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) scale[std::size_t(j)] = g.scale * f.scale[std::size_t(j)];
  auto sums = std::make_unique<std::vector<std::int32_t>>(std::size_t(2 * n), 0);  // column sums, then z times them
  for (std::int64_t e = 0; e < k; ++e) {
    for (std::int64_t j = 0; j < n; ++j) (*sums)[std::size_t(j)] += f.codes[std::size_t(e * n + j)];
  }
  std::int32_t* column = sums->data();
  owned_sums.push_back(std::move(sums));
  // A's zero point known at load (a static model's): its compensation computed once, here.
  const bool zero_known = g.zero.constant != nullptr;
  if (zero_known) compensate(column, n, int(g.zero.constant[0]) + g.shift);
  const float* qscale = owned_data(std::move(scale));
  prepare_kernel(w, step.info);
  step.info["as"] = "int8";
  const std::size_t packed_at = packed.size();
  packed.push_back(rt->prepare_weights(w, f.codes.data()));
  slots.push_back({in.count});  // A's u8 codes
  const int codes = int(slots.size()) - 1;
  writes(codes);
  reads(codes);
  // The producer's codes, where it makes them on this grid: read in place of making them.
  std::shared_ptr<CodesOut> given;
  if (const auto found = codes_of.find(in.tensor);
      found != codes_of.end() && in.stride == 1 && in.values.slot == found->second->values && g.zero.constant &&
      found->second->scale == g.scale && found->second->zero == int(g.zero.constant[0]) + g.shift) {
    given = found->second;
    given->steps.push_back(steps.size());
    given->reader_codes.push_back(codes);
    reads(given->slot);
  }
  const std::shared_ptr<CodesOut> made = offer_codes(channels, out_tensors, out);
  step.run = [this, w, g, channels, in, res, out, codes, column, n, qscale, packed_at, given, made, zero_known] {
    const int z = int(at(g.zero)[0]) + g.shift;
    if (!zero_known) compensate(column, n, z);  // DynamicQuantizeLinear's, new each run
    auto* q = reinterpret_cast<std::uint8_t*>(ptr[codes]);
    if (given && given->written)
      q = reinterpret_cast<std::uint8_t*>(ptr[given->slot]);
    else if (in.stride > 1)
      grid_codes_strided(at(in.values), in.image, in.stride, g.scale, z, q, threads);
    else
      grid_codes(at(in.values), in.count, g.scale, z, q, threads);
    host::AtvossArgs args{};
    args.qa = q;
    args.qzero = z;
    args.qscale = qscale;
    args.qcomp = column + n;
    args.bias = channels.bias;
    args.qout = channels.qout;
    args.residual = res >= 0 ? ptr[res] : nullptr;
    args.c = ptr[out];
    if (made && made->written) {
      args.qc = reinterpret_cast<std::uint8_t*>(ptr[made->slot]);
      args.qc_with_c = made->with_values;
    }
    runtime::Runtime::use_prepared(w, packed[packed_at], args);
    rt->run(w, args);
  };
  steps.push_back(std::move(step));
}

void Model::Impl::run_kernel(const Workload& w, const float* a, const float* b, const ChannelData& channels,
                             const float* residual, float* c, long packed_at, std::uint8_t* qc, bool qc_with_c,
                             std::int64_t c_ld) {
  host::AtvossArgs args{};
  args.a = a;
  args.b = b;
  args.c = c;
  args.c_ld = long(c_ld);
  args.bias = channels.bias;
  args.slope = channels.slope;
  args.qout = channels.qout;
  args.residual = residual;
  args.qc = qc;
  args.qc_with_c = qc && qc_with_c;
  if (packed_at >= 0) runtime::Runtime::use_prepared(w, packed[std::size_t(packed_at)], args);
  rt->run(w, args);
}

void Model::Impl::add_phase_conv(Step step, const Workload& w, const float* filter, const ChannelData& channels, int x,
                                 int in, int res, int out, std::int64_t d, std::size_t packed_at) {
  const Shape& xs = values[x].shape;
  const std::int64_t batch = xs[0], h = xs[2], wd = xs[3], c = xs[1], k = w.dim("K");
  const std::int64_t phase_in = d * d * w.dim("H") * w.dim("W") * c, phase_out = phase_in / c * k;
  const int phases_in = new_slot({batch * phase_in}), phases_out = new_slot({batch * phase_out});
  const int phases_res = res >= 0 ? new_slot({batch * phase_out}) : -1;
  for (int slot : {phases_in, phases_out, phases_res}) writes(slot), reads(slot);
  step.run = [=, this] {
    for (std::int64_t b = 0; b < batch; ++b) {
      to_phases(ptr[in] + b * h * wd * c, h, wd, c, d, ptr[phases_in] + b * phase_in, threads);
      if (res >= 0) to_phases(ptr[res] + b * h * wd * k, h, wd, k, d, ptr[phases_res] + b * phase_out, threads);
    }
    run_kernel(w, ptr[phases_in], filter, channels, res >= 0 ? ptr[phases_res] : nullptr, ptr[phases_out],
               long(packed_at));
    for (std::int64_t b = 0; b < batch; ++b) {
      from_phases(ptr[phases_out] + b * phase_out, h, wd, k, d, ptr[out] + b * h * wd * k, threads);
    }
  };
  steps.push_back(std::move(step));
}

bool Model::Impl::add_conv3d_kernel(const frontend::GraphNode& n, const onnx::NodeProto& p, const WindowNd& a) {
  const Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs[1]].shape, ys = values[n.outputs[0]].shape;
  const auto* weights = file->floats(p.input(1));
  std::vector<std::int64_t> pads = a.pad_begin;
  pads.insert(pads.end(), a.pad_end.begin(), a.pad_end.end());
  const auto dims =
      weights ? frontend::depth_conv_dims(xs, ws, ys, a.groups, a.strides, a.dilations, pads) : std::nullopt;
  if (!dims) return false;
  const std::int64_t c = xs[1], k = ys[1], kd = ws[2], taps = ws[3] * ws[4], per_out = c * kd * taps;
  std::vector<float> oidhw = *weights, bias(std::size_t(k), 0.0f);
  const float* b = constant_of(n, p, 2, k);
  if (b) bias.assign(b, b + k);
  // The importer's task grows its epilogue through the nodes after it (graph_fusion.hpp).
  Chain ch = chain_of(graph.node_index(n.name), k, bias, b != nullptr, true,
                      [&](const std::vector<float>& sc) { scale_rows(oidhw, per_out, sc); });
  const Workload w =
      Workload::from_json(Json{{"op", "conv2d"}, {"dtype", "float32"}, {"dims", *dims}, {"epilogue", ch.epilogue}});
  if (!host::supports(w)) return false;
  absorb_epilogue(graph.node_index(n.name), ch);
  // ONNX's [K][C][kd][kh x kw] as [K][kd][C][kh x kw]: the 2-D kernel's input channel is (depth
  // tap, channel).
  std::vector<float> by_tap(oidhw.size());
  transpose(oidhw.data(), {k, c, kd, taps}, {0, 2, 1, 3}, by_tap.data());
  const float* filter = owned_data(hwio_weights(by_tap.data(), k, kd * c, taps));
  const ChannelData channels = channel_data(ch, bias);
  const DepthTaps depth{xs[2], xs[3], xs[4], c, kd, a.strides[0], a.pad_begin[0], a.dilations[0]};
  const int in = nhwc(n.inputs[0], n.name);
  const int res = ch.residual >= 0 ? nhwc(ch.residual, n.name) : -1;
  const int columns = new_slot({xs[3], xs[4], kd * c});
  writes(columns);
  reads(columns);
  const int out = output(ch.out, true);
  Step step{n.name, "kernel", Json{{"as", "3-D conv, depth by depth"}}, nullptr};
  prepare_kernel(w, step.info);
  const std::size_t packed_at = packed.size();
  packed.push_back(rt->prepare_weights(w, filter));
  const std::int64_t batch = xs[0], in_image = elements(Shape(xs.begin() + 1, xs.end())), depth_out = ys[2];
  const std::int64_t out_plane = ys[3] * ys[4] * k;
  step.run = [this, w, filter, channels, depth, in, res, columns, out, packed_at, batch, in_image, depth_out,
              out_plane] {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t od = 0; od < depth_out; ++od) {
        gather_depth_taps(ptr[in] + b * in_image, depth, od, ptr[columns], threads);
        const std::int64_t at_out = (b * depth_out + od) * out_plane;
        run_kernel(w, ptr[columns], filter, channels, res >= 0 ? ptr[res] + at_out : nullptr, ptr[out] + at_out,
                   long(packed_at));
      }
    }
  };
  steps.push_back(std::move(step));
  run_after(ch.rest);
  return true;
}

void Model::Impl::absorb_epilogue(int i, const Chain& ch) {
  for (int f : fused_nodes(i)) {
    if (std::find(ch.rest.begin(), ch.rest.end(), f) == ch.rest.end()) absorbed.insert(f);
  }
}

void Model::Impl::run_after(const std::vector<int>& rest) {
  for (int f : rest) {
    add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
    absorbed.insert(f);
  }
}

bool Model::Impl::add_conv_transpose_kernel(int i, const onnx::NodeProto& p) {
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
  push_matmul_kernel(n.name, w, in, b_data, ChannelData{}, windows);
  reads(windows);
  const int y = output(n.outputs[0], true);
  push(
      n, [=, this] { col2im_nhwc(ptr[windows], xs, kh, kw, a, bias, ptr[y], ys, threads); },
      Json{{"as", "scatter-add of the windows"}});
  return true;
}

ConvAttrs Model::Impl::conv_attrs(const onnx::NodeProto& p) {
  ConvAttrs a;
  a.groups = int_attr(p, "group", 1);
  const auto strides = ints_attr(p, "strides"), dil = ints_attr(p, "dilations"), pads = ints_attr(p, "pads");
  if (strides.size() == 2) a.sh = strides[0], a.sw = strides[1];
  if (dil.size() == 2) a.dh = dil[0], a.dw = dil[1];
  if (pads.size() == 4) a.pad_top = pads[0], a.pad_left = pads[1];
  // A 1-D conv's, along the width of its [N, C, 1, L] view.
  if (strides.size() == 1) a.sw = strides[0];
  if (dil.size() == 1) a.dw = dil[0];
  if (pads.size() == 2) a.pad_left = pads[0];
  return a;
}

void Model::Impl::add_plain_conv(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs.at(1)].shape, ys = values[n.outputs[0]].shape;
  // A 1-D conv ([N, C, L]: the audio front ends of Whisper and wav2vec2, text CNNs) runs as the
  // 2-D conv of its [N, C, 1, L] view, which has the same bytes.
  const bool one_d = xs.size() == 3 && ws.size() == 3 && ys.size() == 3;
  if (one_d) {
    for (Shape* s : {&xs, &ws, &ys}) s->insert(s->begin() + 2, 1);
  }
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) unsupported(n, "1-D and 2-D convolutions only");
  ConvAttrs a = conv_attrs(p);
  const std::string auto_pad = string_attr(p, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const std::int64_t ph = std::max<std::int64_t>(0, (ys[2] - 1) * a.sh + (ws[2] - 1) * a.dh + 1 - xs[2]);
    const std::int64_t pw = std::max<std::int64_t>(0, (ys[3] - 1) * a.sw + (ws[3] - 1) * a.dw + 1 - xs[3]);
    a.pad_top = auto_pad == "SAME_LOWER" ? (ph + 1) / 2 : ph / 2;
    a.pad_left = auto_pad == "SAME_LOWER" ? (pw + 1) / 2 : pw / 2;
  }
  if (one_d ? add_conv1d_as_matmuls(n, p, xs, ws, ys, a) : add_conv_as_matmuls(n, p, xs, ws, ys, a).has_value()) return;
  const Ref x = plain(n.inputs[0], n.name), w = plain(n.inputs[1], n.name);
  const float* bias = constant_of(n, p, 2, ys[1]);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { conv_nchw(at(x), xs, at(w), ws, bias, ptr[y], ys, a); });
}

bool Model::Impl::conv_as_matmuls_fits(const onnx::NodeProto& p, const Shape& xs, const Shape& ws,
                                       const ConvAttrs& a) const {
  return file->floats(p.input(1)) && a.groups >= 1 && xs[1] == ws[1] * a.groups && ws[0] % a.groups == 0;
}

// The view's NHWC is [N, L, C]: the input transposed to it, the 2-D route, the result back.
bool Model::Impl::add_conv1d_as_matmuls(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                        const Shape& ws, const Shape& ys, const ConvAttrs& a) {
  if (!conv_as_matmuls_fits(p, xs, ws, a)) return false;
  const Ref x = plain(n.inputs[0], n.name);
  const int in = new_slot({xs[0], xs[3], xs[1]}), out = new_slot({ys[0], ys[3], ys[1]});
  writes(in);
  push(
      n, [=, this] { nchw_to_nhwc(at(x), ptr[in], xs, threads); }, Json{{"as", "to NLC"}});
  reads(in);
  writes(out);
  const Chain ch = *add_conv_as_matmuls(n, p, xs, ws, ys, a, {in, out});
  reads(out);
  const int y = output(ch.out, false);
  push(
      n, [=, this] { nhwc_to_nchw(ptr[out], ptr[y], ys, threads); }, Json{{"as", "to NCL"}});
  run_after(ch.rest);
  return true;
}

std::optional<Model::Impl::Chain> Model::Impl::add_conv_as_matmuls(const frontend::GraphNode& n,
                                                                   const onnx::NodeProto& p, const Shape& xs,
                                                                   const Shape& ws, const Shape& ys, const ConvAttrs& a,
                                                                   const NhwcSlots& io) {
  if (!conv_as_matmuls_fits(p, xs, ws, a)) return std::nullopt;
  const auto* weights = file->floats(p.input(1));
  const std::int64_t groups = a.groups, k = ws[0], cg = ws[1], r = ws[2], s = ws[3], kg = k / groups;
  const std::int64_t pixels = ys[0] * ys[2] * ys[3], depth = r * s * cg;
  const float* bias = constant_of(n, p, 2, k);
  const bool own_slots = io.in < 0;
  if (own_slots && groups > 1 && grouped_conv_fits(k, cg, kg)) {
    add_grouped_conv(n, xs, ys, GroupedConv{r, s, cg, a, false}, pack_grouped_weights(weights->data(), k, cg, r, s),
                     bias);
    Chain done;
    done.out = n.outputs[0];
    return done;
  }
  // One group: a matmul with the bias and the fused nodes it computes; several: one
  // batch_matmul over the groups (a kernel call per group of ResNeXt's 32 cost a parallel
  // region each), the bias added as the groups are joined.
  Json dims{{"M", pixels}, {"N", kg}, {"K", depth}};
  if (groups > 1) dims["B"] = groups;
  const int node = graph.node_index(n.name);
  std::vector<float> bias_values(std::size_t(k), 0.0f);
  if (bias) bias_values.assign(bias, bias + k);
  Chain ch;
  if (groups == 1) {
    ch = chain_of(node, k, bias_values, bias != nullptr, true, nullptr);
  } else {
    ch.out = n.outputs[0];
    ch.rest = fused_nodes(node);
  }
  absorb_epilogue(node, ch);
  const Workload w = Workload::from_json(Json{
      {"op", groups > 1 ? "batch_matmul" : "matmul"}, {"dtype", "float32"}, {"dims", dims}, {"epilogue", ch.epilogue}});
  const ChannelData channels = groups == 1 ? channel_data(ch, bias_values) : ChannelData{};
  std::vector<float> b(weights->size());  // [g][(u, v, ci)][ko] from ONNX's [g][ko][ci][(u, v)]
  transpose(weights->data(), {groups, kg, cg, r * s}, {0, 3, 2, 1}, b.data());
  const int in = own_slots ? nhwc(n.inputs[0], n.name) : io.in;
  const auto out = [&] { return own_slots ? output(ch.out, true) : io.out; };
  const std::vector<frontend::ConvRegion> regions =
      groups == 1 ? frontend::sparse_conv_regions({xs[2], ys[2], r, a.sh, a.pad_top, a.dh},
                                                  {xs[3], ys[3], s, a.sw, a.pad_left, a.dw})
                  : std::vector<frontend::ConvRegion>{};
  if (!regions.empty()) {
    add_conv_regions(n, RegionConv{xs, ys, a, s, b, regions, ch.epilogue, channels}, in, out);
    if (own_slots) run_after(ch.rest);
    return ch;
  }
  const float* b_data = owned_data(std::move(b));
  const int rows = new_slot({groups, pixels, depth});
  writes(rows);
  push(
      n, [=, this] { im2col_nhwc(ptr[in], xs, r, s, a, ptr[rows], ys, threads); }, Json{{"as", "im2col"}});
  reads(rows);
  const int parts = groups == 1 ? out() : new_slot({groups, pixels, kg});
  writes(parts);
  push_matmul_kernel(n.name, w, rows, b_data, channels, parts);
  if (groups > 1) {
    reads(parts);
    const int y = out();
    push(
        n, [=, this] { join_groups(ptr[parts], groups, pixels, kg, bias, ptr[y], threads); },
        Json{{"as", "groups joined"}});
  }
  if (own_slots) run_after(ch.rest);
  return ch;
}

void Model::Impl::add_conv_regions(const frontend::GraphNode& n, const RegionConv& rc, int in,
                                   const std::function<int()>& out) {
  const std::int64_t images = rc.xs[0], c = rc.xs[1], k = rc.ys[1];
  std::int64_t rows_size = 0, parts_size = 0;
  for (const frontend::ConvRegion& g : rc.regions) {
    rows_size += images * g.pixels() * g.taps() * c;
    parts_size += images * g.pixels() * k;
  }
  const int rows = new_slot({rows_size});
  writes(rows);
  push(
      n,
      [=, this, xs = rc.xs, regions = rc.regions, a = rc.a] {
        im2col_regions_nhwc(ptr[in], xs, regions, a, ptr[rows], threads);
      },
      Json{{"as", "im2col of " + std::to_string(rc.regions.size()) + " regions"}});
  reads(rows);
  const int parts = new_slot({parts_size});
  writes(parts);
  SlotOffsets at;
  for (const frontend::ConvRegion& g : rc.regions) {
    const Workload w = Workload::from_json(Json{{"op", "matmul"},
                                                {"dtype", "float32"},
                                                {"dims", {{"M", images * g.pixels()}, {"N", k}, {"K", g.taps() * c}}},
                                                {"epilogue", rc.epilogue}});
    push_matmul_kernel(n.name, w, rows, owned_data(region_weights(rc, g)), rc.channels, parts, at);
    at.a += images * g.pixels() * g.taps() * c;
    at.c += images * g.pixels() * k;
  }
  reads(parts);
  const int y = out();
  push(
      n,
      [=, this, ys = rc.ys, regions = rc.regions] { scatter_regions_nhwc(ptr[parts], regions, ptr[y], ys, threads); },
      Json{{"as", "regions to their pixels"}});
}

std::vector<float> Model::Impl::region_weights(const RegionConv& rc, const frontend::ConvRegion& g) {
  const std::int64_t c = rc.xs[1], k = rc.ys[1];
  std::vector<float> b;
  b.reserve(std::size_t(g.taps() * c * k));
  for (std::int64_t u = g.h.tap_begin; u < g.h.tap_end; ++u) {
    for (std::int64_t v = g.w.tap_begin; v < g.w.tap_end; ++v) {
      const auto first = rc.b.begin() + (u * rc.s + v) * c * k;
      b.insert(b.end(), first, first + c * k);
    }
  }
  return b;
}

void Model::Impl::add_grouped_conv(const frontend::GraphNode& n, const Shape& xs, const Shape& ys, GroupedConv g,
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

ConvAttrs Model::Impl::conv_transpose_attrs(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                            const Shape& ws, const Shape& ys) const {
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4) unsupported(n, "1-D and 2-D transposed convolutions only");
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

void Model::Impl::add_conv_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  Shape xs = values[n.inputs[0]].shape, ws = values[n.inputs.at(1)].shape, ys = values[n.outputs[0]].shape;
  // A 1-D one (a vocoder's upsampling) as the 2-D one of its [N, C, 1, L] view, as add_plain_conv.
  if (xs.size() == 3 && ws.size() == 3 && ys.size() == 3) {
    for (Shape* s : {&xs, &ws, &ys}) s->insert(s->begin() + 2, 1);
  }
  const ConvAttrs a = conv_transpose_attrs(n, p, xs, ws, ys);
  const Ref x = plain(n.inputs[0], n.name), w = plain(n.inputs[1], n.name);
  const float* bias = constant_of(n, p, 2, ys[1]);
  const int y = output(n.outputs[0], false);
  push(n, [=, this] { conv_transpose_nchw(at(x), xs, at(w), ws, bias, ptr[y], ys, a); });
}

void Model::Impl::add_plain_gemm(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const Shape as = values[n.inputs[0]].shape, bs = values[n.inputs.at(1)].shape;
  const bool gemm = n.op == "Gemm";
  if (!gemm && (bs.size() != 2 || as.size() < 2)) {
    const Ref a = plain(n.inputs[0], n.name), b = plain(n.inputs[1], n.name);
    if (as.empty() || bs.empty()) unsupported(n, "scalar operands");
    const int y = output(n.outputs[0], false);
    push(n, [=, this] { engine::matmul(at(a), as, at(b), bs, ptr[y], threads); });
    return;
  }
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
    engine::gemm(at(a), at(b), has_c ? at(c) : nullptr, cs, ptr[y], m, cols, k, ta, tb, alpha, beta, threads);
  });
}

}  // namespace atvoss::engine
