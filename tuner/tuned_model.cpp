#include "tuner/tuned_model.hpp"

#include <cmath>

namespace atvoss::tuner {

int TunedModel::tasks_tuned() const {
  int n = 0;
  for (const auto& r : results) n += std::isfinite(r.best_us) ? 1 : 0;
  return n;
}

std::vector<TaskLine> TunedModel::task_lines() const {
  std::vector<TaskLine> lines;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    lines.push_back({tasks.tasks()[i].name, r.trials, r.best_us, r.default_us, r.finished});
  }
  return lines;
}

}  // namespace atvoss::tuner
