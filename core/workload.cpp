#include "core/workload.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace atvoss {
namespace {

struct OpSpec {
  std::string name;
  std::vector<std::string> dims;
  bool takes_epilogue;
};

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = {
      {"matmul", {"M", "N", "K"}, true},
      {"batch_matmul", {"B", "M", "N", "K"}, true},
      {"conv2d", {"N", "C", "H", "W", "K", "R", "S", "stride", "pad"}, true},
      {"depthwise_conv2d", {"N", "C", "H", "W", "R", "S", "stride", "pad"}, true},
      {"elementwise", {"M", "N"}, false},
      {"layernorm", {"M", "N"}, false},
      {"softmax", {"M", "N"}, false},
      {"recorded", {}, false},
  };
  return specs;
}

const std::vector<std::string>& epilogue_ops() {
  static const std::vector<std::string> ops = {"bias", "batchnorm", "relu", "gelu", "add",
                                               "layernorm"};
  return ops;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

const OpSpec& find_op(const std::string& op) {
  for (const auto& s : op_specs()) {
    if (s.name == op) return s;
  }
  throw_bad_input("workload: unknown op '" + op + "'; expected one of: " + join(known_ops()));
}

std::int64_t read_dim(const Json& dims, const std::string& name, bool is_conv) {
  auto it = dims.find(name);
  if (it == dims.end()) {
    if (is_conv && name == "stride") return 1;
    if (is_conv && name == "pad") return 0;
    throw_bad_input("workload: missing dim '" + name + "'");
  }
  if (!it->is_number_integer()) {
    throw_bad_input("workload: dim '" + name + "' must be an integer, got " + it->dump());
  }
  const auto v = it->get<std::int64_t>();
  const std::int64_t lo = name == "pad" ? 0 : 1;
  if (v < lo || v > (std::int64_t{1} << 40)) {
    throw_bad_input("workload: dim '" + name + "' must be " + (lo == 0 ? ">= 0" : "> 0") +
                    " and at most 2^40, got " + std::to_string(v));
  }
  return v;
}

}  // namespace

const std::vector<std::string>& known_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& s : op_specs()) n.push_back(s.name);
    return n;
  }();
  return names;
}

std::string_view to_string(DType d) noexcept {
  switch (d) {
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::float32: return "float32";
    case DType::int8: return "int8";
  }
  return "float16";
}

DType parse_dtype(std::string_view s) {
  if (s == "float16") return DType::float16;
  if (s == "bfloat16") return DType::bfloat16;
  if (s == "float32") return DType::float32;
  if (s == "int8") return DType::int8;
  throw_bad_input("workload: field 'dtype' must be one of float16, bfloat16, float32, int8; got '" +
                  std::string(s) + "'");
}

int dtype_bytes(DType d) noexcept {
  switch (d) {
    case DType::float16:
    case DType::bfloat16: return 2;
    case DType::float32: return 4;
    case DType::int8: return 1;
  }
  return 2;
}

Workload Workload::from_json(const Json& j) {
  require_object(j, "workload");
  for (const auto& [k, v] : j.items()) {
    if (k != "op" && k != "dims" && k != "dtype" && k != "epilogue" && k != "table") {
      throw_bad_input("workload: unknown field '" + k +
                      "'; expected op, dims, dtype, epilogue (or table for recorded)");
    }
  }
  Workload w;
  w.op_ = require_string(j, "op", "workload");
  const OpSpec& spec = find_op(w.op_);
  if (w.op_ == "recorded") {
    w.table_ = require_string(j, "table", "workload");
    if (w.table_.empty()) throw_bad_input("workload: field 'table' must name a file");
    w.key_ = stable_key(w.to_json());
    return w;
  }
  if (j.contains("dtype")) {
    if (!j["dtype"].is_string()) throw_bad_input("workload: field 'dtype' must be a string");
    w.dtype_ = parse_dtype(j["dtype"].get<std::string>());
  }
  const Json& dims = require_field(j, "dims", "workload");
  if (!dims.is_object()) throw_bad_input("workload: field 'dims' must be an object of integers");
  for (const auto& [k, v] : dims.items()) {
    if (std::find(spec.dims.begin(), spec.dims.end(), k) == spec.dims.end()) {
      throw_bad_input("workload: op '" + w.op_ + "' has no dim '" + k + "'; expected " +
                      join(spec.dims));
    }
  }
  const bool conv = w.op_ == "conv2d" || w.op_ == "depthwise_conv2d";
  for (const auto& name : spec.dims) w.dims_[name] = read_dim(dims, name, conv);
  if (conv) {
    if (w.dims_["H"] + 2 * w.dims_["pad"] < w.dims_["R"] ||
        w.dims_["W"] + 2 * w.dims_["pad"] < w.dims_["S"]) {
      throw_bad_input("workload: conv kernel R x S is larger than the padded input H x W");
    }
  }
  if (j.contains("epilogue")) {
    const Json& ep = j["epilogue"];
    if (!ep.is_array()) throw_bad_input("workload: field 'epilogue' must be an array of op names");
    for (const auto& e : ep) {
      if (!e.is_string()) throw_bad_input("workload: 'epilogue' entries must be strings");
      const auto name = e.get<std::string>();
      if (std::find(epilogue_ops().begin(), epilogue_ops().end(), name) == epilogue_ops().end()) {
        throw_bad_input("workload: unknown epilogue op '" + name + "'; expected one of " +
                        join(epilogue_ops()));
      }
      w.epilogue_.push_back(name);
    }
    if (!w.epilogue_.empty() && !spec.takes_epilogue) {
      throw_bad_input("workload: op '" + w.op_ + "' takes no epilogue");
    }
  }
  w.key_ = stable_key(w.to_json());
  return w;
}

Json Workload::to_json() const {
  if (op_ == "recorded") return Json{{"op", op_}, {"table", table_}};
  Json j{{"op", op_}, {"dtype", std::string(to_string(dtype_))}, {"dims", Json::object()}};
  for (const auto& [k, v] : dims_) j["dims"][k] = v;
  j["epilogue"] = epilogue_;
  return j;
}

std::int64_t Workload::dim(const std::string& name) const {
  auto it = dims_.find(name);
  if (it == dims_.end()) throw Error(ErrorKind::internal, "workload " + op_ + " has no dim " + name);
  return it->second;
}

bool Workload::has_epilogue(std::string_view op) const {
  return std::find(epilogue_.begin(), epilogue_.end(), op) != epilogue_.end();
}

std::int64_t Workload::out_h() const {
  return (dim("H") + 2 * dim("pad") - dim("R")) / dim("stride") + 1;
}
std::int64_t Workload::out_w() const {
  return (dim("W") + 2 * dim("pad") - dim("S")) / dim("stride") + 1;
}

double Workload::flops() const {
  auto d = [&](const char* n) { return static_cast<double>(dim(n)); };
  if (op_ == "matmul") return 2 * d("M") * d("N") * d("K");
  if (op_ == "batch_matmul") return 2 * d("B") * d("M") * d("N") * d("K");
  if (op_ == "conv2d") {
    return 2 * d("N") * d("K") * double(out_h()) * double(out_w()) * d("C") * d("R") * d("S");
  }
  if (op_ == "depthwise_conv2d") {
    return 2 * d("N") * d("C") * double(out_h()) * double(out_w()) * d("R") * d("S");
  }
  if (op_ == "elementwise") return d("M") * d("N");
  if (op_ == "layernorm" || op_ == "softmax") return 5 * d("M") * d("N");
  return 0;
}

double Workload::compulsory_bytes() const {
  auto d = [&](const char* n) { return static_cast<double>(dim(n)); };
  const double b = dtype_bytes(dtype_);
  if (op_ == "matmul") return b * (d("M") * d("K") + d("K") * d("N") + d("M") * d("N"));
  if (op_ == "batch_matmul") {
    return b * d("B") * (d("M") * d("K") + d("K") * d("N") + d("M") * d("N"));
  }
  if (op_ == "conv2d") {
    return b * (d("N") * d("C") * d("H") * d("W") + d("K") * d("C") * d("R") * d("S") +
                d("N") * d("K") * double(out_h()) * double(out_w()));
  }
  if (op_ == "depthwise_conv2d") {
    return b * (d("N") * d("C") * d("H") * d("W") + d("C") * d("R") * d("S") +
                d("N") * d("C") * double(out_h()) * double(out_w()));
  }
  if (op_ == "elementwise") return b * 3 * d("M") * d("N");
  if (op_ == "layernorm" || op_ == "softmax") return b * 2 * d("M") * d("N");
  return 0;
}

std::string Workload::label() const {
  if (op_ == "recorded") return "recorded " + table_;
  std::ostringstream out;
  out << op_;
  const char* sep = " ";
  for (const auto& [k, v] : dims_) {
    out << sep << k << "=" << v;
    sep = ",";
  }
  out << " " << to_string(dtype_);
  for (const auto& e : epilogue_) out << " +" << e;
  return out.str();
}

}  // namespace atvoss
