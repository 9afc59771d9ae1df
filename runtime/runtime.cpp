#include "runtime/runtime.hpp"

#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "host/host_space.hpp"
#include "host/vector_code.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::runtime {
namespace {

Workload make_workload(const std::string& op, Json dims, const std::vector<std::string>& epilogue,
                       DType dtype = DType::float32) {
  return Workload::from_json(
      Json{{"op", op}, {"dtype", to_string(dtype)}, {"dims", std::move(dims)}, {"epilogue", epilogue}});
}

std::shared_ptr<const table::ScheduleTable> load_table(const RuntimeOptions& o, const host::MachineInfo& machine,
                                                       std::string& no_table_reason) {
  if (o.table.empty() && !o.loaded_table) {
    no_table_reason = "no table loaded";
    return nullptr;
  }
  auto table = o.loaded_table ? o.loaded_table : table::ScheduleTable::load(o.table);
  const std::string& tuned_on = table->header().target_name;
  if (tuned_on == machine.target_name()) return table;
  const std::string why = "table " + (o.loaded_table ? std::string("given") : o.table) + " was tuned on target '" +
                          tuned_on + "', not on this CPU '" + machine.target_name() +
                          "' (fingerprint of CPU model, SIMD flags and cores)";
  if (o.foreign_table == ForeignTable::refuse) throw_bad_input("runtime: " + why);
  no_table_reason = why + "; running default schedules";
  return nullptr;
}

// The pointers w's kernel reads or writes; bad_input naming the first one missing.
void check_args(const Workload& w, const host::AtvossArgs& args) {
  auto need = [&](const void* p, const char* name, const char* what) {
    if (p == nullptr)
      throw_bad_input(std::string("runtime: argument '") + name + "' is null; " + w.label() + " needs " + what);
  };
  if (w.dtype() == DType::float32) {
    need(args.a, "a", "its first input");
    if (!args.qb_packed) need(args.b, "b", "its second input (weights)");
  } else {
    need(args.qa, "a", "its first input");
    if (!args.qb_packed) need(args.qb, "b", "its second input (weights)");
  }
  if (w.dtype() == DType::int8) {
    need(args.qscale, "scale", "the per-column dequantisation scales");
    need(args.qcomp, "comp", "the per-column zero-point compensation");
    // A conv pads with the zero point (host/kernel_abi.hpp): it must be a u8 code.
    if (w.is_conv() && (args.qzero < 0 || args.qzero > 255)) {
      throw_bad_input("runtime: argument 'zero_point' must be a u8 code in [0, 255], got " +
                      std::to_string(args.qzero));
    }
  }
  if (args.qc && !host::writes_codes(w)) {
    throw_bad_input("runtime: argument 'codes' is set; " + w.label() +
                    " writes u8 codes only with an epilogue ending in quantize or requantize");
  }
  if (!args.qc || args.qc_with_c) need(args.c, "c", "its output");
  if (args.qc_with_c && !args.qc) {
    throw_bad_input("runtime: argument 'qc_with_c' is set without 'codes'; it asks for the values beside the codes");
  }
  if (args.c_ld != 0 && (w.op() != "conv2d" || w.dtype() != DType::float32 || args.c_ld < w.dim("K"))) {
    throw_bad_input("runtime: argument 'c_ld' = " + std::to_string(args.c_ld) +
                    "; expected 0 (dense), or a row stride of at least K for an fp32 conv2d (" + w.label() + ")");
  }
  if (w.has_epilogue("bias")) need(args.bias, "bias", "a bias for the 'bias' epilogue");
  if (w.has_epilogue("batchnorm")) {
    need(args.scale, "scale", "a scale for the 'batchnorm' epilogue");
    need(args.shift, "shift", "a shift for the 'batchnorm' epilogue");
  }
  if (w.has_epilogue("add")) need(args.residual, "residual", "a residual for the 'add' epilogue");
  if (w.has_epilogue("leaky_relu")) need(args.slope, "slope", "each channel's negative slope for 'leaky_relu'");
  if (w.has_epilogue("quantize") || w.has_epilogue("requantize")) {
    need(args.qout, "qout", "the output's {scale, zero point} for each quantize op of its epilogue");
    for (int i = 0; i < w.quantize_grids(); ++i) {
      const float* grid = args.qout + 2 * i;
      if (!(grid[0] > 0) || !(grid[1] >= 0 && grid[1] <= 255)) {
        throw_bad_input(
            "runtime: argument 'qout' must hold {scale > 0, zero point in [0, 255]} per quantize op; grid " +
            std::to_string(i) + " is {" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + "}");
      }
    }
  }
}

std::string call_key(const char* op, std::initializer_list<std::int64_t> dims, const std::vector<std::string>& ops) {
  std::string key = op;
  for (std::int64_t d : dims) key += " " + std::to_string(d);
  for (const auto& e : ops) key += " " + e;
  return key;
}

host::AtvossArgs abi_args(const float* a, const float* b, float* c, const EpilogueArgs& e) {
  // fp32 kernels read no quantised operands (qa, qb, qscale, qcomp).
  return host::AtvossArgs{a,       b,       c,      e.bias, e.scale, e.shift, e.residual, nullptr, nullptr,
                          nullptr, nullptr, e.qout, 0,      nullptr, e.codes, e.slope,    0,       0};
}

// The arguments of a low-precision kernel: quantised inputs (int8 also its dequantisation
// scales and zero-point compensation), fp32 output.
host::AtvossArgs lowp_args(const void* a, const void* b, float* c, const float* scale, const std::int32_t* comp,
                           const EpilogueArgs& e) {
  host::AtvossArgs args = abi_args(nullptr, nullptr, c, e);
  args.qa = a;
  args.qb = b;
  args.qscale = scale;
  args.qcomp = comp;
  return args;
}

}  // namespace

Workload matmul_workload(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<std::string>& epilogue,
                         DType dtype) {
  return make_workload("matmul", Json{{"M", m}, {"N", n}, {"K", k}}, epilogue, dtype);
}

Workload batch_matmul_workload(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                               const std::vector<std::string>& epilogue) {
  return make_workload("batch_matmul", Json{{"B", batch}, {"M", m}, {"N", n}, {"K", k}}, epilogue);
}

Workload conv2d_workload(const Conv2dShape& s, const std::vector<std::string>& epilogue, DType dtype) {
  return make_workload("conv2d",
                       Json{{"N", s.n},
                            {"C", s.c},
                            {"H", s.h},
                            {"W", s.w},
                            {"K", s.k},
                            {"R", s.r},
                            {"S", s.s},
                            {"stride", s.stride},
                            {"pad", s.pad}},
                       epilogue, dtype);
}

OperandSizes operand_sizes(const Workload& w) {
  if (w.is_matmul_like()) {
    const std::int64_t batch = w.op() == "batch_matmul" ? w.dim("B") : 1;
    const std::int64_t m = w.dim("M"), n = w.dim("N"), k = w.dim("K");
    return {batch * m * k, batch * k * n, batch * m * n, n};
  }
  if (w.op() == "conv2d") {
    const std::int64_t k = w.dim("K");
    return {w.dim("N") * w.dim("C") * w.dim("H") * w.dim("W"), k * w.dim("C") * w.dim("R") * w.dim("S"),
            w.dim("N") * k * w.out_h() * w.out_w(), k};
  }
  throw_bad_input("runtime: no operand layout for op '" + w.op() + "' (matmul, batch_matmul, conv2d)");
}

Runtime::Runtime(RuntimeOptions options)
    : machine_(host::this_machine()),
      default_threads_(options.default_threads),
      table_(load_table(options, machine_, no_table_reason_)),
      kernels_(std::move(options.build)) {}

void Runtime::with_threads(const Workload& w, Choice& c) const {
  const std::string threads(knobs::threads);
  if (!c.schedule.has(threads) || c.schedule.at(threads) == default_threads_) return;
  const Schedule s = host::on_threads(w, c.schedule, machine_, default_threads_);
  if (!host::space_for(w, machine_).check(s).ok) return;  // that many threads not offered: keep one
  c.schedule = s;
  c.reason += "; on " + std::to_string(default_threads_) + " threads";
}

Runtime::Resolved& Runtime::resolve(const Workload& w) {
  const std::string& key = w.key();
  {
    std::shared_lock lock(resolved_mu_);
    if (auto it = resolved_.find(key); it != resolved_.end()) return *it->second;
  }
  auto made = std::make_unique<Resolved>();
  made->choice = choose_schedule(table_.get(), no_table_reason_, w, machine_);
  if (made->choice.kind == ChoiceKind::fallback && default_threads_ > 0) with_threads(w, made->choice);
  std::unique_lock lock(resolved_mu_);
  return *resolved_.emplace(key, std::move(made)).first->second;  // a racing thread's equal choice wins
}

const Choice& Runtime::choose(const Workload& w) { return resolve(w).choice; }

const LoadedKernel& Runtime::kernel_of(Resolved& r, const Workload& w) {
  const LoadedKernel* k = r.kernel.load(std::memory_order_acquire);
  if (k == nullptr) {  // KernelCache loads it once even if threads race here
    k = &kernels_.get(w, r.choice.schedule, machine_);
    r.kernel.store(k, std::memory_order_release);
  }
  return *k;
}

const LoadedKernel& Runtime::kernel(const Workload& w) { return kernel_of(resolve(w), w); }

const Choice& Runtime::run(const Workload& w, const host::AtvossArgs& args) {
  Resolved& r = resolve(w);
  check_args(w, args);
  if (args.qc && !args.c) {  // codes out: the partial sums need somewhere to go
    thread_local std::vector<float> partial_sums;
    partial_sums.resize(std::size_t(operand_sizes(w).c));
    host::AtvossArgs with_sums = args;
    with_sums.c = partial_sums.data();
    kernel_of(r, w).call(with_sums);
    return r.choice;
  }
  kernel_of(r, w).call(args);
  return r.choice;
}

const Workload& Runtime::workload_of(std::string key, const std::function<Workload()>& make) {
  {
    std::shared_lock lock(workloads_mu_);
    if (auto it = workloads_.find(key); it != workloads_.end()) return *it->second;
  }
  auto made = std::make_unique<const Workload>(make());  // bad_input escapes; nothing is kept
  std::unique_lock lock(workloads_mu_);
  return *workloads_.emplace(std::move(key), std::move(made)).first->second;
}

const Choice& Runtime::matmul(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                              const EpilogueArgs& e) {
  const Workload& w =
      workload_of(call_key("matmul", {m, n, k}, e.ops), [&] { return matmul_workload(m, n, k, e.ops); });
  return run(w, abi_args(a, b, c, e));
}

const Choice& Runtime::batch_matmul(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                                    std::int64_t n, std::int64_t k, const EpilogueArgs& e) {
  const Workload& w = workload_of(call_key("batch_matmul", {batch, m, n, k}, e.ops),
                                  [&] { return batch_matmul_workload(batch, m, n, k, e.ops); });
  return run(w, abi_args(a, b, c, e));
}

const Choice& Runtime::matmul_int8(const std::uint8_t* a, const std::int8_t* b, float* c, const float* scale,
                                   const std::int32_t* comp, std::int64_t m, std::int64_t n, std::int64_t k,
                                   const EpilogueArgs& e) {
  const Workload& w = workload_of(call_key("matmul int8", {m, n, k}, e.ops),
                                  [&] { return matmul_workload(m, n, k, e.ops, DType::int8); });
  return run(w, lowp_args(a, b, c, scale, comp, e));
}

const Choice& Runtime::matmul_bf16(const std::uint16_t* a, const std::uint16_t* b, float* c, std::int64_t m,
                                   std::int64_t n, std::int64_t k, const EpilogueArgs& e) {
  const Workload& w = workload_of(call_key("matmul bfloat16", {m, n, k}, e.ops),
                                  [&] { return matmul_workload(m, n, k, e.ops, DType::bfloat16); });
  return run(w, lowp_args(a, b, c, nullptr, nullptr, e));
}

const Workload& Runtime::conv2d_of(const Conv2dShape& s, const EpilogueArgs& e, DType dtype) {
  const std::string op = "conv2d " + std::string(to_string(dtype));
  return workload_of(call_key(op.c_str(), {s.n, s.c, s.h, s.w, s.k, s.r, s.s, s.stride, s.pad}, e.ops),
                     [&] { return conv2d_workload(s, e.ops, dtype); });
}

const Choice& Runtime::conv2d(const float* input, const float* filter, float* output, const Conv2dShape& s,
                              const EpilogueArgs& e) {
  return run(conv2d_of(s, e, DType::float32), abi_args(input, filter, output, e));
}

const Choice& Runtime::conv2d_int8(const std::uint8_t* input, std::int32_t zero_point, const std::int8_t* filter,
                                   float* output, const float* scale, const std::int32_t* comp, const Conv2dShape& s,
                                   const EpilogueArgs& e) {
  host::AtvossArgs args = lowp_args(input, filter, output, scale, comp, e);
  args.qzero = zero_point;
  return run(conv2d_of(s, e, DType::int8), args);
}

const Choice& Runtime::conv2d_bf16(const std::uint16_t* input, const std::uint16_t* filter, float* output,
                                   const Conv2dShape& s, const EpilogueArgs& e) {
  return run(conv2d_of(s, e, DType::bfloat16), lowp_args(input, filter, output, nullptr, nullptr, e));
}

PreparedWeights Runtime::prepare_weights(const Workload& w, const void* filter) {
  if (!filter) throw_bad_input("runtime: argument 'filter' is null; " + w.label() + " needs its weights to pack");
  host::AtvossArgs args = lowp_args(nullptr, filter, nullptr, nullptr, nullptr, {});
  args.b = static_cast<const float*>(filter);  // fp32 kernels read b, the others qb
  PreparedWeights out;
  out.workload_key_ = w.key();
  host::PackedWeights packed = kernel_of(resolve(w), w).pack_weights(args);
  if (packed) {
    out.packed_ = std::make_shared<const host::PackedWeights>(std::move(packed));
  } else {  // the schedule reads its weights in place
    const auto* bytes = static_cast<const std::uint8_t*>(filter);
    out.copy_ = std::make_shared<const std::vector<std::uint8_t>>(
        bytes, bytes + operand_sizes(w).b * std::int64_t(dtype_bytes(w.dtype())));
  }
  return out;
}

void Runtime::use_prepared(const Workload& w, const PreparedWeights& filter, host::AtvossArgs& args) {
  if (filter.workload_key_ != w.key() || (!filter.packed_ && !filter.copy_)) {
    throw_bad_input("runtime: argument 'filter' holds weights prepared for another workload than " + w.label() +
                    " (prepare them for this shape, epilogue and dtype)");
  }
  if (filter.packed_) {
    args.b = nullptr;
    args.qb = nullptr;
    args.qb_packed = filter.packed_->data();
  } else if (w.dtype() == DType::float32) {
    args.b = reinterpret_cast<const float*>(filter.copy_->data());
  } else {
    args.qb = filter.copy_->data();
  }
}

PreparedWeights Runtime::pack_conv2d_weights(const float* filter, const Conv2dShape& s, const EpilogueArgs& e) {
  return prepare_weights(conv2d_of(s, e, DType::float32), filter);
}

const Choice& Runtime::conv2d(const float* input, const PreparedWeights& filter, float* output, const Conv2dShape& s,
                              const EpilogueArgs& e) {
  const Workload& w = conv2d_of(s, e, DType::float32);
  host::AtvossArgs args = abi_args(input, nullptr, output, e);
  use_prepared(w, filter, args);
  return run(w, args);
}

PreparedWeights Runtime::pack_conv2d_int8_weights(const std::int8_t* filter, const Conv2dShape& s,
                                                  const EpilogueArgs& e) {
  return prepare_weights(conv2d_of(s, e, DType::int8), filter);
}

PreparedWeights Runtime::pack_conv2d_bf16_weights(const std::uint16_t* filter, const Conv2dShape& s,
                                                  const EpilogueArgs& e) {
  return prepare_weights(conv2d_of(s, e, DType::bfloat16), filter);
}

const Choice& Runtime::conv2d_int8(const std::uint8_t* input, std::int32_t zero_point, const PreparedWeights& filter,
                                   float* output, const float* scale, const std::int32_t* comp, const Conv2dShape& s,
                                   const EpilogueArgs& e) {
  const Workload& w = conv2d_of(s, e, DType::int8);
  host::AtvossArgs args = lowp_args(input, nullptr, output, scale, comp, e);
  args.qzero = zero_point;
  use_prepared(w, filter, args);
  return run(w, args);
}

const Choice& Runtime::conv2d_bf16(const std::uint16_t* input, const PreparedWeights& filter, float* output,
                                   const Conv2dShape& s, const EpilogueArgs& e) {
  const Workload& w = conv2d_of(s, e, DType::bfloat16);
  host::AtvossArgs args = lowp_args(input, nullptr, output, nullptr, nullptr, e);
  use_prepared(w, filter, args);
  return run(w, args);
}

}  // namespace atvoss::runtime
