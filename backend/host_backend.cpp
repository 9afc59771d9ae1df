// host: generated C++ compiled and run on this CPU (host/). Serves targets of organisation
// "cpu"; a target whose fingerprint is not this machine's is refused, so results from
// different CPUs never mix.
#include "backend/internal/builtin_backends.hpp"
#include "core/error.hpp"
#include "host/analysis.hpp"
#include "host/builder.hpp"
#include "host/conv_space.hpp"
#include "host/host_space.hpp"
#include "host/measure.hpp"
#include "host/rowops_space.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::backend {
namespace {

class HostBackend final : public Backend {
 public:
  std::string name() const override { return "host"; }
  // A real machine: noisy, and its single-core peak. A measurement is a compile and a kernel
  // run, each killed past its own timeout (host/builder.hpp, host/runner.hpp): a large GEMM's
  // checked and repeated calls take tens of seconds, far past a simulator's deadline.
  BackendTraits traits(const Target& t) const override {
    const host::HostConfig config;
    const auto limit = std::chrono::duration<double>(config.build.timeout_s + config.run.timeout_s + 10);
    return {true,
            host::core_peak_gflops(t),
            true,
            host::this_machine().physical_cores,
            std::chrono::duration_cast<std::chrono::milliseconds>(limit),
            true};
  }
  bool serves_target(const Target& t) const override { return host::is_host_target(t); }
  std::string targets_served() const override { return "this CPU's target (--target host)"; }
  std::string implied_target() const override { return "host"; }
  void check_target(const Target& t) const override {
    require_this_machine(t);
    host::require_private_cache(host::HostConfig().build);
  }
  bool serves(const Workload& w, const Target& t) const override {
    return host::is_host_target(t) &&
           (w.is_matmul_like() || host::is_row_op(w) || w.op() == "conv2d" || w.op() == "depthwise_conv2d");
  }
  ScheduleSpace space(const Workload& w, const Target& t) const override {
    require_this_machine(t);
    return host::space_for(w, host::this_machine());
  }
  std::optional<Schedule> default_schedule(const Workload& w, const Target& t) const override {
    require_this_machine(t);
    return host::default_schedule(w, host::this_machine());
  }
  Schedule default_on_threads(const Workload& w, const Target& t, const Schedule& def,
                              std::int64_t threads) const override {
    require_this_machine(t);
    return host::on_threads(w, def, host::this_machine(), int(threads));
  }
  // The shared templates' plan through the CPU's compute unit (host/cpu_unit.hpp): what the
  // cost model featurises.
  std::optional<lowering::KernelPlan> lower(const Workload& w, const Target& t, const Schedule& s) const override {
    return lowering::plan_kernel(w, t, s);
  }
  std::vector<Measurement> measure(std::span<const MeasureRequest> batch,
                                   const MeasureOptions& options) const override {
    std::vector<host::Candidate> candidates;
    for (const auto& r : batch) {
      require_this_machine(r.target);
      candidates.push_back({r.workload, r.schedule, r.seed, r.repeat});
    }
    host::HostConfig config;
    for (const auto& r : batch) {
      if (r.cancel) config.run.cancel = config.build.cancel = r.cancel;
    }
    config.run.timing.as_in_a_model = options.as_in_a_model;
    config.peak_gflops = host::core_peak_gflops(host::describe_machine());
    return host::measure_candidates(candidates, host::this_machine(), config);
  }
  Analysis analyze(const Measurement& m, const Schedule& s) const override { return host::analyze_cpu(m, s); }
  // This machine's target under its legacy fingerprint (host/machine.hpp former_host_target).
  std::vector<Target> former_targets(const Target& t) const override {
    if (t.name != host::this_machine().target_name()) return {};
    host::DescribeOptions options;
    options.roots = host::process_roots();
    return {host::former_host_target(options)};
  }

 private:
  static void require_this_machine(const Target& t) { host::require_this_machine(t); }
};

}  // namespace

std::shared_ptr<const Backend> make_host_backend() { return std::make_shared<HostBackend>(); }

}  // namespace atvoss::backend
