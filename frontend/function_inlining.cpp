#include "frontend/function_inlining.hpp"

#include <map>
#include <string>

#include <google/protobuf/unknown_field_set.h>

#include "core/error.hpp"

namespace atvoss::frontend {
namespace {

constexpr int kMaxDepth = 32;
constexpr int kMaxNodes = 1 << 20;  // a call tree that multiplies its nodes past any real model
// Fields newer than Debian's libonnx reads (IR 9 and 10), kept among a message's unknown fields:
// a function's attribute defaults (attribute_proto) and overload, and a node's overload.
constexpr int kFunctionAttributeProto = 11, kFunctionOverload = 13, kNodeOverload = 8;

using Unknown = google::protobuf::UnknownField;

// The length-delimited unknown fields of message m numbered `number`, in order.
std::vector<std::string> unknown_bytes(const google::protobuf::Message& m, int number) {
  std::vector<std::string> out;
  const auto& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i) {
    const Unknown& f = fields.field(i);
    if (f.number() == number && f.type() == Unknown::TYPE_LENGTH_DELIMITED) out.push_back(f.length_delimited());
  }
  return out;
}

std::string overload_of(const google::protobuf::Message& m, int number) {
  const auto v = unknown_bytes(m, number);
  return v.empty() ? std::string() : v.front();
}

std::string key(const std::string& domain, const std::string& name, const std::string& overload) {
  return domain + '\n' + name + '\n' + overload;
}

std::int64_t default_domain_version(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& imports) {
  for (const auto& o : imports) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return -1;
}

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::map<std::string, onnx::AttributeProto> defaults;  // by the function's attribute name
};

class Inliner {
 public:
  explicit Inliner(onnx::ModelProto& m) : m_(m) {
    for (const auto& f : m.functions()) {
      Function fn{&f, {}};
      for (const auto& bytes : unknown_bytes(f, kFunctionAttributeProto)) {
        onnx::AttributeProto a;
        if (a.ParseFromString(bytes)) fn.defaults[a.name()] = a;
      }
      functions_[key(f.domain(), f.name(), overload_of(f, kFunctionOverload))] = fn;
    }
  }

  void run() {
    if (functions_.empty()) return;
    for (const auto& [_, f] : functions_) import_domains(*f.proto);
    for (int depth = 0; expand_calls(); ++depth) {
      if (depth == kMaxDepth) {
        throw_bad_input("model: function calls nest deeper than " + std::to_string(kMaxDepth) +
                        " (a function that calls itself?)");
      }
    }
    m_.clear_functions();
  }

 private:
  // The function's domains that the model does not import, imported; bad_input where the
  // function reads the default domain at another version than the model does.
  void import_domains(const onnx::FunctionProto& f) {
    const std::int64_t model = default_domain_version(m_.opset_import()),
                       own = default_domain_version(f.opset_import());
    if (own >= 0 && model >= 0 && own != model) {
      throw_bad_input("model: function '" + f.name() + "' is written for opset " + std::to_string(own) +
                      " of the default domain, the model for opset " + std::to_string(model) +
                      "; expected the same version");
    }
    for (const auto& o : f.opset_import()) {
      bool known = false;
      for (const auto& m : m_.opset_import()) known = known || m.domain() == o.domain();
      if (!known) *m_.add_opset_import() = o;
    }
  }

  // One level of calls expanded; false where the graph calls no function.
  bool expand_calls() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    bool any = false;
    for (auto& node : *m_.mutable_graph()->mutable_node()) {
      const auto it = functions_.find(key(node.domain(), node.op_type(), overload_of(node, kNodeOverload)));
      if (it == functions_.end()) {
        *out.Add() = std::move(node);
        continue;
      }
      any = true;
      expand(node, it->second, out);
      if (out.size() > kMaxNodes) {
        throw_bad_input("model: its function calls expand to more than " + std::to_string(kMaxNodes) + " nodes");
      }
    }
    m_.mutable_graph()->mutable_node()->Swap(&out);
    return any;
  }

  void expand(const onnx::NodeProto& call, const Function& f,
              google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    const onnx::FunctionProto& fp = *f.proto;
    if (call.input_size() > fp.input_size() || call.output_size() > fp.output_size()) {
      throw_bad_input("model: node '" + call.name() + "' calls function '" + fp.name() + "' with " +
                      std::to_string(call.input_size()) + " inputs and " + std::to_string(call.output_size()) +
                      " outputs; expected at most " + std::to_string(fp.input_size()) + " and " +
                      std::to_string(fp.output_size()));
    }
    // Each call's own names: a call's name may be empty or repeat.
    const std::string prefix = (call.name().empty() ? fp.name() : call.name()) + "#" + std::to_string(++calls_) + "/";
    std::map<std::string, std::string> rename;
    for (int i = 0; i < fp.input_size(); ++i) rename[fp.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < fp.output_size(); ++i) {
      rename[fp.output(i)] = i < call.output_size() ? call.output(i) : prefix + fp.output(i);
    }
    const auto name_of = [&](const std::string& n) {
      const auto it = rename.find(n);
      return n.empty() ? n : it != rename.end() ? it->second : prefix + n;
    };
    std::map<std::string, const onnx::AttributeProto*> given;
    for (const auto& a : call.attribute()) given[a.name()] = &a;
    for (const auto& d : f.defaults) given.emplace(d.first, &d.second);
    for (const auto& body : fp.node()) {
      onnx::NodeProto* n = out.Add();
      *n = body;
      n->set_name(prefix + (body.name().empty() ? body.op_type() : body.name()));
      for (auto& s : *n->mutable_input()) s = name_of(s);
      for (auto& s : *n->mutable_output()) s = name_of(s);
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> attributes;
      for (const auto& a : body.attribute()) {
        if (a.ref_attr_name().empty()) {
          *attributes.Add() = a;
          continue;
        }
        const auto v = given.find(a.ref_attr_name());
        if (v == given.end()) continue;  // neither given nor defaulted: the op's own default
        onnx::AttributeProto* copy = attributes.Add();
        *copy = *v->second;
        copy->set_name(a.name());
      }
      n->mutable_attribute()->Swap(&attributes);
    }
  }

  onnx::ModelProto& m_;
  std::map<std::string, Function> functions_;
  long calls_ = 0;
};

}  // namespace

void inline_functions(onnx::ModelProto& model) { Inliner(model).run(); }

}  // namespace atvoss::frontend
