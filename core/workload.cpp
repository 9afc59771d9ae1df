#include "core/workload.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "core/op_registry.hpp"

namespace atvoss {
namespace {

const std::vector<std::string>& epilogue_ops() {
  static const std::vector<std::string> ops = {
      "bias", "batchnorm", "relu",        "relu6", "leaky_relu", "gelu",      "gelu_erf",   "sigmoid",  "silu",
      "tanh", "hardswish", "hardsigmoid", "mish",  "add",        "layernorm", "requantize", "quantize", "dequantize"};
  return ops;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
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
  const std::int64_t lo = name.rfind("pad", 0) == 0 ? 0 : 1;
  if (v < lo || v > (std::int64_t{1} << 40)) {
    throw_bad_input("workload: dim '" + name + "' must be " + (lo == 0 ? ">= 0" : "> 0") + " and at most 2^40, got " +
                    std::to_string(v));
  }
  return v;
}

}  // namespace

std::string_view to_string(DType d) noexcept {
  switch (d) {
    case DType::float16:
      return "float16";
    case DType::bfloat16:
      return "bfloat16";
    case DType::float32:
      return "float32";
    case DType::int8:
      return "int8";
  }
  return "float16";
}

DType parse_dtype(std::string_view s) {
  if (s == "float16") return DType::float16;
  if (s == "bfloat16") return DType::bfloat16;
  if (s == "float32") return DType::float32;
  if (s == "int8") return DType::int8;
  throw_bad_input("workload: field 'dtype' must be one of float16, bfloat16, float32, int8; got '" + std::string(s) +
                  "'");
}

int dtype_bytes(DType d) noexcept {
  switch (d) {
    case DType::float16:
    case DType::bfloat16:
      return 2;
    case DType::float32:
      return 4;
    case DType::int8:
      return 1;
  }
  return 2;
}

Workload Workload::from_json(const Json& j) {
  require_object(j, "workload");
  for (const auto& [k, v] : j.items()) {
    if (k != "op" && k != "dims" && k != "dtype" && k != "epilogue" && k != "table" && k != "name") {
      throw_bad_input("workload: unknown field '" + k +
                      "'; expected op, dims, dtype, epilogue (or table for recorded, name for objective)");
    }
  }
  Workload w;
  w.op_ = require_string(j, "op", "workload");
  const OpInfo& spec = op_info(w.op_);
  w.family_ = spec.family;
  w.info_ = &spec;
  for (const char* own : {"table", "name"}) {
    const bool belongs = std::string_view(own) == "name" ? w.is_objective() : w.is_recorded();
    if (j.contains(own) && !belongs) {
      throw_bad_input(std::string("workload: unknown field '") + own + "' for op '" + w.op_ +
                      "'; expected op, dims, dtype, epilogue (or table for recorded, name for objective)");
    }
  }
  if (spec.family == OpFamily::table) {
    const char* field = w.is_objective() ? "name" : "table";
    w.table_ = require_string(j, field, "workload");
    if (w.table_.empty()) throw_bad_input(std::string("workload: field '") + field + "' must not be empty");
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
    if (std::find(spec.dims.begin(), spec.dims.end(), k) == spec.dims.end() &&
        std::find(spec.optional_dims.begin(), spec.optional_dims.end(), k) == spec.optional_dims.end()) {
      throw_bad_input("workload: op '" + w.op_ + "' has no dim '" + k + "'; expected " + join(spec.dims) +
                      (spec.optional_dims.empty() ? "" : " (optional: " + join(spec.optional_dims) + ")"));
    }
  }
  const bool conv = w.is_conv();
  for (const auto& name : spec.dims) w.dims_[name] = read_dim(dims, name, conv);
  for (const auto& name : spec.optional_dims) {
    if (dims.contains(name)) w.dims_[name] = read_dim(dims, name, conv);
  }
  if (const auto g = w.dims_.find("groups"); g != w.dims_.end()) {
    if (w.dims_["C"] % g->second != 0 || w.dims_["K"] % g->second != 0) {
      throw_bad_input("workload: dim 'groups' must divide C and K, got " + std::to_string(g->second));
    }
  }
  if (conv) {
    if (w.padded_h() < w.window_h() || w.padded_w() < w.window_w()) {
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
        throw_bad_input("workload: unknown epilogue op '" + name + "'; expected one of " + join(epilogue_ops()));
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
  if (is_table()) return Json{{"op", op_}, {is_objective() ? "name" : "table", table_}};
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

int quantize_grids(const std::vector<std::string>& epilogue) {
  return int(std::count_if(epilogue.begin(), epilogue.end(),
                           [](const std::string& op) { return op == "quantize" || op == "requantize"; }));
}

std::int64_t Workload::dim_or(const std::string& name, std::int64_t fallback) const {
  const auto it = dims_.find(name);
  return it == dims_.end() ? fallback : it->second;
}

std::int64_t Workload::padded_h() const { return dim("H") + dim("pad") + dim_or("pad_bottom", dim("pad")); }
std::int64_t Workload::padded_w() const {
  return dim("W") + dim_or("pad_left", dim("pad")) + dim_or("pad_right", dim("pad"));
}
std::int64_t Workload::window_h() const { return (dim("R") - 1) * dim_or("dilation", 1) + 1; }
std::int64_t Workload::window_w() const { return (dim("S") - 1) * dim_or("dilation", 1) + 1; }
std::int64_t Workload::stride_w() const { return dim_or("stride_w", dim("stride")); }

std::int64_t Workload::out_h() const { return (padded_h() - window_h()) / stride_h() + 1; }
std::int64_t Workload::out_w() const { return (padded_w() - window_w()) / stride_w() + 1; }

double Workload::flops() const {
  auto d = [&](const char* n) { return static_cast<double>(dim(n)); };
  const double groups = dims_.count("groups") ? d("groups") : 1;
  switch (family_) {
    case OpFamily::matmul:
      return 2 * batch() * d("M") * d("N") * d("K");
    case OpFamily::conv:
      return 2 * d("N") * d("K") * double(out_h()) * double(out_w()) * d("C") / groups * d("R") * d("S");
    case OpFamily::depthwise:
      return info().window_ops * d("N") * d("C") * double(out_h()) * double(out_w()) * d("R") * d("S");
    case OpFamily::rows:
      return info().row_ops * d("M") * d("N");
    case OpFamily::attention:
      return 4 * d("B") * d("S") * d("L") * d("D");  // two GEMMs
    case OpFamily::table:
    case OpFamily::custom:
      return 0;
  }
  return 0;
}

double Workload::compulsory_bytes() const {
  auto d = [&](const char* n) { return static_cast<double>(dim(n)); };
  const double b = dtype_bytes(dtype_);
  const double groups = dims_.count("groups") ? d("groups") : 1;
  switch (family_) {
    case OpFamily::matmul:
      return b * batch() * (d("M") * d("K") + d("K") * d("N") + d("M") * d("N"));
    case OpFamily::conv:
      return b * (d("N") * d("C") * d("H") * d("W") + d("K") * d("C") / groups * d("R") * d("S") +
                  d("N") * d("K") * double(out_h()) * double(out_w()));
    case OpFamily::depthwise:
      return b * (d("N") * d("C") * d("H") * d("W") + (info().window_weights ? d("C") * d("R") * d("S") : 0) +
                  d("N") * d("C") * double(out_h()) * double(out_w()));
    case OpFamily::rows:
      return b * (info().row_inputs * d("M") * d("N") + out_elements());
    case OpFamily::attention:
      return b * d("B") * (2 * d("S") * d("D") + 2 * d("L") * d("D"));
    case OpFamily::table:
    case OpFamily::custom:
      return 0;
  }
  return 0;
}

double Workload::out_elements() const {
  auto d = [&](const char* n) { return static_cast<double>(dim(n)); };
  switch (family_) {
    case OpFamily::matmul:
      return batch() * d("M") * d("N");
    case OpFamily::conv:
      return d("N") * d("K") * double(out_h()) * double(out_w());
    case OpFamily::depthwise:
      return d("N") * d("C") * double(out_h()) * double(out_w());
    case OpFamily::rows:
      switch (info().row_output) {
        case RowOutput::one_per_row:
          return d("M");
        case RowOutput::scaled:
          return d("M") * d("N") * d("scale") * d("scale");
        case RowOutput::same:
        case RowOutput::transposed:
          return d("M") * d("N");
      }
      return d("M") * d("N");
    case OpFamily::attention:
      return d("B") * d("S") * d("D");
    case OpFamily::table:
    case OpFamily::custom:
      return 0;
  }
  return 0;
}

const OpInfo& Workload::info() const {
  static const OpInfo none;  // a default-constructed Workload
  return info_ ? *info_ : none;
}

double Workload::batch() const {
  if (family_ == OpFamily::matmul) {
    return info().batch_dim.empty() ? 1.0 : double(dim(info().batch_dim));
  }
  if (family_ == OpFamily::conv || family_ == OpFamily::depthwise) return double(dim("N"));
  if (family_ == OpFamily::attention) return double(dim("B"));
  return 1.0;
}

std::string Workload::label() const {
  if (is_table()) return op_ + " " + table_;
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
