#include "frontend/onnx_model_file.hpp"

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "core/utf8.hpp"

namespace atvoss::frontend {
namespace {

void make_valid(std::string* s) {
  if (!is_valid_utf8(*s)) *s = escape_invalid_utf8(*s);
}

void make_valid(google::protobuf::RepeatedPtrField<std::string>* list) {
  for (std::string& s : *list) make_valid(&s);
}

void make_valid_names(onnx::GraphProto& g);

void make_valid_names(onnx::TensorProto& t) { make_valid(t.mutable_name()); }

void make_valid_names(onnx::ValueInfoProto& v) { make_valid(v.mutable_name()); }

void make_valid_names(onnx::AttributeProto& a) {
  make_valid(a.mutable_name());
  make_valid(a.mutable_s());
  make_valid(a.mutable_strings());
  if (a.has_t()) make_valid_names(*a.mutable_t());
  for (auto& t : *a.mutable_tensors()) make_valid_names(t);
  if (a.has_g()) make_valid_names(*a.mutable_g());  // the bodies of If, Loop, Scan
  for (auto& g : *a.mutable_graphs()) make_valid_names(g);
}

void make_valid_names(onnx::GraphProto& g) {
  make_valid(g.mutable_name());
  for (auto& n : *g.mutable_node()) {
    make_valid(n.mutable_name());
    make_valid(n.mutable_op_type());
    make_valid(n.mutable_domain());
    make_valid(n.mutable_input());
    make_valid(n.mutable_output());
    for (auto& a : *n.mutable_attribute()) make_valid_names(a);
  }
  for (auto& t : *g.mutable_initializer()) make_valid_names(t);
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (auto& v : *list) make_valid_names(v);
  }
}

}  // namespace

onnx::ModelProto read_onnx_model(const std::string& path) {
  require_input_file(path, "model");  // absent, a directory, a FIFO or a device: bad input
  const std::string bytes = read_input_file(path, "model");
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph()) {
    throw_bad_input("model: '" + path + "' is not an ONNX model (protobuf parse failed or no graph)");
  }
  make_valid_names(*model.mutable_graph());
  return model;
}

}  // namespace atvoss::frontend
