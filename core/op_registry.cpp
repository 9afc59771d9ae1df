#include "core/op_registry.hpp"

#include <deque>
#include <mutex>

#include "core/error.hpp"

namespace atvoss {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<OpInfo> ops;  // deque: entries never move, so returned references stay valid
};

OpInfo builtin(std::string name, OpFamily family, std::vector<std::string> dims, bool epilogue) {
  OpInfo op;
  op.name = std::move(name);
  op.family = family;
  op.dims = std::move(dims);
  op.takes_epilogue = epilogue;
  return op;
}

OpInfo row_op(std::string name, int inputs, double ops, bool reduction) {
  OpInfo op = builtin(std::move(name), OpFamily::rows, {"M", "N"}, false);
  op.row_inputs = inputs;
  op.row_ops = ops;
  op.row_reduction = reduction;
  return op;
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: lookups may run during static destruction
    const std::vector<std::string> conv = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad"};
    reg->ops.push_back(builtin("matmul", OpFamily::matmul, {"M", "N", "K"}, true));
    OpInfo bmm = builtin("batch_matmul", OpFamily::matmul, {"B", "M", "N", "K"}, true);
    bmm.batch_dim = "B";
    reg->ops.push_back(bmm);
    reg->ops.push_back(builtin("conv2d", OpFamily::conv, conv, true));
    reg->ops.push_back(builtin("depthwise_conv2d", OpFamily::depthwise,
                               {"N", "C", "H", "W", "R", "S", "stride", "pad"}, true));
    reg->ops.push_back(row_op("elementwise", 2, 1, false));
    // layernorm/softmax: reduce, subtract or exp, scale, ... about five ops an element.
    reg->ops.push_back(row_op("layernorm", 1, 5, true));
    reg->ops.push_back(row_op("softmax", 1, 5, true));
    reg->ops.push_back(builtin("recorded", OpFamily::table, {}, false));
    return reg;
  }();
  return *r;
}

std::string joined_names(const Registry& r) {
  std::string out;
  for (const auto& op : r.ops) out += (out.empty() ? "" : ", ") + op.name;
  return out;
}

}  // namespace

const OpInfo* find_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& op : r.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

const OpInfo& op_info(std::string_view name) {
  if (const OpInfo* op = find_op(name)) return *op;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  throw_bad_input("workload: unknown op '" + std::string(name) + "'; expected one of: " +
                  joined_names(r));
}

void register_op(OpInfo info) {
  if (info.name.empty()) throw_bad_input("register_op: the op needs a name");
  if (info.family != OpFamily::table && info.dims.empty()) {
    throw_bad_input("register_op: op '" + info.name + "' needs at least one dim");
  }
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& op : r.ops) {
    if (op.name == info.name) throw_bad_input("register_op: op '" + info.name + "' already exists");
  }
  r.ops.push_back(std::move(info));
}

std::vector<std::string> known_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& op : r.ops) names.push_back(op.name);
  return names;
}

}  // namespace atvoss
