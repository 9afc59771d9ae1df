// Minimise: one of the search strategies run over a space against a measure that is cheap and
// exact (a simulation, not a noisy kernel run): the graph run's knobs (plan/graph_tuning.hpp)
// and the parallel plan (distributed/parallel_plan.hpp) are searched this way, so that a
// plan or a graph setting reuses the schedule-space machinery instead of a search of its own.
// The start points are measured first: the result is never worse than them. A measure returns
// nullopt for a point it cannot run (stored as an invalid trial; the strategies avoid it).
// Deterministic for a seed. Threading: the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/schedule_space.hpp"

namespace atvoss::search {

struct MinimiseOptions {
  std::string strategy = "evolutionary";
  int trials = 48;  // points measured, the start included
  int batch_size = 8;
  std::uint64_t seed = 0;
};

struct Minimum {
  Schedule point;
  double value = 0;
  int evaluations = 0;
};

// bad_input naming the strategy if it is unknown; the start must be in the space.
Minimum minimise(const ScheduleSpace& space, const Schedule& start,
                 const std::function<std::optional<double>(const Schedule&)>& measure, const MinimiseOptions& options);
// The same from several known points (measured first, in order; they count in the trials):
// where a space has many knobs, seeding it with the plain choices keeps a small budget from
// wandering (MetaSchedule seeds its search the same way).
Minimum minimise(const ScheduleSpace& space, const std::vector<Schedule>& starts,
                 const std::function<std::optional<double>(const Schedule&)>& measure, const MinimiseOptions& options);

}  // namespace atvoss::search
