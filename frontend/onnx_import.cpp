// ONNX import. Read first: import_onnx() (read, check and bind the model in
// onnx_bound_model.cpp, build the graph, fuse, derive the tasks), then the
// per-op extractors (conv_task, matmul_task, ...), which give each node its own kernel; the
// fusion pass (graph_fusion.hpp) then decides which nodes run inside another's kernel.
#include "frontend/onnx_import.hpp"
#include "frontend/shape_folding.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include <onnx/onnx_pb.h>

#include "core/error.hpp"
#include "frontend/graph_fusion.hpp"
#include "frontend/internal/graph_index.hpp"
#include "frontend/onnx_attributes.hpp"
#include "frontend/phase_conv.hpp"

namespace atvoss::frontend {
namespace {

using Shape = std::vector<std::int64_t>;

// A node's attributes by name: ints, floats and strings as values, their lists as arrays;
// tensors and graphs by their kind only (a node not tuned keeps what it was given).
Json attributes_of(const onnx::NodeProto& n) {
  Json j = Json::object();
  for (const auto& a : n.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        j[a.name()] = a.i();
        break;
      case onnx::AttributeProto::FLOAT:
        j[a.name()] = a.f();
        break;
      case onnx::AttributeProto::STRING:
        j[a.name()] = a.s();
        break;
      case onnx::AttributeProto::INTS:
        j[a.name()] = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        j[a.name()] = std::vector<float>(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::STRINGS:
        j[a.name()] = std::vector<std::string>(a.strings().begin(), a.strings().end());
        break;
      default:
        j[a.name()] = onnx::AttributeProto::AttributeType_Name(a.type());
    }
  }
  return j;
}

bool all_equal(const std::vector<std::int64_t>& v, std::int64_t value) {
  for (auto x : v) {
    if (x != value) return false;
  }
  return true;
}

std::int64_t product(Shape::const_iterator b, Shape::const_iterator e) {
  std::int64_t p = 1;
  for (; b != e; ++b) p *= *b;
  return p;
}

class Extractor {
 public:
  Extractor(const onnx::GraphProto& graph, const OnnxImportOptions& options)
      : graph_(graph), index_(index_graph(graph)), options_(options) {}

  // The model's dataflow, each node with its own kernel, or why it has none, or as a view.
  Graph build() {
    Graph g = tensors_and_nodes();
    for (int i = 0; i < graph_.node_size(); ++i) describe(graph_.node(i), g.node(i));
    return g;
  }

 private:
  // Every node, and every tensor with its shape and bytes where known.
  Graph tensors_and_nodes() const {
    Graph g;
    auto tensor = [&](const std::string& t) {
      if (t.empty()) return;
      const Shape* s = shape_of(t);
      const auto type = index_.elem_types.find(t);
      g.add_tensor(t, s ? *s : Shape{}, tensor_bytes(t), index_.constants.count(t) > 0,
                   type == index_.elem_types.end() ? "" : elem_type_name(type->second));
    };
    for (const auto& node : graph_.node()) {
      for (const auto& in : node.input()) tensor(in);
      for (const auto& out : node.output()) tensor(out);
      g.add_node(node_name(node), node.op_type(), {node.input().begin(), node.input().end()},
                 {node.output().begin(), node.output().end()});
    }
    for (const auto& out : index_.graph_outputs) g.mark_output(out);
    return g;
  }

  void describe(const onnx::NodeProto& node, GraphNode& out) {
    if (is_folded(node)) {
      out.view = true;
      return;
    }
    out.step = step_of(node);
    out.bytes = node_bytes(node);
    kernel_ = &out;
    std::optional<std::string> why_not;
    try {
      why_not = task_of(node);
    } catch (const Error& e) {  // a shape no workload takes (e.g. a window wider than its input)
      why_not = node.op_type() + " (shape not supported: " + e.what() + ")";
    }
    if (why_not) {
      out.kernel.reset();
      out.reason = *why_not == node.op_type() ? "no lowering for " + node.op_type() : *why_not;
      out.attributes = attributes_of(node);
    } else if (!out.kernel) {
      out.view = true;  // a permutation that moves nothing
    }
  }

  // The epilogue op the node is when it runs inside its producer's kernel (GraphNode::step).
  std::string step_of(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    if (const auto act = activation_of(n)) return *act;
    if (op == "BatchNormalization") return "batchnorm";
    if (op == "LayerNormalization") return int_attr(n, "axis", -1) == -1 ? "layernorm" : "";
    if ((op == "Add" || op == "Sum") && n.input_size() == 2) return "add";  // Sum: torch's residual
    if ((op == "Mul" || op == "Div") && n.input_size() == 2) return "scale";
    return "";
  }

  // Adds the node's task; what to report instead when it has none.
  std::optional<std::string> task_of(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    // Every extractor reads the first input and output (protobuf aborts on a missing one).
    if (node.input_size() == 0 || node.input(0).empty() || node.output_size() == 0 || node.output(0).empty()) {
      return op + " (no input or no output)";
    }
    if (op == "Conv") return conv_task(node);
    if (op == "ConvTranspose") return conv_transpose_task(node);
    if (op == "MatMul") return matmul_task(node);
    if (op == "Gemm") return gemm_task(node);
    if (op == "Softmax" || op == "LayerNormalization" || op == "LRN") return row_task(node);
    if (op == "MaxPool" || op == "AveragePool") return pool_task(node);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool_task(node);
    if (op == "Add" || op == "Sum" || op == "Mul" || op == "Sub" || op == "Div") return binary_task(node);
    if (activation_of(node) || op == "BatchNormalization") return map_task(node);
    if (op == "Concat") return concat_task(node);
    if (op == "Transpose") return transpose_task(node);
    if (op == "Upsample" || op == "Resize") return upsample_task(node);
    return op;
  }

  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? n.op_type() + ":" + (n.output_size() ? n.output(0) : "") : n.name();
  }

  // Bytes of one element of tensor as the target runs it: floats in the tuned float dtype.
  double element_bytes(const std::string& tensor) const {
    const auto it = index_.elem_types.find(tensor);
    const int type = it == index_.elem_types.end() ? onnx::TensorProto::FLOAT : it->second;
    const int stored = frontend::element_bytes(type);
    const bool tuned = type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE || stored == 0;
    return tuned ? dtype_bytes(options_.float_dtype) : stored;
  }

  // Bytes a node reads and writes once: every input and output whose shape is known.
  double node_bytes(const onnx::NodeProto& n) const {
    double total = 0;
    for (const auto& in : n.input()) total += tensor_bytes(in);
    for (const auto& out : n.output()) total += tensor_bytes(out);
    return total;
  }

  // Bytes of a tensor whose shape is known; 0 otherwise (and for an omitted optional input).
  double tensor_bytes(const std::string& t) const {
    const Shape* s = t.empty() ? nullptr : shape_of(t);
    return s ? double(product(s->begin(), s->end())) * element_bytes(t) : 0;
  }

  const Shape* shape_of(const std::string& tensor) const {
    auto it = index_.shapes.find(tensor);
    return it == index_.shapes.end() ? nullptr : &it->second;
  }

  DType dtype_of(const std::string& tensor) const {
    auto it = index_.elem_types.find(tensor);
    if (it == index_.elem_types.end()) return options_.float_dtype;
    switch (it->second) {
      case onnx::TensorProto::FLOAT16:
        return DType::float16;
      case onnx::TensorProto::BFLOAT16:
        return DType::bfloat16;
      case onnx::TensorProto::INT8:
      case onnx::TensorProto::UINT8:
        return DType::int8;
      default:
        return options_.float_dtype;
    }
  }

  // Views and inference no-ops: no data moves, nothing to tune or report.
  bool is_folded(const onnx::NodeProto& node) const {
    static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
    if (views.count(node.op_type())) return true;
    for (const auto& o : node.output()) {
      if (!index_.constants.count(o)) return false;
    }
    return node.output_size() > 0;
  }

  // The epilogue op an activation node is (Clip as ReLU6 clamps like ReLU), if any: its own
  // where the host kernels compute it (a host job tunes the kernel the engine runs). The other
  // unary activations run as the one of the same vector cost: a comparison and a select (Elu,
  // Selu, ThresholdedRelu as leaky_relu), one transcendental (Softsign, Softplus, and a
  // HardSigmoid other than torch's as sigmoid).
  static std::optional<std::string> activation_of(const onnx::NodeProto& n) {
    static const std::map<std::string, std::string> ops = {{"Relu", "relu"},
                                                           {"Clip", "relu"},
                                                           {"LeakyRelu", "leaky_relu"},
                                                           {"Elu", "leaky_relu"},
                                                           {"Selu", "leaky_relu"},
                                                           {"PRelu", "leaky_relu"},
                                                           {"ThresholdedRelu", "leaky_relu"},
                                                           {"Sigmoid", "sigmoid"},
                                                           {"Tanh", "tanh"},
                                                           {"Softsign", "sigmoid"},
                                                           {"Softplus", "sigmoid"},
                                                           {"HardSigmoid", "sigmoid"},
                                                           {"HardSwish", "hardswish"},
                                                           {"Mish", "mish"}};
    if (n.op_type() == "Gelu") return string_attr(n, "approximate", "none") == "tanh" ? "gelu" : "gelu_erf";
    if (is_torch_hardsigmoid(n)) return "hardsigmoid";
    const auto it = ops.find(n.op_type());
    return it == ops.end() ? std::nullopt : std::optional(it->second);
  }

  // [rows, last dim] of a tensor: the rows template's M x N.
  std::optional<std::pair<std::int64_t, std::int64_t>> rows_of(const std::string& tensor) const {
    const Shape* x = shape_of(tensor);
    if (!x || x->empty()) return std::nullopt;
    return std::make_pair(product(x->begin(), x->end() - 1), x->back());
  }

  Json rows_workload(const std::string& op, const onnx::NodeProto& node, std::int64_t m, std::int64_t n) const {
    return Json{{"op", op}, {"dtype", to_string(dtype_of(node.input(0)))}, {"dims", {{"M", m}, {"N", n}}}};
  }

  // The node's own kernel (describe() points kernel_ at the node being described).
  void add_task(const Json& workload, const onnx::NodeProto&) { kernel_->kernel = Workload::from_json(workload); }

  std::optional<std::string> conv_task(const onnx::NodeProto& node) {
    const Shape* x = node.input_size() >= 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* w = x ? shape_of(node.input(1)) : nullptr;
    if (x && w && x->size() == 5) return conv3d_task(node, *x, *w);
    // A 1-D conv (Whisper's and wav2vec2's audio front ends, text CNNs): the engine runs the
    // im2col matmul of its [N, C, 1, L] view.
    if (x && w && x->size() == 3 && w->size() == 3) return im2col_task(node, "Conv (1-D, groups)");
    if (!x || !w || x->size() != 4 || w->size() != 4) return "Conv (unknown or non-2D shape)";
    const auto group = int_attr(node, "group", 1);
    const auto strides = ints_attr(node, "strides");
    const auto pads = ints_attr(node, "pads");
    const auto dilations = ints_attr(node, "dilations");
    const std::int64_t stride = strides.empty() ? 1 : strides[0];
    const std::int64_t r = (*w)[2], s = (*w)[3];
    std::int64_t pad = pads.empty() ? 0 : pads[0];
    const std::string auto_pad = string_attr(node, "auto_pad");
    if (!all_equal(dilations, 1) && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && all_equal(pads, pad) &&
        index_.constants.count(node.input(1))) {
      if (const Shape* y = shape_of(node.output(0))) {
        if (auto dims = phase_conv_dims(*x, *w, *y, group, strides, dilations, pad)) {
          return conv2d_task(node, std::move(*dims));
        }
      }
    }
    if (!all_equal(strides, stride) || !all_equal(dilations, 1)) {
      return im2col_task(node, "Conv (dilated or uneven stride)");
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // SAME pads total (out - 1) x stride + kernel - in per axis: even on both axes, or uneven.
      const Shape* y = shape_of(node.output(0));
      if (!y || y->size() != 4) return "Conv (unknown output shape)";
      const std::int64_t ph = std::max<std::int64_t>(0, ((*y)[2] - 1) * stride + r - (*x)[2]);
      const std::int64_t pw = std::max<std::int64_t>(0, ((*y)[3] - 1) * stride + s - (*x)[3]);
      if (ph != pw || ph % 2 != 0) return im2col_task(node, "Conv (uneven padding)");
      pad = ph / 2;
    }
    if (!all_equal(pads, pad)) return im2col_task(node, "Conv (uneven padding)");
    const std::int64_t c = (*x)[1], k = (*w)[0];
    std::string op = "conv2d";
    if (group != 1) op = group == c && k == c && (*w)[1] == 1 ? "depthwise_conv2d" : "group_conv2d";
    Json dims{{"N", (*x)[0]}, {"C", c}, {"H", (*x)[2]},     {"W", (*x)[3]},
              {"R", r},       {"S", s}, {"stride", stride}, {"pad", pad}};
    if (op != "depthwise_conv2d") dims["K"] = k;
    if (op == "group_conv2d") dims["groups"] = group;
    return conv2d_task(node, std::move(dims), op);
  }

  // A 3-D conv with constant weights and explicit pads whose H x W window a 2-D kernel takes:
  // that 2-D conv (phase_conv.hpp, depth_conv_dims), run once per output depth of each image.
  std::optional<std::string> conv3d_task(const onnx::NodeProto& node, const Shape& x, const Shape& w) {
    const Shape* y = shape_of(node.output(0));
    const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
    auto strides = ints_attr(node, "strides"), dilations = ints_attr(node, "dilations"), pads = ints_attr(node, "pads");
    if (strides.empty()) strides.assign(3, 1);
    if (dilations.empty()) dilations.assign(3, 1);
    if (pads.empty() || auto_pad == "VALID") pads.assign(6, 0);
    std::optional<Json> dims;
    if (y && (auto_pad == "NOTSET" || auto_pad == "VALID") && index_.constants.count(node.input(1))) {
      dims = depth_conv_dims(x, w, *y, int_attr(node, "group", 1), strides, dilations, pads);
    }
    if (!dims) return "Conv (3-D, no 2-D kernel takes its window)";
    conv2d_task(node, std::move(*dims));
    kernel_->count = int(x[0] * (*y)[2]);
    return std::nullopt;
  }

  // The conv task of node over dims, with its bias.
  std::optional<std::string> conv2d_task(const onnx::NodeProto& node, Json dims, const std::string& op = "conv2d") {
    std::vector<std::string> start;
    if (node.input_size() >= 3 && !node.input(2).empty()) start.push_back("bias");
    add_task(Json{{"op", op}, {"dtype", to_string(dtype_of(node.input(0)))}, {"dims", dims}, {"epilogue", start}},
             node);
    return std::nullopt;
  }

  // A conv of one group with constant weights that no conv template takes (dilations, strides
  // or pads that differ by axis or side: Inception v3's 1x7 and 7x1) as the engine runs it: its
  // input windows as rows (im2col) times the weights, [N x OH x OW, R x S x C] x [R x S x C, K],
  // with the bias; nothing after it is fused (graph_fusion.cpp). Otherwise `why`, the reason the
  // node stays untuned.
  std::optional<std::string> im2col_task(const onnx::NodeProto& node, const std::string& why) {
    const Shape* w = shape_of(node.input(1));
    const Shape* y = shape_of(node.output(0));
    if (int_attr(node, "group", 1) != 1 || !index_.constants.count(node.input(1)) || !w || !y ||
        (y->size() != 4 && y->size() != 3) || w->size() != y->size()) {
      return why;
    }
    std::vector<std::string> epilogue;
    if (node.input_size() >= 3 && !node.input(2).empty()) epilogue.push_back("bias");
    // Rows: each image's output pixels; columns: the output channels; depth: a window's taps.
    std::int64_t pixels = product(y->begin() + 2, y->end()) * (*y)[0], depth = product(w->begin() + 1, w->end());
    if (const Shape* x = shape_of(node.input(0)); x && x->size() == y->size()) {
      const auto [h, wd] = conv_axes(node, *x, *w, *y);
      if (const auto regions = sparse_conv_regions(h, wd); !regions.empty()) {
        // The regions' matmuls run instead (phase_conv.hpp): the largest is the task.
        pixels = (*y)[0] * largest_region(regions).pixels();
        depth = (*w)[1] * largest_region(regions).taps();
      }
    }
    add_task(Json{{"op", "matmul"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", pixels}, {"N", (*w)[0]}, {"K", depth}}},
                  {"epilogue", epilogue}},
             node);
    return std::nullopt;
  }

  // The H and W axes of a 2-D conv of input x, weights w and output y (a 1-D conv's W axis, its H
  // one of one pixel), with the pad before the first input that auto_pad implies, as ONNX
  // Runtime splits an odd SAME padding.
  static std::pair<ConvAxis, ConvAxis> conv_axes(const onnx::NodeProto& node, const Shape& x, const Shape& w,
                                                 const Shape& y) {
    const std::size_t rank = x.size() - 2;
    auto strides = ints_attr(node, "strides"), dilations = ints_attr(node, "dilations"), pads = ints_attr(node, "pads");
    const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
    std::vector<ConvAxis> axes(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      ConvAxis& a = axes[d];
      a.in = x[2 + d], a.out = y[2 + d], a.taps = w[2 + d];
      if (strides.size() == rank) a.stride = strides[d];
      if (dilations.size() == rank) a.dilation = dilations[d];
      if (pads.size() == 2 * rank) a.pad = pads[d];
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const std::int64_t total =
            std::max<std::int64_t>(0, (a.out - 1) * a.stride + (a.taps - 1) * a.dilation + 1 - a.in);
        a.pad = auto_pad == "SAME_LOWER" ? (total + 1) / 2 : total / 2;
      } else if (auto_pad == "VALID") {
        a.pad = 0;
      }
    }
    if (rank == 1) return {ConvAxis{}, axes[0]};
    return {axes[0], axes[1]};
  }

  // A 2-D transposed conv of one group as the matmul it is: [N x H x W, C] x [C, kh x kw x K],
  // each input pixel's contribution to a kh x kw window of outputs; the windows' scatter-add
  // into the output (col2im, with the bias) follows it outside the kernel, as ONNX Runtime
  // computes it (engine/model_kernels.cpp).
  std::optional<std::string> conv_transpose_task(const onnx::NodeProto& node) {
    const Shape* x = node.input_size() >= 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* w = x ? shape_of(node.input(1)) : nullptr;
    if (!x || !w || x->size() != 4 || w->size() != 4) return "ConvTranspose (unknown or non-2D shape)";
    if (int_attr(node, "group", 1) != 1) return "ConvTranspose (groups)";
    if ((*w)[0] != (*x)[1]) return "ConvTranspose (mismatched channels)";
    add_task(Json{{"op", "matmul"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", (*x)[0] * (*x)[2] * (*x)[3]}, {"N", (*w)[1] * (*w)[2] * (*w)[3]}, {"K", (*x)[1]}}}},
             node);
    return std::nullopt;
  }

  std::optional<std::string> matmul_task(const onnx::NodeProto& node) {
    const Shape* a = node.input_size() == 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* b = a ? shape_of(node.input(1)) : nullptr;
    if (!a || !b || a->size() < 2 || b->size() < 2) return "MatMul (unknown or 1-D shape)";
    const std::int64_t k = a->back(), n = b->back();
    if ((*b)[b->size() - 2] != k) return "MatMul (mismatched K)";
    Json j{{"dtype", to_string(dtype_of(node.input(0)))}};
    if (b->size() == 2) {
      // A weight matrix: every leading dim of A is just more rows.
      j["op"] = "matmul";
      j["dims"] = {{"M", product(a->begin(), a->end() - 1)}, {"N", n}, {"K", k}};
    } else {
      const std::int64_t batch = product(b->begin(), b->end() - 2);
      if (product(a->begin(), a->end() - 2) != batch) return "MatMul (broadcast batch)";
      j["op"] = "batch_matmul";
      j["dims"] = {{"B", batch}, {"M", (*a)[a->size() - 2]}, {"N", n}, {"K", k}};
    }
    add_task(j, node);
    return std::nullopt;
  }

  std::optional<std::string> gemm_task(const onnx::NodeProto& node) {
    const Shape* a = node.input_size() >= 2 ? shape_of(node.input(0)) : nullptr;
    const Shape* b = a ? shape_of(node.input(1)) : nullptr;
    if (!a || !b || a->size() != 2 || b->size() != 2) return "Gemm (unknown shape)";
    const bool ta = int_attr(node, "transA", 0) != 0, tb = int_attr(node, "transB", 0) != 0;
    const std::int64_t m = ta ? (*a)[1] : (*a)[0], k = ta ? (*a)[0] : (*a)[1];
    const std::int64_t n = tb ? (*b)[0] : (*b)[1];
    std::vector<std::string> start;
    if (node.input_size() >= 3 && !node.input(2).empty()) start.push_back("bias");
    add_task(Json{{"op", "matmul"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", m}, {"N", n}, {"K", k}}},
                  {"epilogue", start}},
             node);
    return std::nullopt;
  }

  // Softmax and LayerNormalization along the inner axis; LRN across channels (NCHW: each
  // of N x C rows of H x W reads its neighbours' rows).
  std::optional<std::string> row_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    if (node.op_type() == "LRN") {
      if (!x || x->size() != 4) return "LRN (unknown or non-4D shape)";
      add_task(rows_workload("lrn", node, (*x)[0] * (*x)[1], (*x)[2] * (*x)[3]), node);
      return std::nullopt;
    }
    const auto axis = int_attr(node, "axis", -1);
    if (!x || x->empty() || (axis != -1 && axis != std::int64_t(x->size()) - 1)) {
      return node.op_type() + " (unknown shape or inner axis)";
    }
    const std::string op = node.op_type() == "Softmax" ? "softmax" : "layernorm";
    add_task(rows_workload(op, node, product(x->begin(), x->end() - 1), x->back()), node);
    return std::nullopt;
  }

  // MaxPool and AveragePool with every window ONNX allows: per-side pads, auto_pad,
  // ceil_mode, dilations and a stride per axis. The output shape comes from shape
  // inference; the end padding is then what makes the floor rule give that shape (how
  // ceil_mode and SAME padding reach the workload). Pads on the 4 sides are the pool's
  // pad (top), pad_left, pad_bottom and pad_right (core/op_registry.cpp).
  std::optional<std::string> pool_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    const Shape* y = node.output_size() ? shape_of(node.output(0)) : nullptr;
    const auto kernel = ints_attr(node, "kernel_shape");
    const std::string what = node.op_type();
    if (!x || !y || x->size() != 4 || y->size() != 4 || kernel.size() != 2) {
      return what + " (unknown or non-2D shape)";
    }
    auto strides = ints_attr(node, "strides");
    if (strides.empty()) strides = {1, 1};
    auto dilations = ints_attr(node, "dilations");
    if (dilations.empty()) dilations = {1, 1};
    if (strides.size() != 2 || dilations.size() != 2) return what + " (strides or dilations not 2-D)";
    if (dilations[0] != dilations[1]) return what + " (different dilation per axis)";
    const std::string auto_pad = string_attr(node, "auto_pad");
    auto pads = ints_attr(node, "pads");
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (pads.size() != 4) return what + " (pads not 2-D)";
    std::int64_t begin[2] = {pads[0], pads[1]};
    std::int64_t end[2] = {0, 0};
    for (int a = 0; a < 2; ++a) {
      const std::int64_t in = (*x)[2 + a], out = (*y)[2 + a];
      const std::int64_t window = (kernel[a] - 1) * dilations[a] + 1;
      const std::int64_t needed = (out - 1) * strides[a] + window - in;  // total padding the output needs
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const std::int64_t total = std::max<std::int64_t>(needed, 0);
        begin[a] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else if (auto_pad == "VALID") {
        begin[a] = 0;
      }
      end[a] = std::max<std::int64_t>(needed - begin[a], 0);
    }
    Json dims{{"N", (*x)[0]},   {"C", (*x)[1]},   {"H", (*x)[2]},         {"W", (*x)[3]},
              {"R", kernel[0]}, {"S", kernel[1]}, {"stride", strides[0]}, {"pad", begin[0]}};
    // Only what differs from the symmetric default is written, so plain pools keep their keys.
    auto optional = [&](const char* name, std::int64_t v, std::int64_t fallback) {
      if (v != fallback) dims[name] = v;
    };
    optional("pad_bottom", end[0], begin[0]);
    optional("pad_left", begin[1], begin[0]);
    optional("pad_right", end[1], begin[0]);
    optional("stride_w", strides[1], strides[0]);
    optional("dilation", dilations[0], 1);
    add_task(Json{{"op", what == "MaxPool" ? "max_pool2d" : "avg_pool2d"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", dims}},
             node);
    return std::nullopt;
  }

  std::optional<std::string> global_pool_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    if (!x || x->size() < 3) return node.op_type() + " (unknown shape)";
    const std::string op = node.op_type() == "GlobalAveragePool" ? "global_avg_pool" : "reduce";
    add_task(rows_workload(op, node, (*x)[0] * (*x)[1], product(x->begin() + 2, x->end())), node);
    return std::nullopt;
  }

  // Add/Sum/Mul/Sub/Div over the output's shape (a broadcast operand is read as if whole:
  // an upper bound); the activations that follow fuse into it (graph_fusion.hpp).
  std::optional<std::string> binary_task(const onnx::NodeProto& node) {
    const auto rows = rows_of(node.output(0));
    if (node.input_size() != 2 || !rows) return node.op_type() + " (unknown shape or not binary)";
    add_task(rows_workload("elementwise", node, rows->first, rows->second), node);
    return std::nullopt;
  }

  // A standalone activation or BatchNormalization (pre-activation blocks): one pass over
  // the tensor (the activations that follow fuse into it).
  std::optional<std::string> map_task(const onnx::NodeProto& node) {
    const auto rows = rows_of(node.output(0));
    if (!rows) return node.op_type() + " (unknown shape)";
    const auto act = activation_of(node);
    Json j = rows_workload("map", node, rows->first, rows->second);
    j["epilogue"] = {act ? *act : "batchnorm"};
    add_task(j, node);
    return std::nullopt;
  }

  // Rows are the dims before the axis, columns the concatenated axis and those after it.
  std::optional<std::string> concat_task(const onnx::NodeProto& node) {
    const Shape* y = shape_of(node.output(0));
    if (!y || y->empty()) return "Concat (unknown shape)";
    auto axis = int_attr(node, "axis", 0);
    if (axis < 0) axis += std::int64_t(y->size());
    if (axis < 0 || axis >= std::int64_t(y->size())) return "Concat (bad axis)";
    add_task(
        rows_workload("concat", node, product(y->begin(), y->begin() + axis), product(y->begin() + axis, y->end())),
        node);
    return std::nullopt;
  }

  // A permutation as the transpose template sees it: the trailing axes it keeps in place
  // move together (inner); the input axis that lands innermost among the moved ones gives
  // the store rows (M), everything else is N.
  std::optional<std::string> transpose_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    if (!x || x->empty()) return "Transpose (unknown shape)";
    auto perm = ints_attr(node, "perm");
    if (perm.empty()) {
      for (std::int64_t i = std::int64_t(x->size()) - 1; i >= 0; --i) perm.push_back(i);
    }
    if (perm.size() != x->size()) return "Transpose (bad perm)";
    std::vector<bool> seen(perm.size(), false);
    for (const auto p : perm) {
      if (p < 0 || p >= std::int64_t(perm.size()) || seen[std::size_t(p)])
        return "Transpose (perm is not a permutation)";
      seen[std::size_t(p)] = true;
    }
    std::size_t kept = perm.size();
    while (kept > 0 && perm[kept - 1] == std::int64_t(kept - 1)) --kept;
    if (kept == 0) return std::nullopt;  // the identity moves nothing
    const std::int64_t inner = product(x->begin() + std::int64_t(kept), x->end());
    const std::int64_t m = (*x)[perm[kept - 1]];
    const std::int64_t total = product(x->begin(), x->end());
    add_task(Json{{"op", "transpose"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", m}, {"N", total / m}, {"inner", inner}}}},
             node);
    return std::nullopt;
  }

  // Nearest upsampling of NCHW by the same whole factor in H and W.
  std::optional<std::string> upsample_task(const onnx::NodeProto& node) {
    const Shape* x = shape_of(node.input(0));
    const Shape* y = shape_of(node.output(0));
    if (!x || !y || x->size() != 4 || y->size() != 4) return node.op_type() + " (unknown shape)";
    const std::int64_t scale = (*y)[2] / (*x)[2];
    if ((*y)[2] != scale * (*x)[2] || (*y)[3] != scale * (*x)[3] || (*y)[1] != (*x)[1]) {
      return node.op_type() + " (not a whole, equal factor in H and W)";
    }
    add_task(Json{{"op", "upsample"},
                  {"dtype", to_string(dtype_of(node.input(0)))},
                  {"dims", {{"M", (*x)[0] * (*x)[1] * (*x)[2]}, {"N", (*x)[3]}, {"scale", scale}}}},
             node);
    return std::nullopt;
  }

  const onnx::GraphProto& graph_;
  GraphIndex index_;
  OnnxImportOptions options_;
  GraphNode* kernel_ = nullptr;  // the node being described
};

}  // namespace

TaskSet import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return import_bound_onnx(read_bound_onnx_model(path, {options.batch, options.dims, {}}), path, options);
}

namespace {

// The one-value float constants of g (initializers and Constant nodes) by name.
std::map<std::string, double> scalar_constants(const onnx::GraphProto& g) {
  std::map<std::string, double> out;
  std::vector<float> v;
  auto take = [&](const std::string& name, const onnx::TensorProto& t) {
    if (float_values(t, v) && v.size() == 1) out[name] = v[0];
  };
  for (const auto& t : g.initializer()) take(t.name(), t);
  for (const auto& n : g.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value") take(n.output(0), a.t());
      if (a.name() == "value_float") out[n.output(0)] = a.f();
    }
  }
  return out;
}

}  // namespace

TaskSet import_bound_onnx(const onnx::ModelProto& bound, const std::string& name, const OnnxImportOptions& options) {
  Graph graph = Extractor(bound.graph(), options).build();
  const std::map<std::string, double> scalars = scalar_constants(bound.graph());
  if (options.fuse) {
    fuse_graph(graph, [&](int t) -> std::optional<double> {
      const auto it = scalars.find(graph.tensors()[t].name);
      return it == scalars.end() ? std::nullopt : std::optional<double>(it->second);
    });
  }
  return tasks_from_graph(std::move(graph), bound.graph().name().empty() ? name : bound.graph().name(), options.batch);
}

}  // namespace atvoss::frontend
