// Tuner: the tuning loop of one workload on one target. Each round proposes a
// batch (SearchStrategy), measures it (Measurer), hands the results back to the
// strategy, stores them in one transaction (with a batch job's checkpoint:
// TuneOptions::round_checkpoint), and saves the strategy's cost model whenever it has
// been retrained (models table).
//
// Resume: a session starts from the database — every stored record of this
// (workload, target) counts as a trial, is shown to the strategy (observe) so it
// is never measured again, and the best so far is restored from it. Budgets are
// therefore totals: tune(..., 200) on a workload with 150 stored trials measures 50.
// Infrastructure errors (worker_lost, session_timeout, error) are never stored;
// their schedules may be proposed again. Early stopping: after early_stopping
// trials without an improvement of at least 0.1%, the session stops.
// Threading: one thread drives a session; the database handle is that thread's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cancel.hpp"
#include "core/schedule_space.hpp"
#include "db/record_store.hpp"
#include "search/search_strategy.hpp"
#include "tuner/measurer.hpp"

namespace atvoss::tuner {

struct TuneOptions {
  // Schedules measured per round. Default 16: big enough to keep a pool busy, small
  // enough that the strategy learns between rounds.
  int batch_size = 16;
  // Trials without >= 0.1% improvement before stopping; 0 (default) never stops early.
  int early_stopping = 0;
  int repeat = 3;          // measurements per schedule (the median is the time)
  std::uint64_t seed = 0;  // measurement noise seeds derive from it and the schedule
  std::string job;         // stamped on stored records; empty for ad-hoc tuning
  // Measure the vendor default schedule first (it anchors "speedup over default").
  bool measure_default = true;
  // Schedules measured in the first round right after the default, unless stored already
  // (a batch job's zero-shot pick, zero_shot.hpp): the search then starts no worse.
  std::vector<Schedule> anchors;
  // Rounds in a row that store nothing (every item an infrastructure error) before
  // the session gives up with an io error. Default 3.
  int max_failed_rounds = 3;
  // Called after each stored round, e.g. to save a retrained cost model (StrategySetup).
  std::function<void()> after_round;
  // Batch jobs: called once per round (run_round), after the session and the strategy
  // have taken the round's results in and before they are stored. The writes it
  // returns run inside the transaction that stores them (more than once if the
  // database is busy, so they must only write), so a job's saved state commits
  // together with the records it describes. A round that stores nothing still runs them.
  std::function<std::function<void()>()> round_checkpoint;
  // After the budget: the k fastest stored schedules are measured once more and their
  // repeats combined with the stored ones (db/duplicate_rule.hpp), and the best is chosen
  // again. On real hardware a schedule can time fast once by luck (a quiet moment);
  // this keeps such a one from being declared the winner. 0 (default) skips it; tune_single
  // sets kConfirmTop for the host backend. On a deterministic simulator it changes nothing.
  int confirm_top = 0;
  // The confirmation's rounds: each measures the k once, side by side, the order rotated by
  // one per round, so a drift of the machine over the rounds touches each alike. Default 3.
  int confirm_rounds = 3;
  // Non-empty: processes sharing one database (a PostgreSQL server) measure each schedule
  // once. Before measuring a schedule the session claims it for this owner
  // (db::RecordStore::claim); one another owner has claimed is not measured here: the
  // session waits for that owner's record and takes it, or measures the schedule itself
  // once the claim lapses (claim_ttl_ms after it was taken) or is released unstored.
  // A job's owner is its name, so a job resumed after kill -9 takes its own claims back.
  std::string claim_owner;
  int claim_ttl_ms = 120000;
  // Where the session says what it waits for while other owners hold claims on schedules it
  // needs: once when it starts waiting, then every 10 s while it still waits (a run that
  // waited on another process once printed nothing for minutes). Null: nowhere.
  std::ostream* claim_notes = nullptr;
  // Raised by the caller (Ctrl-C in Python): the items not finished are answered `error`
  // and not stored, the host's children are killed (core/cancel.hpp), the finished ones
  // of the round are stored, and tune() returns with stop_reason "cancelled".
  CancelFlag cancel = {};
};

inline constexpr int kConfirmTop = 5;

struct TuneProgress {
  const Workload* workload = nullptr;
  int trials = 0;  // stored trials, including those found on resume
  int budget = 0;
  double best_us = std::numeric_limits<double>::infinity();
  double default_us = std::numeric_limits<double>::infinity();
};

// One trial as it finishes (infrastructure errors are not trials and are not reported).
struct TrialProgress {
  const Workload* workload = nullptr;
  const Target* target = nullptr;
  const Schedule* schedule = nullptr;
  const Measurement* measurement = nullptr;
  int trial = 0;  // its number among the stored trials, resumed ones included
  int budget = 0;
  double best_us = std::numeric_limits<double>::infinity();     // so far, this trial included
  double default_us = std::numeric_limits<double>::infinity();  // inf until measured
};

struct TuneCallbacks {
  // After every round (and once after resume).
  std::function<void(const TuneProgress&)> on_round;
  // After every trial, as it finishes (before its round is stored), one call at a time,
  // possibly on a measuring thread.
  std::function<void(const TrialProgress&)> on_trial;
};

struct TuneResult {
  std::optional<Schedule> best_schedule;
  Measurement best;  // the stored measurement of best_schedule
  double best_us = std::numeric_limits<double>::infinity();
  double default_us = std::numeric_limits<double>::infinity();  // inf if not measured
  int trials = 0;              // stored trials of this (workload, target) after the run
  int resumed = 0;             // trials found in the database at the start
  int measured = 0;            // trials stored by this run
  int measured_elsewhere = 0;  // ... of which another process sharing the database measured
                               // while this run waited on its claim (TuneOptions::claim_owner)
  std::vector<double> curve;   // best so far after each trial (inf before the first ok)
  std::string stop_reason;     // "budget", "early_stopping", "exhausted" or "cancelled"
  int confirmed = 0;           // schedules re-measured by the confirmation (confirm_top)
  bool pick_changed = false;   // ... and whether it changed the best schedule
};

// One workload's tuning state across rounds; the job runner interleaves sessions.
class TuningSession {
 public:
  // Loads the history of (workload, target) from records and shows it to strategy.
  // REQUIRES: strategy was made for this workload's space and nothing proposed yet;
  // measurer and records outlive the session.
  TuningSession(Workload workload, Target target, search::SearchStrategy& strategy, Measurer& measurer,
                db::RecordStore& records, TuneOptions options);

  // Measures and stores up to max_trials new schedules; returns how many were stored
  // (0 once the space is exhausted). io error after max_failed_rounds empty rounds.
  int run_round(int max_trials);

  const TuneResult& result() const { return result_; }
  bool exhausted() const { return exhausted_; }
  // Trials since the best last improved by >= 0.1%.
  int trials_since_gain() const { return result_.trials - trials_at_last_gain_; }
  bool early_stopped() const;
  TuneProgress progress(int budget) const;
  // Called for each trial as it finishes (TuneCallbacks::on_trial; budget left 0).
  void set_on_trial(std::function<void(const TrialProgress&)> on_trial) { on_trial_ = std::move(on_trial); }
  const Workload& workload() const { return workload_; }
  // TuneOptions::confirm_top: re-measures the k fastest stored schedules in
  // TuneOptions::confirm_rounds interleaved rounds, stores the new repeats (not counted as
  // trials) and takes the best from the combined records; result().pick_changed says
  // whether that changed the winner.
  void confirm_best(int k);

 private:
  void load_history();
  // One measurement of each schedule, with its stable noise seed; each trial goes to
  // on_trial_ as it finishes when report is set.
  std::vector<Measurement> measure(const std::vector<Schedule>& schedules, bool report = true);
  std::vector<Measurement> measure_now(const std::vector<Schedule>& schedules, bool report);
  // measure() under TuneOpt::claim_owner: each schedule measured here or by its claimant.
  std::vector<Measurement> measure_claimed(const std::vector<Schedule>& schedules);
  // Writes the claim_notes line while `waiting` schedules are held by others (see there).
  void note_claim_wait(std::size_t waiting, std::optional<std::chrono::steady_clock::time_point>& noted) const;
  // The vendor default and the anchors that are not stored yet, at most max_trials of
  // them, measured now (shown to the strategy, stored with the round).
  std::vector<std::pair<Schedule, Measurement>> measure_first(int max_trials);
  // The records of a batch's results, infrastructure errors left out (never stored).
  std::vector<db::Record> records_of(const std::vector<Schedule>& schedules,
                                     const std::vector<Measurement>& results) const;
  // Stores a round's results (not infrastructure errors) in one transaction with
  // options_.round_checkpoint's writes, which run even when nothing is stored.
  // Returns how many were stored.
  int store(const std::vector<Schedule>& schedules, const std::vector<Measurement>& results);
  void note_trial(const Schedule& s, const Measurement& m);

  Workload workload_;
  Target target_;
  db::TargetInfo target_info_;
  search::SearchStrategy& strategy_;
  Measurer& measurer_;
  db::RecordStore& records_;
  TuneOptions options_;
  TuneResult result_;
  int trials_at_last_gain_ = 0;
  int failed_rounds_ = 0;
  bool exhausted_ = false;
  std::function<void(const TrialProgress&)> on_trial_;
  int trials_reported_ = 0;  // on_trial_'s count: stored trials plus this round's reported
  double best_reported_ = std::numeric_limits<double>::infinity();
};

// Runs a session until budget (total trials), early stopping or exhaustion.
TuneResult tune(const Workload& workload, const Target& target, int budget, search::SearchStrategy& strategy,
                Measurer& measurer, db::RecordStore& records, const TuneOptions& options = {},
                const TuneCallbacks& callbacks = {});

// The noise seed of one measurement: a stable hash of (seed, workload, schedule),
// so a rerun measures every schedule exactly as before.
std::uint64_t measurement_seed(std::uint64_t seed, const Workload& w, const Schedule& s);

// Trials of a stored history, in the strategy's vocabulary.
std::vector<search::Trial> to_trials(const std::vector<db::Record>& records);

}  // namespace atvoss::tuner
