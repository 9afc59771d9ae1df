#include "engine/onnx_file.hpp"

#include <cstring>

#include "core/error.hpp"
#include "frontend/onnx_import.hpp"

namespace atvoss::engine {
namespace {

template <typename T>
std::vector<T> raw_as(const std::string& raw, std::int64_t count, const std::string& name) {
  if (std::int64_t(raw.size()) != count * std::int64_t(sizeof(T))) {
    throw_bad_input("model: constant '" + name + "' holds " + std::to_string(raw.size()) + " bytes, its shape " +
                    std::to_string(count * sizeof(T)));
  }
  std::vector<T> v(static_cast<std::size_t>(count));
  if (count) std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

std::int64_t count_of(const onnx::TensorProto& t) {
  std::int64_t n = 1;
  for (auto d : t.dims()) n *= d;
  return n;
}

template <typename To, typename From>
std::vector<To> converted(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// An integer constant of storage type T as int64: T's bytes in raw data, else the typed field
// ONNX stores it in (int32_data for the narrow types and bool, uint64_data for uint32 and uint64).
template <typename T, typename Field>
std::vector<std::int64_t> integers(const onnx::TensorProto& t, const Field& field, std::int64_t n) {
  if (t.has_raw_data()) return converted<std::int64_t>(raw_as<T>(t.raw_data(), n, t.name()));
  return std::vector<std::int64_t>(field.begin(), field.end());
}

}  // namespace

OnnxFile::OnnxFile(const std::string& path, const frontend::BoundDims& bound)
    : model_(std::make_shared<onnx::ModelProto>(frontend::read_bound_onnx_model(path, bound))) {
  for (const auto& o : model_->opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  }
  const auto& g = model_->graph();
  for (const auto& t : g.initializer()) add_constant(t);
  for (const auto& n : g.node()) {
    const std::string name = n.name().empty() ? n.op_type() + ":" + (n.output_size() ? n.output(0) : "") : n.name();
    nodes_.emplace(name, &n);
    if (n.op_type() == "Constant" && n.output_size() == 1) {
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) {
          onnx::TensorProto t = a.t();
          t.set_name(n.output(0));
          add_constant(t);
        } else if (a.name() == "value_float") {
          floats_[n.output(0)] = {a.f()};
        } else if (a.name() == "value_int") {
          ints_[n.output(0)] = {a.i()};
          floats_[n.output(0)] = {float(a.i())};
        } else if (a.name() == "value_floats") {
          floats_[n.output(0)] = {a.floats().begin(), a.floats().end()};
        } else if (a.name() == "value_ints") {
          ints_[n.output(0)] = {a.ints().begin(), a.ints().end()};
          floats_[n.output(0)] = {a.ints().begin(), a.ints().end()};
        }
      }
    }
  }
}

void OnnxFile::add_constant(const onnx::TensorProto& t) {
  const std::string& name = t.name();
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw_bad_input("model: constant '" + name + "' is stored outside the file (external data is not read)");
  }
  const std::int64_t n = count_of(t);
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      floats_[name] = t.has_raw_data() ? raw_as<float>(t.raw_data(), n, name)
                                       : std::vector<float>(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::DOUBLE:
      floats_[name] =
          converted<float>(t.has_raw_data() ? raw_as<double>(t.raw_data(), n, name)
                                            : std::vector<double>(t.double_data().begin(), t.double_data().end()));
      break;
    case onnx::TensorProto::INT64:
      ints_[name] = integers<std::int64_t>(t, t.int64_data(), n);
      break;
    case onnx::TensorProto::INT32:
      ints_[name] = integers<std::int32_t>(t, t.int32_data(), n);
      break;
    case onnx::TensorProto::INT16:
      ints_[name] = integers<std::int16_t>(t, t.int32_data(), n);
      break;
    case onnx::TensorProto::INT8:
      ints_[name] = integers<std::int8_t>(t, t.int32_data(), n);
      break;
    case onnx::TensorProto::UINT16:
      ints_[name] = integers<std::uint16_t>(t, t.int32_data(), n);
      break;
    case onnx::TensorProto::UINT32:
      ints_[name] = integers<std::uint32_t>(t, t.uint64_data(), n);
      break;
    case onnx::TensorProto::UINT64:
      ints_[name] = integers<std::uint64_t>(t, t.uint64_data(), n);
      break;
    case onnx::TensorProto::BOOL:  // a causal mask kept as a buffer (GPT-2's attention), as 0 or 1
    case onnx::TensorProto::UINT8:
      ints_[name] = integers<std::uint8_t>(t, t.int32_data(), n);
      if (t.data_type() == onnx::TensorProto::BOOL) {
        for (auto& v : ints_[name]) v = v != 0;
      }
      break;
    default:
      unread_[name] = elem_type_name(t.data_type());  // refused only if a step reads it
      return;
  }
  const bool integral = t.data_type() != onnx::TensorProto::FLOAT && t.data_type() != onnx::TensorProto::DOUBLE;
  if (integral) floats_[name] = converted<float>(ints_[name]);
  if (std::int64_t(floats_[name].size()) != n) {
    throw_bad_input("model: constant '" + name + "' holds " + std::to_string(floats_[name].size()) +
                    " values, its shape " + std::to_string(n));
  }
}

std::optional<float> single_value(const onnx::TensorProto& t) {
  if (count_of(t) != 1) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.has_raw_data()) return raw_as<float>(t.raw_data(), 1, t.name())[0];
      return t.float_data_size() == 1 ? std::optional<float>(t.float_data(0)) : std::nullopt;
    case onnx::TensorProto::DOUBLE:
      if (t.has_raw_data()) return float(raw_as<double>(t.raw_data(), 1, t.name())[0]);
      return t.double_data_size() == 1 ? std::optional<float>(float(t.double_data(0))) : std::nullopt;
    case onnx::TensorProto::INT64:
      if (t.has_raw_data()) return float(raw_as<std::int64_t>(t.raw_data(), 1, t.name())[0]);
      return t.int64_data_size() == 1 ? std::optional<float>(float(t.int64_data(0))) : std::nullopt;
    case onnx::TensorProto::INT32:
      if (t.has_raw_data()) return float(raw_as<std::int32_t>(t.raw_data(), 1, t.name())[0]);
      return t.int32_data_size() == 1 ? std::optional<float>(float(t.int32_data(0))) : std::nullopt;
    default:
      return std::nullopt;
  }
}

const onnx::NodeProto* OnnxFile::node(const std::string& name) const {
  const auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

const std::vector<float>* OnnxFile::floats(const std::string& tensor) const {
  const auto it = floats_.find(tensor);
  return it == floats_.end() ? nullptr : &it->second;
}

const std::vector<float>& OnnxFile::add_folded(const std::string& tensor, std::vector<float> data) {
  return floats_[tensor] = std::move(data);
}

std::string OnnxFile::unread_constant_type(const std::string& tensor) const {
  const auto it = unread_.find(tensor);
  return it == unread_.end() ? "" : it->second;
}

const std::vector<std::int64_t>* OnnxFile::ints(const std::string& tensor) const {
  const auto it = ints_.find(tensor);
  return it == ints_.end() ? nullptr : &it->second;
}

int OnnxFile::input_position(const std::string& tensor) const {
  const auto& in = model_->graph().input();
  for (int i = 0; i < in.size(); ++i) {
    if (in.Get(i).name() == tensor) return i;
  }
  return -1;
}

int OnnxFile::output_position(const std::string& tensor) const {
  const auto& out = model_->graph().output();
  for (int i = 0; i < out.size(); ++i) {
    if (out.Get(i).name() == tensor) return i;
  }
  return -1;
}

std::string OnnxFile::input_type(const std::string& tensor) const {
  for (const auto& v : model_->graph().input()) {
    if (v.name() != tensor || !v.type().has_tensor_type()) continue;
    return elem_type_name(v.type().tensor_type().elem_type());
  }
  return "";
}

}  // namespace atvoss::engine
