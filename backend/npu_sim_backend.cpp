// npu-sim: lowering's spaces and plans, measured by the NPU simulator.
#include "backend/internal/builtin_backends.hpp"
#include "lowering/lowering.hpp"
#include "simulator/analysis.hpp"
#include "simulator/simulator.hpp"

namespace atvoss::backend {
namespace {

class NpuSimBackend final : public Backend {
 public:
  std::string name() const override { return "npu-sim"; }
  bool serves(const Workload& w, const Target& t) const override { return serves_target(t) && lowering::can_lower(w); }
  bool serves_target(const Target& t) const override { return t.organisation != "cpu"; }
  std::string targets_served() const override { return "NPU targets (the presets, or a hardware description)"; }
  ScheduleSpace space(const Workload& w, const Target& t) const override { return lowering::space_for(w, t); }
  std::optional<Schedule> default_schedule(const Workload& w, const Target& t) const override {
    return lowering::default_schedule(w, t);
  }
  std::optional<lowering::KernelPlan> lower(const Workload& w, const Target& t, const Schedule& s) const override {
    return lowering::plan_kernel(w, t, s);
  }
  std::vector<Measurement> measure(std::span<const MeasureRequest> batch,
                                   const MeasureOptions& options) const override {
    std::vector<Measurement> out;
    out.reserve(batch.size());
    for (const auto& r : batch) {
      out.push_back(simulator::simulate(r.target, r.workload, r.schedule,
                                        simulator::SimOptions{options.noise, r.repeat, r.seed}));
    }
    return out;
  }
  Analysis analyze(const Measurement& m, const Schedule& s) const override { return simulator::analyze(m, s); }
};

}  // namespace

std::shared_ptr<const Backend> make_npu_sim_backend() { return std::make_shared<NpuSimBackend>(); }

}  // namespace atvoss::backend
