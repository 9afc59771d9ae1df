#include "frontend/quantized_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "frontend/onnx_attributes.hpp"

namespace atvoss::frontend {
namespace {

using TP = onnx::TensorProto;

template <class T>
std::vector<double> raw_values(const std::string& raw) {
  std::vector<double> out(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = double(v);
  }
  return out;
}

// A constant's values (float, double and integer storage), nullopt for another type.
std::optional<std::vector<double>> values_of(const TP& t) {
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case TP::FLOAT:
      return raw ? raw_values<float>(t.raw_data()) : std::vector<double>(t.float_data().begin(), t.float_data().end());
    case TP::DOUBLE:
      return raw ? raw_values<double>(t.raw_data())
                 : std::vector<double>(t.double_data().begin(), t.double_data().end());
    case TP::INT8:
      return raw ? raw_values<std::int8_t>(t.raw_data())
                 : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
    case TP::UINT8:
      return raw ? raw_values<std::uint8_t>(t.raw_data())
                 : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
    case TP::INT32:
      return raw ? raw_values<std::int32_t>(t.raw_data())
                 : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
    case TP::INT64:
      return raw ? raw_values<std::int64_t>(t.raw_data())
                 : std::vector<double>(t.int64_data().begin(), t.int64_data().end());
    default:
      return std::nullopt;
  }
}

std::int64_t elements(const TP& t) {
  std::int64_t n = 1;
  for (const auto d : t.dims()) n *= d;
  return n;
}

// The float ops of one quantized node, and the constants they read.
class Expander {
 public:
  explicit Expander(onnx::GraphProto& g) : g_(g) {
    for (const TP& t : g.initializer()) constants_[t.name()] = &t;
  }

  void run() {
    std::vector<onnx::NodeProto> nodes;
    for (const onnx::NodeProto& n : g_.node()) {
      out_.clear();
      if (expand(n)) {
        nodes.insert(nodes.end(), out_.begin(), out_.end());
      } else {
        nodes.push_back(n);
      }
    }
    g_.clear_node();
    for (auto& n : nodes) *g_.add_node() = std::move(n);
    for (auto& t : made_) *g_.add_initializer() = std::move(t);
  }

 private:
  onnx::GraphProto& g_;
  std::map<std::string, const TP*> constants_;
  std::deque<TP> made_;
  std::vector<onnx::NodeProto> out_;
  int count_ = 0;

  std::string where(const onnx::NodeProto& n) const {
    return "model: node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ")";
  }
  static std::string input(const onnx::NodeProto& n, int i) { return i < n.input_size() ? n.input(i) : ""; }
  std::string fresh(const onnx::NodeProto& n, const std::string& what) {
    return (n.name().empty() ? n.output(0) : n.name()) + "/" + what + std::to_string(++count_);
  }

  onnx::NodeProto& emit(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name) {
    onnx::NodeProto& node = out_.emplace_back();
    node.set_op_type(op);
    node.set_name(name);
    std::size_t given = inputs.size();  // an optional input left out is dropped from the end
    while (given > 0 && inputs[given - 1].empty()) --given;
    for (std::size_t i = 0; i < given; ++i) node.add_input(inputs[i]);
    for (const auto& o : outputs) node.add_output(o);
    return node;
  }

  std::optional<std::vector<double>> constant(const std::string& name) const {
    const auto it = constants_.find(name);
    return it == constants_.end() ? std::nullopt : values_of(*it->second);
  }

  std::string float_constant(const onnx::NodeProto& n, std::vector<double> values, const TP& like) {
    TP t;
    t.set_name(fresh(n, "dequantized"));
    t.set_data_type(TP::FLOAT);
    for (const auto d : like.dims()) t.add_dims(d);
    std::string raw(values.size() * sizeof(float), '\0');
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float f = float(values[i]);
      std::memcpy(raw.data() + i * sizeof(float), &f, sizeof(float));
    }
    t.set_raw_data(std::move(raw));
    made_.push_back(t);
    return made_.back().name();
  }

  // `value` as floats: (value - zero) * scale, one scale and zero point or one per index of
  // `axis` (a constant value: folded here unless kept, as a conv's filter is for the engine's int8
  // kernels to find its codes; another: a DequantizeLinear node). A scale that is "" reads as 1
  // (the Integer ops' operands, their zero point taken off).
  std::string dequantized(const onnx::NodeProto& n, const std::string& value, const std::string& scale,
                          const std::string& zero, std::int64_t axis, bool keep = false) {
    const auto v = constant(value);
    const auto s = scale.empty() ? std::optional<std::vector<double>>{{1.0}} : constant(scale);
    const auto z = zero.empty() ? std::optional<std::vector<double>>{{0.0}} : constant(zero);
    if (v && s && z && !(keep && !scale.empty())) return folded(n, value, *v, *s, *z, axis);
    std::string scale_name = scale;
    if (scale.empty()) scale_name = float_constant(n, {1.0}, TP());
    const std::string out = fresh(n, "float");
    onnx::NodeProto& dq = emit("DequantizeLinear", {value, scale_name, zero}, {out}, fresh(n, "dequantize"));
    if (s && s->size() > 1) {
      auto* a = dq.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(axis);
    }
    return out;
  }

  std::string folded(const onnx::NodeProto& n, const std::string& value, const std::vector<double>& v,
                     const std::vector<double>& s, const std::vector<double>& z, std::int64_t axis) {
    const TP& t = *constants_.at(value);
    if (elements(t) != std::int64_t(v.size())) throw_bad_input(where(n) + ": constant '" + value + "' is truncated");
    const std::int64_t rank = t.dims_size();
    if (axis < 0) axis += rank;
    // A scale of 1 with a zero point per column (MatMulInteger's b_zero_point): per column.
    const std::int64_t count = std::int64_t(std::max(s.size(), z.size()));
    std::int64_t inner = 1;
    for (std::int64_t d = axis + 1; d < rank; ++d) inner *= t.dims(int(d));
    if (count > 1 && (axis < 0 || axis >= rank || t.dims(int(axis)) != count)) {
      throw_bad_input(where(n) + ": a scale of " + std::to_string(count) + " values for '" + value +
                      "', expected one or one per index of its axis " + std::to_string(axis));
    }
    if ((z.size() != 1 && std::int64_t(z.size()) != count) || (s.size() != 1 && std::int64_t(s.size()) != count)) {
      throw_bad_input(where(n) + ": the zero point of '" + value + "' and its scale differ in length");
    }
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::size_t c = count == 1 ? 0 : std::size_t(std::int64_t(i) / inner % count);
      // As DequantizeLinear computes it.
      out[i] = double(float(v[i] - z[z.size() == 1 ? 0 : c]) * float(s[s.size() == 1 ? 0 : c]));
    }
    return float_constant(n, std::move(out), t);
  }

  // An int32 bias of scale factor x x_scale x w_scale (w_scale per output channel) as floats.
  std::string bias(const onnx::NodeProto& n, const std::string& b, const std::string& x_scale,
                   const std::string& w_scale, double factor = 1.0) {
    const auto v = constant(b), xs = constant(x_scale), ws = constant(w_scale);
    if (!v || !xs || !ws || xs->size() != 1 || (ws->size() != 1 && ws->size() != v->size())) {
      throw_bad_input(where(n) + ": bias '" + b + "' and the scales it is dequantized by must be constants, " +
                      "a scale per output channel or one");
    }
    std::vector<double> out(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) {
      out[i] = (*v)[i] * double(float(factor * (*xs)[0] * (*ws)[ws->size() == 1 ? 0 : i]));
    }
    return float_constant(n, std::move(out), *constants_.at(b));
  }

  // The float op of node n named as n, its attributes but `drop`, writing a fresh tensor.
  std::string float_op(const onnx::NodeProto& n, const std::string& op, const std::vector<std::string>& inputs,
                       const std::string& drop = "") {
    const std::string out = fresh(n, "float");
    onnx::NodeProto& f = emit(op, inputs, {out}, n.name());
    for (const auto& a : n.attribute()) {
      if (a.name() != drop) *f.add_attribute() = a;
    }
    return out;
  }

  void quantize(const onnx::NodeProto& n, const std::string& value, const std::string& scale, const std::string& zero) {
    emit("QuantizeLinear", {value, scale, zero}, {n.output(0)}, fresh(n, "quantize"));
  }

  void to_int32(const onnx::NodeProto& n, const std::string& value) {
    onnx::NodeProto& cast = emit("Cast", {value}, {n.output(0)}, fresh(n, "cast"));
    auto* a = cast.add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(TP::INT32);
  }

  // A com.microsoft QLinear op of one float op over its quantized inputs (value, scale, zero
  // point at `at`, +1, +2) and its output's scale and zero point at out, out + 1.
  void elementwise(const onnx::NodeProto& n, const std::string& op, const std::vector<int>& at, int out,
                   const std::string& drop = "") {
    std::vector<std::string> floats;
    for (const int i : at) floats.push_back(dequantized(n, input(n, i), input(n, i + 1), input(n, i + 2), 1));
    quantize(n, float_op(n, op, floats, drop), input(n, out), input(n, out + 1));
  }

  bool expand(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const bool ms = n.domain() == "com.microsoft";
    if (!ms && !n.domain().empty() && n.domain() != "ai.onnx") return false;
    if (!ms && op == "QLinearConv") {
      std::vector<std::string> in{dequantized(n, input(n, 0), input(n, 1), input(n, 2), 1),
                                  dequantized(n, input(n, 3), input(n, 4), input(n, 5), 0, true)};
      if (!input(n, 8).empty()) in.push_back(bias(n, input(n, 8), input(n, 1), input(n, 4)));
      quantize(n, float_op(n, "Conv", in), input(n, 6), input(n, 7));
    } else if (!ms && op == "QLinearMatMul") {
      quantize(n,
               float_op(n, "MatMul",
                        {dequantized(n, input(n, 0), input(n, 1), input(n, 2), -2),
                         dequantized(n, input(n, 3), input(n, 4), input(n, 5), -1)}),
               input(n, 6), input(n, 7));
    } else if (!ms && op == "MatMulInteger") {
      to_int32(n, float_op(n, "MatMul",
                           {dequantized(n, input(n, 0), "", input(n, 2), -2),
                            dequantized(n, input(n, 1), "", input(n, 3), -1)}));
    } else if (!ms && op == "ConvInteger") {
      to_int32(n, float_op(n, "Conv",
                           {dequantized(n, input(n, 0), "", input(n, 2), 1),
                            dequantized(n, input(n, 1), "", input(n, 3), 0)}));
    } else if (ms && (op == "QLinearAdd" || op == "QLinearMul")) {
      elementwise(n, op == "QLinearAdd" ? "Add" : "Mul", {0, 3}, 6);
    } else if (ms && (op == "QLinearGlobalAveragePool" || op == "QLinearAveragePool")) {
      if (int_attr(n, "channels_last", 0) != 0) throw_bad_input(where(n) + ": channels_last=1 is not supported");
      elementwise(n, op == "QLinearAveragePool" ? "AveragePool" : "GlobalAveragePool", {0}, 3, "channels_last");
    } else if (ms && (op == "QLinearSigmoid" || op == "QLinearLeakyRelu")) {
      elementwise(n, op == "QLinearSigmoid" ? "Sigmoid" : "LeakyRelu", {0}, 3);
    } else if (ms && op == "QLinearConcat") {
      std::vector<int> at;
      for (int i = 2; i + 2 < n.input_size(); i += 3) at.push_back(i);
      elementwise(n, "Concat", at, 0);
    } else if (ms && op == "QGemm") {
      expand_qgemm(n);
    } else {
      return false;
    }
    return true;
  }

  // QGemm: A and B quantized, C an int32 bias of scale alpha x a_scale x b_scale, the output
  // quantized where y_scale is given and float otherwise.
  void expand_qgemm(const onnx::NodeProto& n) {
    const bool trans_b = int_attr(n, "transB", 0) != 0;
    std::vector<std::string> in{dequantized(n, input(n, 0), input(n, 1), input(n, 2), 0),
                                dequantized(n, input(n, 3), input(n, 4), input(n, 5), trans_b ? 0 : 1)};
    if (!input(n, 6).empty())
      in.push_back(bias(n, input(n, 6), input(n, 1), input(n, 4), float_attr(n, "alpha", 1.0f)));
    if (input(n, 7).empty()) {
      onnx::NodeProto& f = emit("Gemm", in, {n.output(0)}, n.name());
      for (const auto& a : n.attribute()) *f.add_attribute() = a;
      return;
    }
    quantize(n, float_op(n, "Gemm", in), input(n, 7), input(n, 8));
  }
};

}  // namespace

void expand_quantized_ops(onnx::ModelProto& model) {
  if (!model.has_graph()) return;
  Expander(*model.mutable_graph()).run();
}

}  // namespace atvoss::frontend
