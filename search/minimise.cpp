#include "search/minimise.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "search/search_strategy.hpp"

namespace atvoss::search {

Minimum minimise(const ScheduleSpace& space, const Schedule& start,
                 const std::function<std::optional<double>(const Schedule&)>& measure, const MinimiseOptions& options) {
  return minimise(space, std::vector<Schedule>{start}, measure, options);
}

Minimum minimise(const ScheduleSpace& space, const std::vector<Schedule>& starts,
                 const std::function<std::optional<double>(const Schedule&)>& measure, const MinimiseOptions& options) {
  TuneContext context;
  context.seed = options.seed;
  auto strategy = make_strategy(options.strategy, space, context);
  Minimum best{starts.front(), std::numeric_limits<double>::infinity(), 0};
  auto trial = [&](const Schedule& s) {
    const std::optional<double> v = measure(s);
    ++best.evaluations;
    if (!v) return Trial{s, Status::invalid, 0};
    if (*v < best.value) {
      best.point = s;
      best.value = *v;
    }
    return Trial{s, Status::ok, *v};
  };
  std::vector<Trial> first;
  for (const Schedule& s : starts) first.push_back(trial(s));
  strategy->observe(first);
  while (best.evaluations < options.trials) {
    const auto points = strategy->propose(std::size_t(std::min(options.batch_size, options.trials - best.evaluations)));
    if (points.empty()) break;
    std::vector<Trial> results;
    for (const auto& s : points) results.push_back(trial(s));
    strategy->update(results);
  }
  return best;
}

}  // namespace atvoss::search
