// OnnxFile: what the model engine reads from an ONNX file besides the graph atvoss imports from
// it (frontend/onnx_import.hpp): its constants (initializers and Constant nodes) as fp32 or int64
// data (from float, double and every integer and bool type), each node's proto by the
// importer's node name, the default domain's opset, and a digest of the constants, so that a
// model plan can be matched with the weights it was tuned for.
// Immutable once the engine has built its steps (add_folded runs while it builds): thread-safe
// from then on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/onnx_attributes.hpp"
#include "frontend/onnx_import.hpp"

namespace atvoss::engine {

class OnnxFile {
 public:
  // The model as the importer reads it at these dims (frontend::read_bound_onnx_model: shape
  // computations folded into constants). bad_input naming the file when unreadable or not an
  // ONNX model; naming the tensor when a constant is stored outside the file. A constant of a
  // type the engine does not read (float16, string, ...) is kept unread: unread_constant_type.
  OnnxFile(const std::string& path, const frontend::BoundDims& bound);

  // The node the importer names name (its name, or "<op>:<first output>"); null if none.
  const onnx::NodeProto* node(const std::string& name) const;
  // A constant's data as fp32 (from float, double, integer or bool storage); null if tensor is
  // no constant the engine reads.
  const std::vector<float>* floats(const std::string& tensor) const;
  // A constant the engine computed at load (a constant subgraph's output, as a QDQ model's
  // dequantized weights), read by floats() as the file's own from then on; its stored data.
  const std::vector<float>& add_folded(const std::string& tensor, std::vector<float> data);
  // A constant's data as int64 (from integer or bool storage); null if none.
  const std::vector<std::int64_t>* ints(const std::string& tensor) const;
  // The type of a constant the engine does not read ("float16", ...); empty if none such.
  std::string unread_constant_type(const std::string& tensor) const;
  std::int64_t opset() const { return opset_; }
  // The bound model itself (what frontend::import_bound_onnx imports).
  const onnx::ModelProto& model() const { return *model_; }
  // The ONNX element type of a graph input ("float", "int64", ...), empty if unknown.
  std::string input_type(const std::string& tensor) const;
  // A graph input's position among the graph's inputs (the order ONNX Runtime takes them in);
  // -1 for a tensor that is no graph input.
  int input_position(const std::string& tensor) const;
  // A graph output's position among the graph's outputs (the order ONNX Runtime returns them
  // in); -1 for a tensor that is no graph output.
  int output_position(const std::string& tensor) const;

 private:
  void add_constant(const onnx::TensorProto& t);

  std::shared_ptr<onnx::ModelProto> model_;
  std::map<std::string, const onnx::NodeProto*> nodes_;
  std::map<std::string, std::vector<float>> floats_;
  std::map<std::string, std::vector<std::int64_t>> ints_;
  std::map<std::string, std::string> unread_;  // constant -> its type
  std::int64_t opset_ = 0;
};

// A one-element tensor (an attribute's, as ConstantOfShape's `value`) as a float, from float,
// double, int64 or int32 storage; nullopt for more elements or another type.
std::optional<float> single_value(const onnx::TensorProto& t);

// Node attributes and element types, read as the importer reads them.
using frontend::elem_type_name;
using frontend::float_attr;
using frontend::floats_attr;
using frontend::int_attr;
using frontend::ints_attr;
using frontend::string_attr;
using frontend::strings_attr;

}  // namespace atvoss::engine
