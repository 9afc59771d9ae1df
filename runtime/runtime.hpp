// Runtime: runs matmul, batch_matmul and conv2d on this CPU with the schedule tuned for the
// shape it is called with — the consumer of the lookup table that `atvoss-db export-table`
// (or a job's "export") writes for the host target. It loads the table, refuses one tuned on
// another CPU (or, if asked, ignores it and runs defaults), picks a schedule per workload
// (choice.hpp: exact, nearest or default, and why), and runs that schedule's kernel, loaded
// from the host compile cache or generated and compiled on first use (kernel_cache.hpp).
//
// Dispatch is by Workload: run(workload, args) serves every op the host code generator serves
// (host::supports); the typed wrappers only build the workload and the argument struct.
// Operands are dense fp32, row-major (host/kernel_abi.hpp): matmul A[M,K] B[K,N] C[M,N],
// batches back to back; conv2d NHWC input, R x S x C x K (HWIO) filters, N x OH x OW x K output.
// Epilogue operands: bias/scale/shift one value per output column (matmul) or channel
// (conv), residual shaped like the output. int8 and bf16 matmuls (on CPUs with AVX-512 VNNI
// and BF16) take their inputs as host/kernel_abi.hpp says and write fp32.
//
// Thread-safe: any number of threads may call one Runtime; choices and kernels are cached per
// workload and per (workload, schedule). See docs/runtime.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "db/table/schedule_table.hpp"
#include "host/builder.hpp"
#include "host/kernel_abi.hpp"
#include "host/machine.hpp"
#include "runtime/choice.hpp"
#include "runtime/kernel_cache.hpp"

namespace atvoss::runtime {

// What to do with a table tuned on another CPU (its target is not this machine's fingerprint).
enum class ForeignTable {
  refuse,        // the constructor throws bad_input naming both fingerprints (the default)
  use_defaults,  // every call runs the default schedule, the choice's reason says why
};

struct RuntimeOptions {
  std::string table;  // exported table file; empty: the default schedule everywhere
  // A table already in memory (a model plan's schedules, engine/model.hpp), used instead of
  // the file; the same check of the CPU it was tuned on applies.
  std::shared_ptr<const table::ScheduleTable> loaded_table;
  // > 0: a workload that runs its default schedule runs it on this many threads (where its
  // space offers that many), as a model run on every core does; 0: the default's own (one).
  int default_threads = 0;
  ForeignTable foreign_table = ForeignTable::refuse;
  host::BuildOptions build;  // compile cache and compiler; the defaults share the tuner's cache
};

// The ops after the main op, in order, and their operands (null where no op needs one).
struct EpilogueArgs {
  std::vector<std::string> ops;
  const float* bias = nullptr;
  const float* scale = nullptr;  // batchnorm folded to scale + shift
  const float* shift = nullptr;
  const float* residual = nullptr;  // "add"
  const float* qout = nullptr;  // "quantize" / "requantize": {scale, zero point} per op, in order (host/kernel_abi.hpp)
  // With "quantize" / "requantize" last: the output's u8 codes on the qout grid go here (laid
  // out as the output, one byte each), as the next int8 layer reads them, and not the values
  // to c, which may then be null (host/kernel_abi.hpp's qc).
  std::uint8_t* codes = nullptr;
  const float* slope = nullptr;  // "leaky_relu": each output channel's negative slope
};

struct Conv2dShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1, stride = 1, pad = 0;
};

// The workloads the wrappers run. bad_input naming the dim or epilogue op.
Workload matmul_workload(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<std::string>& epilogue = {},
                         DType dtype = DType::float32);
Workload batch_matmul_workload(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                               const std::vector<std::string>& epilogue = {});
Workload conv2d_workload(const Conv2dShape& shape, const std::vector<std::string>& epilogue = {},
                         DType dtype = DType::float32);

// Elements of each operand of w, so that a binding can check the buffers it is given.
struct OperandSizes {
  std::int64_t a = 0, b = 0, c = 0;
  std::int64_t channel = 0;  // bias, scale, shift
};
// bad_input naming the op when the runtime knows no operand layout for it.
OperandSizes operand_sizes(const Workload& w);

// Constant weights (a conv2d's filter, an fp32 matmul's B) prepared once for the kernel a
// Runtime runs for one workload (its shape, epilogue and dtype): packed by that kernel
// (host/packed_weights.hpp), so that its calls
// pack nothing, as an inference runtime packs weights at load; or, where the chosen schedule
// reads its weights in place and packs none, a copy of them. Immutable; shared by copies.
class PreparedWeights {
 public:
  const std::string& workload_key() const { return workload_key_; }
  bool packed() const { return packed_ != nullptr; }  // false: the copy of an in-place schedule
  std::size_t bytes() const { return packed_ ? packed_->bytes() : copy_ ? copy_->size() : 0; }

 private:
  friend class Runtime;
  std::string workload_key_;
  std::shared_ptr<const host::PackedWeights> packed_;
  std::shared_ptr<const std::vector<std::uint8_t>> copy_;
};

class Runtime {
 public:
  // io/corrupt/bad_input from the table loader (schedule_table.hpp); bad_input naming both
  // fingerprints for another CPU's table under ForeignTable::refuse.
  explicit Runtime(RuntimeOptions options = {});

  // The schedule run for w and why; computed once per workload. bad_input if the host code
  // generator does not serve w.
  const Choice& choose(const Workload& w);

  // The kernel of w's choice, loaded from the compile cache or compiled now; its so_path()
  // names the compile-cache entry (host/builder.hpp), i.e. which generated source runs.
  const LoadedKernel& kernel(const Workload& w);

  // Runs w's chosen kernel on args (compiling it on first use); returns the choice it used.
  // bad_input naming the argument when a pointer w needs is null, or 'codes' when args.qc is
  // set and w's epilogue does not end in quantize or requantize. With qc set, c may be null:
  // the kernel's partial sums then go to a buffer of the calling thread's.
  const Choice& run(const Workload& w, const host::AtvossArgs& args);

  const Choice& matmul(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                       const EpilogueArgs& epilogue = {});
  const Choice& batch_matmul(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                             std::int64_t n, std::int64_t k, const EpilogueArgs& epilogue = {});
  // int8: a u8 [M,K] with a zero point z, b s8 [K,N]; c[i,j] = scale[j] * (sum_k a*b - comp[j])
  // then the epilogue, where scale[j] = scale_a * scale_b[j] and comp[j] = z * sum_k b[k,j]
  // (host/low_precision.hpp computes them). bf16: a and b hold bf16 bit patterns. bad_input
  // naming the flag on a CPU without AVX-512 VNNI (int8) or BF16.
  const Choice& matmul_int8(const std::uint8_t* a, const std::int8_t* b, float* c, const float* scale,
                            const std::int32_t* comp, std::int64_t m, std::int64_t n, std::int64_t k,
                            const EpilogueArgs& epilogue = {});
  const Choice& matmul_bf16(const std::uint16_t* a, const std::uint16_t* b, float* c, std::int64_t m, std::int64_t n,
                            std::int64_t k, const EpilogueArgs& epilogue = {});
  const Choice& conv2d(const float* input, const float* filter, float* output, const Conv2dShape& shape,
                       const EpilogueArgs& epilogue = {});
  // int8 and bf16 conv2d, the int8 and bf16 matmuls of the implicit GEMM (pixels x R*S*C x K):
  // int8 input u8 NHWC with zero point z in [0, 255] (padding is z, i.e. 0.0), filter s8 HWIO,
  // output[p, k] = scale[k] * (sum a*b - comp[k]) then the epilogue, comp[k] = z * sum over
  // r, s, c of filter[r, s, c, k]. bf16: bit patterns. bad_input naming the flag on a CPU
  // without AVX-512 VNNI (int8) or BF16, or naming zero_point when it is out of range.
  const Choice& conv2d_int8(const std::uint8_t* input, std::int32_t zero_point, const std::int8_t* filter,
                            float* output, const float* scale, const std::int32_t* comp, const Conv2dShape& shape,
                            const EpilogueArgs& epilogue = {});
  const Choice& conv2d_bf16(const std::uint16_t* input, const std::uint16_t* filter, float* output,
                            const Conv2dShape& shape, const EpilogueArgs& epilogue = {});
  // The filter prepared once for the conv2d of shape and epilogue (fp32, int8, bf16), then the
  // calls that take it instead of the filter. bad_input naming 'filter' when a call's conv is
  // not the one the weights were prepared for (shape, epilogue and dtype), or when it is null.
  PreparedWeights pack_conv2d_weights(const float* filter, const Conv2dShape& shape, const EpilogueArgs& epilogue = {});
  PreparedWeights pack_conv2d_int8_weights(const std::int8_t* filter, const Conv2dShape& shape,
                                           const EpilogueArgs& epilogue = {});
  PreparedWeights pack_conv2d_bf16_weights(const std::uint16_t* filter, const Conv2dShape& shape,
                                           const EpilogueArgs& epilogue = {});
  const Choice& conv2d(const float* input, const PreparedWeights& filter, float* output, const Conv2dShape& shape,
                       const EpilogueArgs& epilogue = {});
  const Choice& conv2d_int8(const std::uint8_t* input, std::int32_t zero_point, const PreparedWeights& filter,
                            float* output, const float* scale, const std::int32_t* comp, const Conv2dShape& shape,
                            const EpilogueArgs& epilogue = {});
  const Choice& conv2d_bf16(const std::uint16_t* input, const PreparedWeights& filter, float* output,
                            const Conv2dShape& shape, const EpilogueArgs& epilogue = {});

  // The typed calls above, for a caller that builds w and args itself (a binding, the model
  // engine): the weights of w (a conv2d's filter, a matmul's B) prepared once, and args pointed
  // at them (bad_input naming 'filter' when they were prepared for another workload).
  PreparedWeights prepare_weights(const Workload& w, const void* filter);
  static void use_prepared(const Workload& w, const PreparedWeights& filter, host::AtvossArgs& args);

  // The loaded table, or null (none given, or another CPU's under use_defaults).
  const table::ScheduleTable* table() const { return table_.get(); }
  // Why no table is used ("" when one is).
  const std::string& no_table_reason() const { return no_table_reason_; }
  std::size_t kernels() const { return kernels_.size(); }

 private:
  // A workload's choice and, once loaded, its kernel (so a call needs one map lookup).
  struct Resolved {
    Choice choice;
    std::atomic<const LoadedKernel*> kernel{nullptr};
  };
  Resolved& resolve(const Workload& w);
  // The default schedule c holds on default_threads_ threads, where w's space takes that.
  void with_threads(const Workload& w, Choice& c) const;
  // The typed wrappers' workloads by a key built without JSON (op, dims, epilogue), so that a
  // repeated call costs a map lookup instead of a Workload::from_json.
  const Workload& workload_of(std::string key, const std::function<Workload()>& make);
  const Workload& conv2d_of(const Conv2dShape& s, const EpilogueArgs& e, DType dtype);
  const LoadedKernel& kernel_of(Resolved& r, const Workload& w);

  const host::MachineInfo& machine_;
  int default_threads_ = 0;
  std::string no_table_reason_;  // before table_: load_table() fills it
  std::shared_ptr<const table::ScheduleTable> table_;
  KernelCache kernels_;
  std::shared_mutex resolved_mu_;
  std::map<std::string, std::unique_ptr<Resolved>> resolved_;  // by workload key; never erased
  std::shared_mutex workloads_mu_;
  std::map<std::string, std::unique_ptr<const Workload>> workloads_;  // never erased
};

}  // namespace atvoss::runtime
