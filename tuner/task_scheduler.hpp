// TaskScheduler: spreads a job's trial budget over the tasks of a model so the
// weighted end-to-end time sum(weight_i * best_i) falls fastest — Ansor's gradient
// rule (Zheng et al., OSDI'20, section 6):
//   warm-up: tasks get one round each, in order of their estimated share of the
//     model's time (weight x zero-shot estimate, zero_shot.hpp), heaviest first;
//   then the task with the most negative d(objective)/d(trials) gets the next round:
//     grad_i = weight_i * (alpha * backward_i + (1 - alpha) * forward_i)
//     backward_i = (best_i(r) - best_i(r - window)) / window      over task i's rounds
//     forward_i  = min(best_i - best_i / rounds_i,                 optimistic 1/t decay
//                      beta * flops_i / max_{j similar} flops_j / best_j) - best_i
//   "similar" tasks share an op and epilogue (e.g. conv2d+batchnorm+relu); the FLOPs
//   term says a task should reach the throughput its best similar task reaches.
// Plateau damping (ours): a task whose best has not improved by plateau_gain (2%,
// about one measurement's noise) over its last plateau_rounds rounds gets only
// plateau_scale of the forward term. Ansor's forward term stays optimistic for a task
// that has converged, and so does the FLOPs term for a task that cannot reach its
// similar tasks' throughput; both kept feeding converged heavy tasks, whose extra
// trials then only add near-equal candidates to pick among under noise.
// Budget (ours, for models of hundreds of tasks): Ansor's warm-up gives every task a
// full round, so 400 trials stop at the 25th task in node order. Given the budget, the
// warm-up covers only the heaviest tasks that carry warmup_coverage of the estimated
// time, at most budget * warmup_share / min_first_round of them, and sizes their first
// rounds to share warmup_share of the budget (between min_first_round and the batch).
// A task not yet measured enters the gradient rule with its estimate as its best, so a
// light task the warm-up skipped still gets rounds once the heavy ones have converged;
// until then it runs its zero-shot pick.
// A task whose best has not improved by >= 0.1% for early_stopping trials is
// finished early; a finished task gets no more rounds. Ties pick by seeded RNG.
// The whole state serialises to JSON, so a resumed job continues the same plan.
// Not thread-safe: the job runner's thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::tuner {

struct SchedulerTask {
  double weight = 1;  // occurrences in the model
  double flops = 0;   // of one run of the task
  std::string group;  // similarity tag: op plus epilogue
  // Estimated time of one run before anything is measured (zero_shot.hpp), microseconds;
  // 0 when unknown (such a task is scored as unknown, and warmed up last).
  double estimate_us = 0;
};

struct SchedulerOptions {
  // gradient (Ansor) or round_robin (an even spread: the bench's baseline).
  std::string policy = "gradient";
  double alpha = 0.2;       // weight of the backward (observed) gradient
  int backward_window = 3;  // rounds looked back for the observed gradient
  double beta = 2.0;        // slack on the similar-task throughput bound
  // Plateau damping (see top comment); plateau_rounds 0 turns it off (plain Ansor).
  double plateau_gain = 0.02;
  int plateau_rounds = 3;
  double plateau_scale = 0.25;
  // Trials without >= 0.1% improvement after which a task stops; 0 never stops.
  int early_stopping = 0;
  std::uint64_t seed = 0;
  // The job's total trials; 0: unknown, every task is warmed up with a full batch.
  int budget = 0;
  int batch_size = 16;            // trials of a round after the warm-up
  double warmup_share = 0.5;      // of the budget, for the first rounds
  double warmup_coverage = 0.99;  // of the estimated time, that the warm-up reaches
  int min_first_round = 4;        // the default, the zero-shot pick and two proposals
};

class TaskScheduler {
 public:
  // bad_input if policy is unknown or a weight is not positive.
  TaskScheduler(std::vector<SchedulerTask> tasks, SchedulerOptions options);

  // The task to give the next round to; nullopt once every task is finished.
  std::optional<int> next_task();
  // Trials for task's next round: its first-round size during the warm-up, else the batch.
  int round_size(int task) const;
  // Tasks in warm-up order (heaviest estimated share first); the first warmup_count() of
  // them are warmed up.
  const std::vector<int>& warmup_order() const { return order_; }
  int warmup_count() const { return warm_; }
  // Result of one round of task i: trials spent in it and the task's best time
  // afterwards (microseconds; +inf while nothing valid was measured).
  void record_round(int task, int trials, double best_us);
  // The task cannot go on (space exhausted, or its own stop rule fired).
  void finish(int task);

  // sum(weight_i * best_i); +inf while a task has no valid time.
  double objective() const;
  std::size_t size() const { return tasks_.size(); }
  int trials(int task) const { return state_.at(task).trials; }
  double best(int task) const { return state_.at(task).best; }
  bool finished(int task) const { return state_.at(task).finished; }
  // True when no task can get another round (next_task() would return nullopt).
  bool all_finished() const;
  int total_trials() const;

  Json to_json() const;
  // Restores state saved by to_json() for the same task list; bad_input on mismatch.
  void restore(const Json& j);

 private:
  struct TaskState {
    int trials = 0;
    int rounds = 0;
    double best = 0;              // +inf until the first valid time
    std::vector<double> history;  // best after each round
    int trials_at_last_gain = 0;
    bool finished = false;
  };
  double gradient(int i) const;
  bool plateaued(int i) const;
  double similar_bound(int i) const;
  double cost(int i) const;
  void plan_warmup();

  std::vector<SchedulerTask> tasks_;
  SchedulerOptions options_;
  std::vector<TaskState> state_;
  std::mt19937_64 rng_;
  int next_warmup_ = 0;
  int next_round_robin_ = 0;
  std::vector<int> order_;  // warm-up order
  int warm_ = 0;            // tasks warmed up
  int first_round_ = 0;     // trials of a warm-up round
};

}  // namespace atvoss::tuner
