#include "frontend/task_set.hpp"

namespace atvoss::frontend {

void TaskSet::add(const Workload& w, const std::string& name, int count) {
  add_step(w, name, count, false);
}

void TaskSet::add_standalone(const Workload& w, const std::string& name, int count) {
  add_step(w, name, count, true);
}

void TaskSet::add_step(const Workload& w, const std::string& name, int count, bool standalone) {
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].workload.key() == w.key()) {
      tasks_[i].weight += count;
      tasks_[i].layers.emplace_back(name, count);
      order_.push_back({i, name, count, standalone});
      return;
    }
  }
  order_.push_back({tasks_.size(), name, count, standalone});
  tasks_.push_back(TuneTask{w, count, name, {{name, count}}});
}

void TaskSet::add_fallback(FallbackNode node) { fallbacks_.push_back(std::move(node)); }

void TaskSet::add_folded(const std::string& name, const std::string& into) { folded_.emplace_back(name, into); }

int TaskSet::total_occurrences() const {
  int n = 0;
  for (const auto& t : tasks_) n += t.weight;
  return n;
}

}  // namespace atvoss::frontend
