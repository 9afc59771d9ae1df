// ONNX node attributes by name, with the value a node without one takes, and element types by
// name: what the importer (onnx_import.cpp) and the model engine (engine/) read of a node,
// read one way.
// Pure functions of the node: thread-safe.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

// ONNX's name of an element type in lower case ("float", "int64", ...), or "ONNX data type N"
// for a type this protobuf predates (Debian's ONNX 1.12 has no float8 or int4).
inline std::string elem_type_name(int type) {
  std::string name = onnx::TensorProto::DataType_IsValid(type)
                         ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(type))
                         : "";
  if (name.empty()) return "ONNX data type " + std::to_string(type);
  for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Bytes an element of ONNX type `type` takes in a file; 0 for a type of no fixed size (string,
// or one this protobuf predates).
inline int element_bytes(int type) {
  switch (type) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      return 8;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

inline bool has_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

inline std::int64_t int_attr(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

inline float float_attr(const onnx::NodeProto& n, const std::string& name, float fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.f();
  }
  return fallback;
}

inline std::string string_attr(const onnx::NodeProto& n, const std::string& name, const std::string& fallback = "") {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.s();
  }
  return fallback;
}

// Whether n is torch's Hardsigmoid as it exports (HardSigmoid of alpha 1/6 and beta 0.5: the
// host's "hardsigmoid" epilogue op, MobileNetV3's squeeze-and-excite gate), which the importer
// names and the engine fuses as that op; another alpha or beta is not.
inline bool is_torch_hardsigmoid(const onnx::NodeProto& n) {
  return n.op_type() == "HardSigmoid" && float_attr(n, "alpha", 0.2f) == 1.0f / 6 &&
         float_attr(n, "beta", 0.5f) == 0.5f;
}

// Empty where the node has none.
inline std::vector<std::int64_t> ints_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

// Empty where the node has none.
inline std::vector<float> floats_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.floats().begin(), a.floats().end()};
  }
  return {};
}

// Empty where the node has none.
inline std::vector<std::string> strings_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.strings().begin(), a.strings().end()};
  }
  return {};
}

}  // namespace atvoss::frontend
