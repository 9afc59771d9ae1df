// Progress: what a running job shows on stderr. On a terminal it redraws one
// line per task (trials, best time, speedup over the default schedule) and an
// overall bar with an ETA; when stderr is not a terminal (a log, CI) it prints a
// plain line at most every interval; in quiet mode it prints nothing.
// Not thread-safe: the job runner's thread drives it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace atvoss::tuner {

struct TaskLine {
  std::string name;
  int trials = 0;
  double best_us = 0;     // +inf if none
  double default_us = 0;  // +inf if unknown
  bool finished = false;
};

class Progress {
 public:
  enum class Mode { quiet, plain, terminal };
  // Mode::terminal when out is a TTY, plain otherwise (unless quiet).
  static Mode detect(bool quiet, std::FILE* out = stderr);

  Progress(Mode mode, int budget, std::chrono::seconds plain_interval = std::chrono::seconds(5),
           std::FILE* out = stderr);

  // start_trials: trials already stored when the run began (they do not count for the ETA).
  void start(int start_trials);
  void update(const std::vector<TaskLine>& tasks, int trials, double objective_us, double default_objective_us);
  void finish(const std::vector<TaskLine>& tasks, int trials, double objective_us, double default_objective_us);

  // "[#####.....] 1200/2000 trials  eta 0:42" — exposed for tests.
  static std::string bar(int trials, int budget, double eta_seconds, int width = 30);

 private:
  void draw(const std::vector<TaskLine>& tasks, int trials, double objective_us, double default_objective_us,
            bool final);
  double eta_seconds(int trials) const;

  Mode mode_;
  int budget_;
  std::chrono::seconds interval_;
  std::FILE* out_;
  int start_trials_ = 0;
  std::chrono::steady_clock::time_point started_, last_plain_;
  int lines_drawn_ = 0;
};

}  // namespace atvoss::tuner
