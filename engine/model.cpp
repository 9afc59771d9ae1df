// Map: Model() = read the file and the graph (the plan's, checked against the file, or a fresh
// import) -> one Builder pass over the nodes in order (kernel, plain, view or layout steps; the
// epilogue of a kernel node grown through its fused nodes while the host computes them exactly)
// -> lifetimes of every buffer -> the memory plan -> one arena. run() = inputs in, each step,
// outputs out. The steps of each kind are model_kernels.cpp's and model_plain.cpp's.
#include "engine/model.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "core/user_paths.hpp"
#include "engine/internal/model_impl.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/onnx_import.hpp"
#include "host/digest.hpp"
#include "host/machine.hpp"
#include "lowering/knob_names.hpp"
#include "plan/model_plan.hpp"

namespace atvoss::engine {
namespace {

constexpr std::int64_t kAlign = 64;

const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  return ops;
}

// An integer input's values are held as floats: each must be an integer a float holds exactly.
void require_exact_integers(const TensorInfo& input, const float* values) {
  constexpr float kExact = 16777216.0f;  // 2^24
  const std::int64_t n = elements(input.shape);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (std::trunc(v) == v && std::fabs(v) < kExact) continue;
    throw_bad_input("engine: input '" + input.name + "' (" + input.dtype + ") holds " + std::to_string(v) +
                    " at element " + std::to_string(i) + "; expected integers below 2^24 in magnitude");
  }
}

}  // namespace

bool is_integer_type(const std::string& type) {
  static const std::set<std::string> types = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"};
  return types.count(type) > 0;
}

Ref Model::Impl::plain(int t, const std::string& who) {
  Value& v = values[t];
  if (v.constant) return {-1, v.constant};
  if (v.plain < 0 && v.nhwc < 0) {
    throw_bad_input("model: node '" + who + "' reads '" + graph.tensors()[t].name +
                    "', which no step computes (a constant subgraph the engine does not evaluate)");
  }
  if (v.plain < 0) {
    v.plain = new_slot(v.shape);
    add_to_nchw_step(t);
  }
  reads(v.plain);
  return {v.plain, nullptr};
}

int Model::Impl::nhwc(int t, const std::string& who) {
  Value& v = values[t];
  if (v.nhwc < 0) {
    const Ref src = plain(t, who);
    v.nhwc = new_slot(v.shape);
    const int dst = v.nhwc;
    const Shape shape = v.shape;
    writes(dst);
    steps.push_back({graph.tensors()[t].name, "layout", {{"to", "nhwc"}}, [this, src, dst, shape] {
                       nchw_to_nhwc(at(src), ptr[dst], shape, threads);
                     }});
  }
  reads(v.nhwc);
  return v.nhwc;
}

void Model::Impl::add_to_nchw_step(int t) {
  const Value& v = values[t];
  const int src = v.nhwc, dst = v.plain;
  const Shape shape = v.shape;
  reads(src);
  writes(dst);
  steps.push_back({graph.tensors()[t].name, "layout", {{"to", "nchw"}}, [this, src, dst, shape] {
                     nhwc_to_nchw(ptr[src], ptr[dst], shape, threads);
                   }});
}

int Model::Impl::output(int t, bool in_nhwc) {
  Value& v = values[t];
  if (!shape_known(t)) {
    throw_bad_input("model: tensor '" + graph.tensors()[t].name + "' has no known shape (shape inference)");
  }
  int& slot = in_nhwc ? v.nhwc : v.plain;
  slot = new_slot(v.shape);
  v.nhwc_first = in_nhwc;
  writes(slot);
  return slot;
}

void Model::Impl::build() {
  values.resize(graph.tensors().size());
  for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
    const auto& gt = graph.tensors()[t];
    values[t].shape = gt.shape;
    // An empty constant (a Reduce's axes = []) is a constant too: its data() may be null.
    static const float kEmpty = 0;
    if (const auto* c = file->floats(gt.name)) values[t].constant = c->empty() ? &kEmpty : c->data();
  }
  add_inputs();
  find_patterns();
  add_nodes();
  add_outputs();
}

bool Model::Impl::ready(int i) const {
  std::vector<int> group = fused_nodes(i);
  group.push_back(i);
  std::set<int> inside;
  for (int g : group) inside.insert(graph.nodes()[g].outputs.begin(), graph.nodes()[g].outputs.end());
  for (int g : group) {
    for (int t : graph.nodes()[g].inputs) {
      if (!inside.count(t) && !available(t)) return false;
    }
  }
  return true;
}

void Model::Impl::add_nodes() {
  const int count = int(graph.nodes().size());
  std::vector<char> done(std::size_t(count), 0);
  // Constant subgraphs first (they read only constants, in the file's order): a step fused
  // into a kernel's group may read one before the file lists its producer.
  for (int i = 0; i < count; ++i) {
    if (!constant_outputs(graph.nodes()[i])) continue;
    add_node(i);
    done[i] = 1;
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < count; ++i) {
      if (done[i] || absorbed.count(i) || graph.nodes()[i].fused_into >= 0 || !ready(i)) continue;
      add_node(i);
      done[i] = 1;
      progress = true;
    }
  }
  for (int i = 0; i < count; ++i) {
    if (!done[i] && !absorbed.count(i) && graph.nodes()[i].fused_into < 0) {
      throw_bad_input("model: node '" + graph.nodes()[i].name + "' never has all its inputs (a cycle?)");
    }
  }
}

void Model::Impl::add_inputs() {
  // The graph's inputs in its order: those a node reads (by tensor), and those none reads (by
  // position, -1 - the position): exporters keep an argument the traced code ignored, and ONNX
  // Runtime takes it, so it is fed and left unread.
  std::vector<int> read;
  for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
    const auto& gt = graph.tensors()[t];
    if (gt.producer < 0 && !values[t].constant && !gt.consumers.empty()) read.push_back(int(t));
  }
  const auto& declared = file->model().graph().input();
  for (int i = 0; i < declared.size(); ++i) {
    const int t = tensor(declared[i].name());
    if ((t < 0 || graph.tensors()[t].consumers.empty()) && !file->floats(declared[i].name())) read.push_back(-1 - i);
  }
  const auto position = [&](int r) { return r < 0 ? -1 - r : file->input_position(graph.tensors()[r].name); };
  std::stable_sort(read.begin(), read.end(), [&](int a, int b) { return position(a) < position(b); });
  for (int t : read) {
    if (t < 0) {
      add_unread_input(declared[-1 - t]);
      continue;
    }
    const auto& gt = graph.tensors()[t];
    if (const std::string unread = file->unread_constant_type(gt.name); !unread.empty()) {
      throw_bad_input("model: constant '" + gt.name + "' is " + unread +
                      "; the engine reads float, double, integer and bool constants");
    }
    std::string type = file->input_type(gt.name);
    if (type.empty()) type = "float";
    if (type != "float" && type != "bool" && !is_integer_type(type)) {
      throw_bad_input("model: input '" + gt.name + "' is " + type +
                      "; the engine takes float, integer and bool inputs (it computes in float32)");
    }
    if (!shape_known(t)) throw_bad_input("model: input '" + gt.name + "' has no known shape");
    values[t].plain = new_slot(gt.shape);
    slots[values[t].plain].first = -1;  // written before the first step
    input_tensors.push_back(t);
    inputs.push_back({gt.name, gt.shape, type});
  }
}

void Model::Impl::add_unread_input(const onnx::ValueInfoProto& v) {
  const std::string type = file->input_type(v.name());
  if (type != "float" && type != "bool" && !is_integer_type(type)) return;  // no array the engine takes
  Shape shape;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return;
    shape.push_back(d.dim_value());
  }
  input_tensors.push_back(-1);
  inputs.push_back({v.name(), shape, type});
}

void Model::Impl::add_outputs() {
  std::vector<int> declared;  // in the file's order, as ONNX Runtime returns them
  for (std::size_t t = 0; t < graph.tensors().size(); ++t) {
    if (graph.tensors()[t].output) declared.push_back(int(t));
  }
  std::stable_sort(declared.begin(), declared.end(), [&](int a, int b) {
    return file->output_position(graph.tensors()[a].name) < file->output_position(graph.tensors()[b].name);
  });
  for (const int t : declared) {
    const Ref r = plain(t, "the graph's outputs");
    if (r.slot >= 0) slots[r.slot].last = std::numeric_limits<int>::max();  // read after the last step
    output_tensors.push_back(t);
    const std::string& dtype = graph.tensors()[t].dtype;
    outputs.push_back({graph.tensors()[t].name, values[t].shape, dtype.empty() ? "float" : dtype});
  }
}

void Model::Impl::add_node(int i) {
  const frontend::GraphNode& n = graph.nodes()[i];
  if (n.fused_into >= 0) return;  // its kernel node runs it, or adds it as a plain step
  if (absorbed.count(i)) return;  // a step before it computes it (sole_relu_reader)
  if (n.outputs.empty()) return;
  const onnx::NodeProto* proto = file->node(n.name);
  if (proto && (n.op == "Shape" || n.op == "Size")) return fold_shape_of(n, *proto);
  if (constant_outputs(n)) {  // a constant subgraph: its values are the file's, or computed now
    if (proto && computable_now(n)) fold_constant_node(n, *proto);
    return;
  }
  if (!proto) throw_bad_input("model: the plan's node '" + n.name + "' is not in the ONNX file");
  if (n.op == "Reshape" && add_channel_shuffle(n)) return;
  // Inference only: a Dropout is the identity unless it trains (opset 12's training_mode, true
  // or fed at run time), which draws a random mask.
  if (n.op == "Dropout" && scalar_input(*proto, 2, 0) != 0) unsupported(n, "training_mode: a Dropout that trains");
  if (view_ops().count(n.op)) return add_view(n);
  if (n.op == "Cast" || n.op == "CastLike") return add_cast(n, *proto);
  if (n.kernel && add_kernel(i, *proto)) return;
  add_plain(n, *proto);
  for (int f : fused_nodes(i)) {  // in its order
    if (!absorbed.count(f)) add_plain(graph.nodes()[f], *file->node(graph.nodes()[f].name));
  }
}

bool Model::Impl::constant_outputs(const frontend::GraphNode& n) const {
  if (n.outputs.empty()) return false;
  for (int o : n.outputs) {
    if (!graph.tensors()[o].constant) return false;
  }
  return true;
}

void Model::Impl::fold_shape_of(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) unsupported(n, "one input and one output expected");
  const int x = n.inputs[0];
  if (!shape_known(x)) unsupported(n, "the input's shape is not known at load");
  const Shape& xs = values[x].shape;
  std::vector<float> v;
  if (n.op == "Size") {
    v.push_back(float(elements(xs)));
  } else {  // opset 15's start and end: negative from the end, clamped to the rank
    const auto rank = std::int64_t(xs.size());
    const auto clamped = [rank](std::int64_t i) { return std::clamp(i < 0 ? i + rank : i, std::int64_t(0), rank); };
    const std::int64_t start = clamped(int_attr(p, "start", 0)), end = clamped(int_attr(p, "end", rank));
    for (std::int64_t d = start; d < end; ++d) v.push_back(float(xs[std::size_t(d)]));
  }
  Value& out = values[n.outputs[0]];
  if (!shape_known(n.outputs[0])) out.shape = n.op == "Size" ? Shape{} : Shape{std::int64_t(v.size())};
  if (std::int64_t(v.size()) != elements(out.shape)) unsupported(n, "not the inferred shape");
  out.constant = owned_data(std::move(v));
}

bool Model::Impl::computable_now(const frontend::GraphNode& n) const {
  bool missing = false;
  for (int o : n.outputs) missing = missing || !values[o].constant;
  for (int t : n.inputs) {
    if (!values[t].constant) return false;
  }
  return missing;
}

void Model::Impl::fold_constant_node(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  const std::size_t first_step = steps.size(), first_slot = slots.size();
  if (view_ops().count(n.op))
    add_view(n);
  else if (n.op == "Cast" || n.op == "CastLike")
    add_cast(n, p);
  else
    add_plain(n, p);
  ptr.resize(slots.size(), nullptr);
  for (std::size_t slot = first_slot; slot < slots.size(); ++slot) {
    owned.push_back(std::make_unique<std::vector<float>>(std::size_t(slots[slot].bytes) / sizeof(float)));
    ptr[slot] = owned.back()->data();
  }
  for (std::size_t i = first_step; i < steps.size(); ++i) steps[i].run();
  for (int o : n.outputs) {
    Value& v = values[o];
    // Held as the file's constants are, so that a kernel takes them as weights (a QDQ model's
    // DequantizeLinear of its int8 filters).
    if (v.plain >= 0) {
      const float* data = ptr[v.plain];
      v.constant = file->add_folded(graph.tensors()[o].name, std::vector<float>(data, data + elements(v.shape))).data();
    }
    v.plain = -1;
  }
  steps.resize(first_step);
  for (std::size_t slot = first_slot; slot < slots.size(); ++slot) slots[slot] = Slot{};
}

void Model::Impl::add_view(const frontend::GraphNode& n) {
  const int in = n.inputs.at(0), out = n.outputs.at(0);
  Value& v = values[out];
  if (values[in].constant) {
    v.constant = values[in].constant;
    return;
  }
  if (elements(v.shape) != elements(values[in].shape)) {
    throw_bad_input("model: node '" + n.name + "' changes the element count (" +
                    std::to_string(elements(values[in].shape)) + " -> " + std::to_string(elements(v.shape)) + ")");
  }
  v.plain = plain(in, n.name).slot;  // the same bytes, read under another shape
  slots[v.plain].last = std::max(slots[v.plain].last, int(steps.size()));
}

void Model::Impl::add_cast(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  using TP = onnx::TensorProto;
  std::int64_t to = int_attr(p, "to", 0);
  if (n.op == "CastLike") {  // to the type of its second input (opset 15)
    std::string like = n.inputs.size() == 2 ? graph.tensors()[n.inputs[1]].dtype : "";
    for (auto& c : like) c = char(std::toupper(static_cast<unsigned char>(c)));
    TP::DataType type{};
    if (!TP::DataType_Parse(like, &type)) unsupported(n, "input 'target_type' has no known element type");
    to = type;
  }
  std::string from = graph.tensors()[n.inputs.at(0)].dtype;
  if (from.empty()) from = "float";
  const bool from_float = from == "float" || from == "double";
  const bool from_int = is_integer_type(from);
  const bool to_float = to == TP::FLOAT || to == TP::DOUBLE, to_int = to == TP::INT64 || to == TP::INT32;
  // The narrower integer types: their value count and lowest value.
  static const std::map<std::int64_t, std::pair<float, float>> narrow = {{TP::INT16, {65536.0f, -32768.0f}},
                                                                         {TP::INT8, {256.0f, -128.0f}},
                                                                         {TP::UINT32, {4294967296.0f, 0.0f}},
                                                                         {TP::UINT16, {65536.0f, 0.0f}},
                                                                         {TP::UINT8, {256.0f, 0.0f}}};
  if ((!from_float && !from_int && from != "bool") || (!to_float && !to_int && to != TP::BOOL && !narrow.count(to))) {
    unsupported(n, "a cast to " + elem_type_name(int(to)) + " from '" + from +
                       "' (from float, double, an integer type or bool; to float, double, an integer type other "
                       "than uint64, or bool)");
  }
  if (narrow.count(to)) return add_unary_op(n, "TruncWrap", narrow.at(to).first, narrow.at(to).second);
  if (to_float || (to_int && !from_float) || (to == TP::BOOL && from == "bool")) return add_view(n);
  add_unary_op(n, to_int ? "Trunc" : "NotZero", 0, 0);
}

void Model::Impl::load_inputs(const std::vector<const float*>& in) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) throw_bad_input("engine: input '" + inputs[i].name + "' is null");
    if (input_tensors[i] < 0) continue;  // a graph input no node reads (add_inputs)
    const Value& v = values[input_tensors[i]];
    if (inputs[i].dtype != "float") require_exact_integers(inputs[i], in[i]);
    std::memcpy(ptr[v.plain], in[i], std::size_t(elements(v.shape)) * sizeof(float));
  }
}

void Model::Impl::plan_arena() {
  std::vector<execution::Allocation> lifetimes;
  const double end = double(steps.size()) + 1;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const Slot& slot = slots[s];
    const double first = slot.first == std::numeric_limits<int>::max() ? 0 : double(slot.first);
    const double last = slot.last == std::numeric_limits<int>::max() ? end : double(std::max(slot.last, slot.first));
    lifetimes.push_back({std::to_string(s), 0, std::max<std::int64_t>(slot.bytes, 1), first, last + 1});
  }
  const execution::MemoryPlan plan = execution::plan_allocations(lifetimes, kAlign);
  arena_bytes = plan.peak_bytes;
  arena_storage.reset(new float[std::size_t(arena_bytes / std::int64_t(sizeof(float))) + kAlign]);
  auto base = reinterpret_cast<std::uintptr_t>(arena_storage.get());
  base = (base + kAlign - 1) / kAlign * kAlign;
  ptr.assign(slots.size(), nullptr);
  for (const auto& a : plan.allocations) {
    ptr[std::stoul(a.tensor)] = reinterpret_cast<float*>(base + std::uintptr_t(a.offset));
  }
}

namespace {

// The plan's graph must be the file's: the same nodes, ops and tensor shapes.
void check_plan_matches(const frontend::Graph& planned, const frontend::Graph& file_graph, const std::string& path) {
  auto refuse = [&](const std::string& what) {
    throw_bad_input("engine: the model plan is not of '" + path + "': " + what);
  };
  if (planned.nodes().size() != file_graph.nodes().size()) {
    refuse(std::to_string(planned.nodes().size()) + " nodes in the plan, " + std::to_string(file_graph.nodes().size()) +
           " in the file");
  }
  for (std::size_t i = 0; i < planned.nodes().size(); ++i) {
    const auto &a = planned.nodes()[i], &b = file_graph.nodes()[i];
    if (a.name != b.name || a.op != b.op) refuse("node " + std::to_string(i) + " is '" + a.name + "' in the plan");
  }
  for (const auto& t : file_graph.tensors()) {
    const int i = planned.tensor_index(t.name);
    if (i < 0 || planned.tensors()[i].shape != t.shape) refuse("tensor '" + t.name + "' has another shape");
  }
}

// The plan's schedules as the runtime's table. threads > 0 (the caller's "cores the kernels run
// on") caps each schedule's threads knob: a plan tuned on two cores, run on one, must not start
// a second thread on a core the caller kept for other work (a 2-thread ResNet-50 plan run on
// one free core took 12x its time, its kernels' threads waiting for each other).
std::shared_ptr<const table::ScheduleTable> plan_table(const plan::ModelPlan& p, int threads) {
  table::TableHeader header;
  header.target_name = p.target.name;
  header.target_key = p.target.key();
  std::vector<table::TableEntry> entries;
  for (const auto& t : p.tasks) {
    Schedule s = t.schedule;
    if (threads > 0 && s.has(std::string(knobs::threads)) && s.at(std::string(knobs::threads)) > threads) {
      s.set(std::string(knobs::threads), threads);
    }
    entries.push_back({t.workload, s, t.time_us, t.provenance});
  }
  return std::make_shared<const table::ScheduleTable>(header, entries);
}

}  // namespace

Model::Model(const std::string& onnx_path, const ModelOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  m.file =
      std::make_unique<OnnxFile>(onnx_path, frontend::BoundDims{options.batch, options.dims, options.input_shapes});
  frontend::OnnxImportOptions io;
  io.batch = options.batch;
  io.dims = options.dims;
  io.float_dtype = DType::float32;
  m.graph = frontend::import_bound_onnx(m.file->model(), onnx_path, io).graph();
  runtime::RuntimeOptions ro;
  ro.build = options.build;
  ro.default_threads = options.threads > 0 ? options.threads : host::this_machine().physical_cores;
  m.threads = ro.default_threads;
  if (!options.plan.empty()) {
    const plan::ModelPlan p = plan::ModelPlan::load(options.plan);
    if (p.graph.empty()) throw_bad_input("engine: the model plan '" + options.plan + "' has no graph");
    check_plan_matches(p.graph, m.graph, onnx_path);
    if (!p.model_sha256.empty() && p.model_sha256 != host::sha256_hex(read_input_file(onnx_path, "model"))) {
      throw_bad_input("engine: the model plan '" + options.plan + "' was tuned for another file than '" + onnx_path +
                      "' (its sha256 differs: other weights)");
    }
    m.graph = p.graph;
    ro.loaded_table = plan_table(p, options.threads);
  }
  m.rt = std::make_unique<runtime::Runtime>(std::move(ro));
  m.build();
  m.settle_codes();
  m.plan_arena();
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const std::vector<TensorInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return impl_->outputs; }
std::int64_t Model::arena_bytes() const { return impl_->arena_bytes; }

void Model::run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.inputs.size() || outputs.size() != m.outputs.size()) {
    throw_bad_input("engine: " + std::to_string(m.inputs.size()) + " inputs and " + std::to_string(m.outputs.size()) +
                    " outputs expected, got " + std::to_string(inputs.size()) + " and " +
                    std::to_string(outputs.size()));
  }
  m.load_inputs(inputs);
  for (const auto& s : m.steps) s.run();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) throw_bad_input("engine: output '" + m.outputs[i].name + "' is null");
    const Value& v = m.values[m.output_tensors[i]];
    const float* src = v.constant ? v.constant : m.ptr[v.plain];
    std::memcpy(outputs[i], src, std::size_t(elements(v.shape)) * sizeof(float));
  }
}

std::vector<std::vector<float>> Model::run(const std::vector<const float*>& inputs) {
  std::vector<std::vector<float>> out;
  std::vector<float*> ptrs;
  for (const auto& o : impl_->outputs) out.emplace_back(std::size_t(elements(o.shape)));
  for (auto& o : out) ptrs.push_back(o.data());
  run(inputs, ptrs);
  return out;
}

Json Model::profile(const std::vector<const float*>& inputs, int runs) {
  Impl& m = *impl_;
  std::vector<float*> ptrs;
  std::vector<std::vector<float>> out;
  for (const auto& o : m.outputs) ptrs.push_back(out.emplace_back(std::size_t(elements(o.shape))).data());
  run(inputs, ptrs);  // inputs checked
  std::vector<std::vector<double>> times(m.steps.size());
  for (int r = 0; r < std::max(runs, 1); ++r) {
    m.load_inputs(inputs);  // a step may have reused an input's bytes once its readers ran
    for (std::size_t i = 0; i < m.steps.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      m.steps[i].run();
      times[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
  }
  Json steps = Json::array();
  double total = 0;
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    const double us = times[i][times[i].size() / 2];
    total += us;
    Json j = m.steps[i].info;
    j["node"] = m.steps[i].node;
    j["kind"] = m.steps[i].kind;
    j["us"] = us;
    steps.push_back(j);
  }
  return {{"steps", steps}, {"total_us", total}};
}

Json Model::describe() const {
  Json steps = Json::array();
  for (const auto& s : impl_->steps) {
    Json j = s.info;
    j["node"] = s.node;
    j["kind"] = s.kind;
    steps.push_back(j);
  }
  return {{"steps", steps},
          {"arena_bytes", impl_->arena_bytes},
          {"kernels", impl_->kernels},
          {"kernels_from_plan", impl_->kernels_from_plan}};
}

}  // namespace atvoss::engine
