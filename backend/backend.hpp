// Backend: what can be tuned and how it is measured, behind one interface. A backend
// names itself, says which workloads on which targets it serves, gives their schedule
// space, default schedule and kernel plan, and measures a batch of schedules. The
// tuner, the measurers, the farm worker and the tools ask backend_for() and never
// which backend they hold (docs/architecture.md).
// Built in: "npu-sim" (the NPU simulator, simulator/), "recorded" (tables of
// measurements, core/recorded_space.hpp) and "host" (generated C++ compiled and run on
// this CPU, host/; targets of organisation "cpu"); register_backend() takes any other.
// Thread-safety: backends are immutable; every method may be called from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/analysis.hpp"
#include "core/cancel.hpp"
#include "core/measurement.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "lowering/kernel_plan.hpp"

namespace atvoss::backend {

// One schedule to measure.
struct MeasureRequest {
  Workload workload;
  Target target;
  Schedule schedule;
  int repeat = 3;          // measurements taken; time_us is their median
  std::uint64_t seed = 0;  // noise seed: the same seed gives the same measurement
  // Raised by the caller to stop: a backend answers what it has not finished `error`
  // (core/cancel.hpp); the host backend kills its compiler and kernel runner children.
  CancelFlag cancel = {};
};

struct MeasureOptions {
  // Multiplicative noise sigma where the backend simulates (npu-sim). Default 0.02, as on
  // real hardware; 0 makes every simulated measurement exact. Real backends ignore it.
  double noise = 0.02;
  // Time each kernel as a model's run calls it, back to back with the model's other kernels,
  // not as a kernel alone (a real CPU: its threads kept awake between calls, its output and
  // residual cold). The model plan
  // checks its picks this way (plan/plan_model.cpp). Simulators ignore it.
  bool as_in_a_model = false;
};

// What callers must know of how a backend measures, so that they ask this and never which
// backend they hold.
struct BackendTraits {
  // Measurements vary from run to run (real hardware): a tuner confirms its winner by
  // measuring the fastest again (tuner/tuner.hpp TuneOptions::confirm_top).
  bool noisy = false;
  // Single-core peak in GFLOP/s, where the backend knows it (reports give utilisation
  // against it); 0 where it does not.
  double peak_gflops = 0;
  // Its results belong to the machine it runs on (a real CPU): a farm routes such a target by
  // its name (the machine's fingerprint), not by its full description.
  bool machine_bound = false;
  // Measurements it takes at once on one machine; 0: no limit (a simulator). The host: its
  // physical cores, one timed kernel each.
  int max_concurrent = 0;
  // The longest one measurement takes under the backend's own limits, which it enforces
  // itself (the host kills a compile or a kernel run past its timeouts); a measurer gives it
  // at least this long. 0: it sets none (a simulator): the measurer's deadline stops a runaway.
  std::chrono::milliseconds own_limit{0};
  // The runtime that runs its models runs one kernel after another, each on the cores its
  // schedule takes (a CPU's engine, docs/engine.md): a model's graph run puts no two kernels
  // side by side (plan/graph_run.hpp model_device).
  bool runs_models_serially = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // REQUIRES: serves(w, t) for some w. Default: a simulator's (exact, no peak, no limit).
  virtual BackendTraits traits(const Target&) const { return {}; }
  // Whether it serves some workload on t (a farm worker checks its --backend against its
  // targets); what it serves, in words, for that check's message. Default: any target.
  virtual bool serves_target(const Target&) const { return true; }
  virtual std::string targets_served() const { return "any target"; }
  // The target a worker measures for this backend when it names none (the host: this
  // machine's CPU, "host"); empty where no target is implied.
  virtual std::string implied_target() const { return ""; }
  // bad_input when this process cannot measure t for it (another CPU's host target).
  virtual void check_target(const Target&) const {}
  // The targets t was known as before its key changed, whose stored records are t's (a host
  // CPU under its legacy fingerprint); none by default.
  virtual std::vector<Target> former_targets(const Target&) const { return {}; }
  // Whether this backend measures workload w on target t.
  virtual bool serves(const Workload& w, const Target& t) const = 0;
  // REQUIRES for the rest: serves(w, t).
  virtual ScheduleSpace space(const Workload& w, const Target& t) const = 0;
  // A valid vendor-style default: the baseline tuning is compared against. nullopt where
  // the backend has none (a measured table knows no vendor default).
  virtual std::optional<Schedule> default_schedule(const Workload& w, const Target& t) const = 0;
  // The default def (of w's space, with a threads knob) on `threads` cores, as the vendor would
  // run it there: the knob set, and whatever else the backend re-blocks for that many (the
  // host's conv2d: pixel blocks that share out evenly, host/conv_space.hpp).
  virtual Schedule default_on_threads(const Workload& w, const Target& t, const Schedule& def,
                                      std::int64_t threads) const;
  // The kernel plan of s; nullopt where the backend has no lowering (measured tables).
  virtual std::optional<lowering::KernelPlan> lower(const Workload& w, const Target& t, const Schedule& s) const = 0;
  // One measurement per request, in order. A schedule outside the space is bad_input;
  // candidate failures (invalid, compile errors, ...) come back as statuses.
  virtual std::vector<Measurement> measure(std::span<const MeasureRequest> batch,
                                           const MeasureOptions& options) const = 0;
  // Its reading of one ok measurement of s (core/analysis.hpp): the bottleneck and what to try.
  // The default reads no profile: bottleneck "unknown".
  virtual Analysis analyze(const Measurement& m, const Schedule& s) const;
};

// The backend that serves w on t; bad_input naming the op and target if none does.
const Backend& backend_for(const Workload& w, const Target& t);
// bad_input listing the backends if the name is unknown.
const Backend& backend_named(std::string_view name);
std::vector<std::string> backend_names();
// Adds a backend, asked before the built-in ones; bad_input if its name is taken.
void register_backend(std::shared_ptr<const Backend> backend);

// Shorthands over backend_for(w, t).
BackendTraits traits_for(const Workload& w, const Target& t);
// A target's traits over every backend that serves it: machine-bound if one is, and the
// tightest max_concurrent. check_target asks each of them (bad_input from the first that refuses).
BackendTraits target_traits(const Target& t);
void check_target(const Target& t);
// The former targets of t over every backend that serves it (Backend::former_targets).
std::vector<Target> former_targets(const Target& t);
ScheduleSpace space_for(const Workload& w, const Target& t);
std::optional<Schedule> default_schedule(const Workload& w, const Target& t);
// The default where a whole-model job needs one; bad_input naming the backend if it has none.
Schedule required_default(const Workload& w, const Target& t);
// backend_for(w, t).default_on_threads(w, t, def, threads).
Schedule default_on_threads(const Workload& w, const Target& t, const Schedule& def, std::int64_t threads);
Measurement measure_one(const MeasureRequest& request, const MeasureOptions& options = {});
// backend_for(w, t).analyze(m, s); bad_input unless m is ok.
Analysis analyze(const Workload& w, const Target& t, const Measurement& m, const Schedule& s);

// w under s on target once, without simulated noise: how a job times the schedules it
// chose (its end-to-end figure, its table's unmeasured entries) and how reports compare them.
Measurement measure_noise_free(const Target& target, const Workload& w, const Schedule& s);

}  // namespace atvoss::backend
