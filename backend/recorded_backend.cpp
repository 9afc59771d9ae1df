// recorded: tables of measurements (core/recorded_space.hpp) served as a backend.
// The table is the measurement: there is no lowering, no noise and no vendor default.
#include "backend/internal/builtin_backends.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::backend {
namespace {

class RecordedBackend final : public Backend {
 public:
  std::string name() const override { return "recorded"; }
  bool serves(const Workload& w, const Target&) const override { return w.is_recorded(); }
  ScheduleSpace space(const Workload& w, const Target&) const override {
    return RecordedSpace::load(w.table())->space();
  }
  std::optional<Schedule> default_schedule(const Workload&, const Target&) const override { return std::nullopt; }
  std::optional<lowering::KernelPlan> lower(const Workload&, const Target&, const Schedule&) const override {
    return std::nullopt;
  }
  std::vector<Measurement> measure(std::span<const MeasureRequest> batch, const MeasureOptions&) const override {
    std::vector<Measurement> out;
    out.reserve(batch.size());
    for (const auto& r : batch) out.push_back(RecordedSpace::load(r.workload.table())->measure(r.schedule));
    return out;
  }
};

}  // namespace

std::shared_ptr<const Backend> make_recorded_backend() { return std::make_shared<RecordedBackend>(); }

}  // namespace atvoss::backend
