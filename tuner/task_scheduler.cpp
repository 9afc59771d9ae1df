#include "tuner/task_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// A task without a valid time yet is scored as if this slow, so it is explored
// (Ansor uses 1e10 the same way), but the arithmetic stays finite.
constexpr double kUnknownCost = 1e10;
constexpr double kMinTaskGain = 0.001;  // 0.1%: smaller gains count as noise

double finite_cost(double best) { return std::isfinite(best) ? best : kUnknownCost; }
}  // namespace

TaskScheduler::TaskScheduler(std::vector<SchedulerTask> tasks, SchedulerOptions options)
    : tasks_(std::move(tasks)), options_(std::move(options)), state_(tasks_.size()), rng_(options_.seed) {
  if (options_.policy != "gradient" && options_.policy != "round_robin") {
    throw_bad_input("scheduler: policy must be gradient or round_robin, got '" + options_.policy + "'");
  }
  for (const auto& t : tasks_) {
    if (!(t.weight > 0)) throw_bad_input("scheduler: every task weight must be > 0");
  }
  if (options_.budget < 0 || options_.batch_size < 1 || options_.min_first_round < 1 ||
      !(options_.warmup_share > 0 && options_.warmup_share <= 1) ||
      !(options_.warmup_coverage > 0 && options_.warmup_coverage <= 1)) {
    throw_bad_input(
        "scheduler: budget >= 0, batch_size and min_first_round >= 1, warmup_share and "
        "warmup_coverage in (0, 1] expected");
  }
  for (auto& s : state_) s.best = kInf;
  plan_warmup();
}

void TaskScheduler::plan_warmup() {
  const int n = static_cast<int>(tasks_.size());
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  auto share = [&](int i) { return tasks_[i].weight * tasks_[i].estimate_us; };
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) { return share(a) > share(b); });
  first_round_ = options_.batch_size;
  warm_ = n;
  if (options_.budget <= 0 || n == 0) return;
  double total = 0;
  for (int i = 0; i < n; ++i) total += share(i);
  const double warm_trials = options_.budget * options_.warmup_share;
  const int most = std::max(1, int(warm_trials / options_.min_first_round));
  int count = 0;
  double covered = 0;
  // Without estimates (total 0) the coverage never ends the warm-up: only `most` does.
  while (count < n && count < most && (total <= 0 || covered < options_.warmup_coverage * total)) {
    covered += share(order_[count++]);
  }
  warm_ = count;
  first_round_ = std::clamp(int(warm_trials / count), options_.min_first_round, options_.batch_size);
}

int TaskScheduler::round_size(int task) const {
  const auto pos = std::find(order_.begin(), order_.begin() + warm_, task) - order_.begin();
  return pos < warm_ && state_.at(task).rounds == 0 ? first_round_ : options_.batch_size;
}

std::optional<int> TaskScheduler::next_task() {
  const int n = static_cast<int>(tasks_.size());
  while (next_warmup_ < warm_) {
    const int i = order_[next_warmup_++];
    if (!state_[i].finished && state_[i].rounds == 0) return i;
  }
  std::vector<int> alive;
  for (int i = 0; i < n; ++i) {
    if (!state_[i].finished) alive.push_back(i);
  }
  if (alive.empty()) return std::nullopt;
  if (options_.policy == "round_robin") {
    for (int k = 0; k < n; ++k) {
      const int i = (next_round_robin_ + k) % n;
      if (!state_[i].finished) {
        next_round_robin_ = (i + 1) % n;
        return i;
      }
    }
  }
  std::vector<double> grads;
  for (int i : alive) grads.push_back(gradient(i));
  const auto [lo, hi] = std::minmax_element(grads.begin(), grads.end());
  if (*lo == *hi) return alive[rng_() % alive.size()];
  return alive[lo - grads.begin()];
}

double TaskScheduler::similar_bound(int i) const {
  double best_throughput = 0;
  int similar = 0;
  for (std::size_t j = 0; j < tasks_.size(); ++j) {
    if (tasks_[j].group != tasks_[i].group) continue;
    ++similar;
    if (std::isfinite(state_[j].best) && state_[j].best > 0) {
      best_throughput = std::max(best_throughput, tasks_[j].flops / state_[j].best);
    }
  }
  if (similar < 2 || best_throughput <= 0 || tasks_[i].flops <= 0) return kInf;
  return options_.beta * tasks_[i].flops / best_throughput;
}

// The task's best, or its estimate while it has never been measured.
double TaskScheduler::cost(int i) const {
  const TaskState& s = state_[i];
  if (s.rounds == 0 && tasks_[i].estimate_us > 0) return tasks_[i].estimate_us;
  return finite_cost(s.best);
}

double TaskScheduler::gradient(int i) const {
  const TaskState& s = state_[i];
  const double best = cost(i);
  const int w = options_.backward_window;
  double backward = 0;
  if (s.rounds > w) {
    backward = (finite_cost(s.history[s.rounds - 1]) - finite_cost(s.history[s.rounds - 1 - w])) / w;
  }
  const double next_decay = best - best / std::max(1, s.rounds);
  const double next = std::min(next_decay, similar_bound(i));
  const double forward = (plateaued(i) ? options_.plateau_scale : 1.0) * (next - best);
  return tasks_[i].weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
}

bool TaskScheduler::plateaued(int i) const {
  const TaskState& s = state_[i];
  const int w = options_.plateau_rounds;
  if (w < 1 || s.rounds <= w) return false;
  return finite_cost(s.best) > finite_cost(s.history[s.rounds - 1 - w]) * (1 - options_.plateau_gain);
}

void TaskScheduler::record_round(int task, int trials, double best_us) {
  TaskState& s = state_.at(task);
  const bool first = !std::isfinite(s.best);
  if (std::isfinite(best_us) && (first || best_us < s.best * (1 - kMinTaskGain))) {
    s.trials_at_last_gain = s.trials + trials;
  }
  if (std::isfinite(best_us)) s.best = std::isfinite(s.best) ? std::min(s.best, best_us) : best_us;
  s.trials += trials;
  ++s.rounds;
  s.history.push_back(s.best);
  if (options_.early_stopping > 0 && s.trials - s.trials_at_last_gain >= options_.early_stopping) {
    s.finished = true;
  }
}

void TaskScheduler::finish(int task) { state_.at(task).finished = true; }

bool TaskScheduler::all_finished() const {
  for (const auto& s : state_) {
    if (!s.finished) return false;
  }
  return true;
}

double TaskScheduler::objective() const {
  double total = 0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) total += tasks_[i].weight * state_[i].best;
  return total;
}

int TaskScheduler::total_trials() const {
  int n = 0;
  for (const auto& s : state_) n += s.trials;
  return n;
}

namespace {
Json cost_json(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
double cost_from(const Json& j) { return j.is_null() ? kInf : j.get<double>(); }
}  // namespace

Json TaskScheduler::to_json() const {
  Json tasks = Json::array();
  for (const auto& s : state_) {
    Json history = Json::array();
    for (double h : s.history) history.push_back(cost_json(h));
    tasks.push_back({{"trials", s.trials},
                     {"rounds", s.rounds},
                     {"best", cost_json(s.best)},
                     {"history", history},
                     {"trials_at_last_gain", s.trials_at_last_gain},
                     {"finished", s.finished}});
  }
  std::ostringstream rng;
  rng << rng_;
  return {{"policy", options_.policy},
          {"tasks", tasks},
          {"rng", rng.str()},
          {"next_warmup", next_warmup_},
          {"next_round_robin", next_round_robin_}};
}

void TaskScheduler::restore(const Json& j) {
  try {
    const Json& tasks = j.at("tasks");
    if (!tasks.is_array() || tasks.size() != tasks_.size()) {
      throw_bad_input("scheduler state: saved for " + std::to_string(tasks.size()) + " tasks, this job has " +
                      std::to_string(tasks_.size()));
    }
    std::vector<TaskState> state(tasks_.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Json& t = tasks[i];
      state[i].trials = t.at("trials").get<int>();
      state[i].rounds = t.at("rounds").get<int>();
      state[i].best = cost_from(t.at("best"));
      for (const auto& h : t.at("history")) state[i].history.push_back(cost_from(h));
      state[i].trials_at_last_gain = t.at("trials_at_last_gain").get<int>();
      state[i].finished = t.at("finished").get<bool>();
      if (static_cast<int>(state[i].history.size()) != state[i].rounds) {
        throw_bad_input("scheduler state: task " + std::to_string(i) + " history length mismatch");
      }
    }
    std::istringstream rng(j.at("rng").get<std::string>());
    std::mt19937_64 restored;
    rng >> restored;
    if (!rng) throw_bad_input("scheduler state: field 'rng' is not an mt19937_64 state");
    state_ = std::move(state);
    rng_ = restored;
    next_warmup_ = j.at("next_warmup").get<int>();
    next_round_robin_ = j.at("next_round_robin").get<int>();
  } catch (const Json::exception& e) {
    throw_bad_input(std::string("scheduler state: ") + e.what());
  }
}

}  // namespace atvoss::tuner
