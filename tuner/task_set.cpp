#include "tuner/task_set.hpp"

namespace atvoss::tuner {

void TaskSet::add(const Workload& w, const std::string& name, int count) {
  for (auto& t : tasks_) {
    if (t.workload.key() == w.key()) {
      t.weight += count;
      t.layers.emplace_back(name, count);
      return;
    }
  }
  tasks_.push_back(TuneTask{w, count, name, {{name, count}}});
}

void TaskSet::add_unsupported(const std::string& op_type, int count) {
  unsupported_[op_type] += count;
}

int TaskSet::total_occurrences() const {
  int n = 0;
  for (const auto& t : tasks_) n += t.weight;
  return n;
}

}  // namespace atvoss::tuner
