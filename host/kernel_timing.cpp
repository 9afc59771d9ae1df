#include "host/kernel_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <dlfcn.h>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "core/user_paths.hpp"
#include "host/kernel_abi.hpp"
#include "host/kernel_object.hpp"
#include "host/operands.hpp"
#include "host/packed_weights.hpp"
#include "host/pinning.hpp"
#include "host/vector_code.hpp"

namespace atvoss::host {
namespace {

// The kernel's thread count (kThreadsSymbol), 1 if it exports none.
int kernel_threads(void* handle) {
  const auto* threads = static_cast<const int*>(::dlsym(handle, kThreadsSymbol));
  return threads ? std::max(1, *threads) : 1;
}

// Threads of this process (/proc/self/task): after a kernel's first call, 1 plus the
// OpenMP team it keeps, the evidence that `threads` ran.
int process_threads() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// Copies of a kernel's output and residual that timed calls rotate over (cold_activations).
struct ColdActivations {
  std::vector<std::vector<float>> outputs, residuals;
};

// What the timed calls rotate over: copies of the packed weights, of the output and of the
// residual. The position carries from one batch of calls to the next, so that batches of one
// call (a kernel slower than min_repeat_us) still read a different copy each time.
struct Rotation {
  std::vector<PackedWeights> weights;
  ColdActivations cold;
  std::size_t next = 0;

  // Points args at the next copies.
  void advance(AtvossArgs& args) {
    const std::size_t i = next++;
    if (!weights.empty()) args.qb_packed = weights[i % weights.size()].data();
    if (!cold.outputs.empty()) {
      args.c = cold.outputs[i % cold.outputs.size()].data();
      if (!cold.residuals.empty()) args.residual = cold.residuals[i % cold.residuals.size()].data();
    }
  }
};

// Mean microseconds of `inner` calls, each reading the next copies of `rotation`.
double run_us(KernelFn fn, AtvossArgs& args, long inner, Rotation& rotation) {
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < inner; ++i) {
    rotation.advance(args);
    fn(&args);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / double(inner);
}

// In a model each weight is read once per inference, from memory, while the same weights
// called again and again stay in cache: the timed calls rotate over copies of the packed
// weights, kColdBytes of them in all (at most kMaxCopies), as a model's run reads them
// (docs/decisions/host-conv-weight-stream.md). first: the packing already checked, the first copy.
constexpr std::size_t kColdBytes = std::size_t(64) << 20, kMaxCopies = 64;
std::vector<PackedWeights> cold_copies(void* handle, const AtvossArgs& args, PackedWeights first) {
  const std::size_t bytes = std::max<std::size_t>(first.bytes(), 1);
  const std::size_t n = std::clamp<std::size_t>((kColdBytes + bytes - 1) / bytes, 1, kMaxCopies);
  std::vector<PackedWeights> copies;
  copies.push_back(std::move(first));
  while (copies.size() < n) copies.push_back(PackedWeights::pack(handle, args));
  return copies;
}

// In a model a layer writes its output to memory it has not touched since, and reads a residual
// written layers before: timed as in a model (TimingOptions::as_in_a_model), the calls rotate
// over copies of both, kColdBytes in all, as over the weights'. The input stays warm: the
// layer before has just written it.
ColdActivations cold_activations(const Operands& ops) {
  ColdActivations out;
  const std::size_t bytes = std::max<std::size_t>((ops.c.size() + ops.residual.size()) * sizeof(float), 1);
  const std::size_t n = std::clamp<std::size_t>((kColdBytes + bytes - 1) / bytes, 1, kMaxCopies);
  for (std::size_t i = 0; i < n; ++i) {
    out.outputs.push_back(ops.c);
    if (!ops.residual.empty()) out.residuals.push_back(ops.residual);
  }
  return out;
}

// The runner's answer for an output `err` off the reference, over `allowed`; `path` says which
// call path made it.
Json wrong_answer(double err, double allowed, const std::string& path) {
  return Json{{"status", "wrong_answer"},
              {"max_rel_error", std::isfinite(err) ? err : -1.0},
              {"message", path + "max relative error " + std::to_string(err) + " > " + std::to_string(allowed) +
                              " against the reference"}};
}

// Where the kernel can write u8 codes (kernel_abi.hpp), the same call with qc set, into codes:
// how many of them differ from the codes of the values in ops.c, which the reference has just
// checked.
std::size_t check_codes(KernelFn fn, AtvossArgs& args, const Operands& ops, const Workload& w,
                        std::vector<std::uint8_t>& codes) {
  if (!writes_codes(w)) return 0;
  const std::vector<float> values = ops.c;
  codes.assign(values.size(), 0);
  args.qc = codes.data();
  fn(&args);
  args.qc = nullptr;
  return wrong_codes(values, codes.data(), last_grid(ops.qout));
}

}  // namespace

double coefficient_of_variation(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return mean > 0 ? std::sqrt(var / double(v.size())) / mean : 0;
}

// libgomp's spins before a waiting thread sleeps, about 100 per microsecond: 100 us, longer
// than the gap between back-to-back calls, far shorter than a scheduler's time slice.
constexpr const char* kAwakeSpins = "10000";

Json time_kernel(const std::string& so_path, const Workload& w, const TimingOptions& o) {
  // OpenMP threads inherit the pin below; a binding from the caller's environment could
  // place them outside it.
  ::setenv("OMP_PROC_BIND", "false", 1);
  ::unsetenv("OMP_PLACES");
  // Waiting threads sleep rather than spin (unless the caller chose): on a core shared with
  // other processes a spinning thread takes the time slice its partner needs
  // (docs/host-backend.md has the figures).
  ::setenv("OMP_WAIT_POLICY", "passive", 0);
  if (o.as_in_a_model) ::setenv("GOMP_SPINCOUNT", kAwakeSpins, 0);
  // The object is the caller's input: one that is no kernel is bad input, not a failure here.
  require_input_file(so_path, "--so");
  const auto [handle, fn] = open_kernel_object(so_path, w, "--so");
  const int threads = kernel_threads(handle);
  const std::vector<int> cpus =
      o.cpus.empty() ? choose_cpus(allowed_cpus(), threads, o.cpu) : choose_cpus(o.cpus, threads, -1);
  pin_to(cpus);  // best effort: an unpinned run is still a run

  Operands ops = make_operands(w, o.seed);
  AtvossArgs args = ops.args();
  fn(&args);
  const int team = process_threads();
  const double err = max_relative_error(w, ops, o.seed), allowed = allowed_relative_error(w);
  if (!(err <= allowed)) return wrong_answer(err, allowed, "");
  std::vector<std::uint8_t> codes;
  if (const std::size_t wrong = check_codes(fn, args, ops, w, codes)) {
    return Json{{"status", "wrong_answer"},
                {"message", "u8 output: " + std::to_string(wrong) + " of " + std::to_string(ops.c.size()) +
                                " codes differ from the codes of the fp32 output"}};
  }
  // Constant weights are packed once, outside the timed calls (packed_weights.hpp); the
  // packed path is checked as the per-call one was. A conv's filters and a matmul's B are a
  // layer's weights (the importer makes a matmul of a MatMul or Gemm with a 2-D B), which a
  // model run packs once, at load; a batch_matmul's B is an activation (attention's keys and
  // values), packed and checked but timed per call (docs/decisions/host-prepacked-weights.md).
  PackedWeights packed = PackedWeights::pack(handle, args);
  if (packed) {
    args.qb_packed = packed.data();
    std::fill(ops.c.begin(), ops.c.end(), 0.0f);
    fn(&args);
    const double packed_err = max_relative_error(w, ops, o.seed);
    if (!(packed_err <= allowed)) return wrong_answer(packed_err, allowed, "with prepacked weights: ");
    if (w.op() == "batch_matmul") args.qb_packed = nullptr;
  }
  Rotation rotation;
  if (args.qb_packed) rotation.weights = cold_copies(handle, args, std::move(packed));
  // A kernel that can write u8 codes is timed writing them: the call an int8 chain makes
  // (its fp32 store, four bytes an element, is checked above but not what a chain runs).
  args.qc = codes.empty() ? nullptr : codes.data();
  if (o.as_in_a_model) rotation.cold = cold_activations(ops);
  const double one = run_us(fn, args, 1, rotation);  // also the warm-up
  const long inner = std::max(1L, long(std::ceil(o.min_repeat_us / std::max(one, 0.01))));
  run_us(fn, args, inner, rotation);  // warm caches and clocks at the timed size
  std::vector<double> best;
  double best_cv = INFINITY;
  int remeasured = 0;
  for (int attempt = 0; attempt <= o.max_remeasures; ++attempt) {
    std::vector<double> repeats;
    for (int r = 0; r < std::max(1, o.repeat); ++r) repeats.push_back(run_us(fn, args, inner, rotation));
    const double cv = coefficient_of_variation(repeats);
    if (cv < best_cv) {
      best_cv = cv;
      best = repeats;
    }
    if (cv <= o.max_cv) break;
    ++remeasured;
  }
  return Json{{"status", "ok"},
              {"time_us", median(best)},
              {"repeats", best},
              {"cv", best_cv},
              {"inner", inner},
              {"remeasured", remeasured},
              {"max_rel_error", err},
              {"threads", threads},
              {"cpus", cpus},
              {"process_threads", team},
              {"prepacked_weights", args.qb_packed != nullptr},
              {"weight_copies", rotation.weights.size()},
              {"u8_output", args.qc != nullptr},
              {"as_in_a_model", o.as_in_a_model}};
}

double allowed_relative_error(const Workload& w) {
  double terms = 1;
  if (w.is_matmul_like()) terms = double(w.dim("K"));
  if (w.op() == "depthwise_conv2d") terms = double(w.dim("R") * w.dim("S"));
  if (w.op() == "conv2d") terms = double(w.dim("C") * w.dim("R") * w.dim("S"));
  return kMaxRelativeError * std::sqrt(std::max(1.0, terms / 1024));
}

}  // namespace atvoss::host
