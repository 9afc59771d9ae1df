// ONNX node attributes by name, with the value a node without one takes: what the importer
// (onnx_import.cpp) and the model engine (engine/) read of a node, read one way.
// Pure functions of the node: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace atvoss::frontend {

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

// Empty where the node has none.
inline std::vector<std::int64_t> ints_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

}  // namespace atvoss::frontend
