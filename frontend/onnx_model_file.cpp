#include "frontend/onnx_model_file.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "core/utf8.hpp"
#include "frontend/function_inlining.hpp"
#include "frontend/onnx_attributes.hpp"
#include "frontend/quantized_ops.hpp"

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

// Where an initializer's bytes lie outside the model file: ONNX's external_data entries.
struct ExternalData {
  std::string location;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> length;
};

ExternalData external_data_of(const onnx::TensorProto& t) {
  const std::string who = "model: constant '" + t.name() + "': external data's ";
  ExternalData e;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") e.location = entry.value();
    if (entry.key() != "offset" && entry.key() != "length") continue;
    std::uint64_t v = 0;
    const std::string& text = entry.value();
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      throw_bad_input(who + "'" + entry.key() + "': expected a whole number of bytes, got '" + text + "'");
    }
    if (entry.key() == "offset")
      e.offset = v;
    else
      e.length = v;
  }
  const std::filesystem::path rel(e.location);
  bool inside = !e.location.empty() && rel.is_relative();
  for (const auto& part : rel) inside = inside && part != "..";
  if (!inside) {
    throw_bad_input(who + "'location': expected a file in the model's folder or below it, got '" + e.location + "'");
  }
  return e;
}

// Every initializer stored outside the model (onnx.save's save_as_external_data: a file beside
// the model, named by its "location", "length" bytes from "offset") read into its raw_data, as
// if the file held it: the importer and the engine then read one kind of constant. dir: the
// model's folder. bad_input naming the constant and the field for a location outside dir, a
// length that is not the tensor's, or bytes past the file's end.
void read_external_data(onnx::GraphProto& g, const std::filesystem::path& dir) {
  for (auto& t : *g.mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    const ExternalData e = external_data_of(t);
    const std::string file = (dir / e.location).string(), who = "model: constant '" + t.name() + "': ";
    require_input_file(file, "model: external data of constant '" + t.name() + "'");
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(file, ec);
    std::uint64_t shaped = std::uint64_t(element_bytes(t.data_type()));  // 0: a type of no fixed size
    for (auto d : t.dims()) shaped *= std::uint64_t(d < 0 ? 0 : d);
    const std::uint64_t bytes = e.length.value_or(shaped);
    if (element_bytes(t.data_type()) && bytes != shaped) {
      throw_bad_input(who + "external data's 'length' is " + std::to_string(bytes) + " bytes, its shape " +
                      std::to_string(shaped));
    }
    if (ec || e.offset > size || bytes > size - e.offset) {
      throw_bad_input(who + "external data's 'offset' " + std::to_string(e.offset) + " + 'length' " +
                      std::to_string(bytes) + " runs past the end of '" + file + "' (" + std::to_string(size) +
                      " bytes)");
    }
    if (bytes > kMaxInputFileBytes) {
      throw_bad_input(who + "external data of " + std::to_string(bytes) + " bytes; the limit is " +
                      std::to_string(kMaxInputFileBytes));
    }
    std::string raw(bytes, '\0');
    std::ifstream in(file, std::ios::binary);
    in.seekg(std::streamoff(e.offset));
    if (!in.read(raw.data(), std::streamsize(bytes))) throw Error(ErrorKind::io, "'" + file + "': cannot read");
    t.set_raw_data(std::move(raw));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
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
  inline_functions(model);
  make_valid_names(*model.mutable_graph());
  read_external_data(*model.mutable_graph(), std::filesystem::path(path).parent_path());
  expand_quantized_ops(model);
  return model;
}

}  // namespace atvoss::frontend
