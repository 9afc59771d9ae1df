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

OpInfo row_op(std::string name, int inputs, double ops, bool reduction, RowOutput output = RowOutput::same) {
  OpInfo op = builtin(std::move(name), OpFamily::rows, {"M", "N"}, false);
  op.row_inputs = inputs;
  op.row_ops = ops;
  op.row_reduction = reduction;
  op.row_output = output;
  if (output == RowOutput::scaled) op.dims.push_back("scale");
  return op;
}

// A pooling window: the depthwise template without weights, one op per window element.
// Real models pool with every geometry ONNX allows, so a pool may also give: pad_bottom,
// pad_left and pad_right (default pad: `pad` is the top padding; ceil_mode is extra end
// padding), stride_w (default stride) and dilation (default 1). Workload::out_h() and
// out_w() read them.
OpInfo pool_op(std::string name, std::vector<std::string> dims) {
  OpInfo op = builtin(std::move(name), OpFamily::depthwise, std::move(dims), false);
  op.optional_dims = {"pad_bottom", "pad_left", "pad_right", "stride_w", "dilation"};
  op.window_weights = false;
  op.window_ops = 1;
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
    // Grouped: C and K split into `groups` independent convolutions (ResNeXt, ShuffleNet, AlexNet).
    std::vector<std::string> grouped = conv;
    grouped.push_back("groups");
    reg->ops.push_back(builtin("group_conv2d", OpFamily::conv, grouped, true));
    const std::vector<std::string> window = {"N", "C", "H", "W", "R", "S", "stride", "pad"};
    reg->ops.push_back(builtin("depthwise_conv2d", OpFamily::depthwise, window, true));
    reg->ops.push_back(pool_op("max_pool2d", window));
    reg->ops.push_back(pool_op("avg_pool2d", window));
    // Binary and unary maps take an epilogue: the activation that follows them runs in
    // the same pass (the rows template always fuses it).
    OpInfo binary = row_op("elementwise", 2, 1, false);
    binary.takes_epilogue = true;
    reg->ops.push_back(binary);
    OpInfo unary = row_op("map", 1, 0, false);  // a copy whose epilogue is the work
    unary.takes_epilogue = true;
    reg->ops.push_back(unary);
    // Reductions along N: a running max or sum per row, one value out.
    reg->ops.push_back(row_op("reduce", 1, 1, true, RowOutput::one_per_row));
    reg->ops.push_back(row_op("global_avg_pool", 1, 1, true, RowOutput::one_per_row));
    // Data movement: no arithmetic, only the copy. A transpose also turns each element
    // once on the vector unit and stores short rows (its cost, lowering/lowering.cpp).
    OpInfo transpose = row_op("transpose", 1, 1, false, RowOutput::transposed);
    transpose.dims.push_back("inner");
    reg->ops.push_back(transpose);
    reg->ops.push_back(row_op("concat", 1, 0, false));
    reg->ops.push_back(row_op("gather", 1, 0, false));  // M table rows of N picked by index
    reg->ops.push_back(row_op("upsample", 1, 0, false, RowOutput::scaled));
    // layernorm/softmax: reduce, subtract or exp, scale, ... about five ops an element.
    reg->ops.push_back(row_op("layernorm", 1, 5, true));
    // Local response normalisation across channels (AlexNet, GoogLeNet), size-5 window:
    // five squares and adds, a power and a divide per element.
    reg->ops.push_back(row_op("lrn", 1, 13, false));
    reg->ops.push_back(row_op("softmax", 1, 5, true));
    // B independent heads (batch x heads), S queries, L keys, head dim D. The unfused
    // baseline is batch_matmul (Q K^T) + softmax + batch_matmul (P V).
    reg->ops.push_back(builtin("attention", OpFamily::attention, {"B", "S", "L", "D"}, false));
    reg->ops.push_back(builtin("recorded", OpFamily::table, {}, false));
    // A user's own objective (Python atvoss.Optimizer): its space lives with the user.
    reg->ops.push_back(builtin("objective", OpFamily::table, {}, false));
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
  throw_bad_input("workload: unknown op '" + std::string(name) + "'; expected one of: " + joined_names(r));
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
