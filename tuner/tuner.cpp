#include "tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <ostream>
#include <thread>

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace atvoss::tuner {
namespace {
constexpr double kMinGain = 0.001;  // 0.1%: smaller gains are noise, not progress
}

std::uint64_t measurement_seed(std::uint64_t seed, const Workload& w, const Schedule& s) {
  return fnv1a64(std::to_string(seed) + "/" + w.key() + "/" + s.key());
}

std::vector<search::Trial> to_trials(const std::vector<db::Record>& records) {
  std::vector<search::Trial> trials;
  trials.reserve(records.size());
  for (const auto& r : records) {
    trials.push_back({r.schedule, r.measurement.status, r.measurement.time_us});
  }
  return trials;
}

TuningSession::TuningSession(Workload workload, Target target, search::SearchStrategy& strategy, Measurer& measurer,
                             db::RecordStore& records, TuneOptions options)
    : workload_(std::move(workload)),
      target_(std::move(target)),
      target_info_(db::TargetInfo::from_target(target_)),
      strategy_(strategy),
      measurer_(measurer),
      records_(records),
      options_(std::move(options)) {
  if (options_.batch_size < 1) throw_bad_input("tuner: batch_size must be >= 1");
  if (options_.repeat < 1) throw_bad_input("tuner: repeat must be >= 1");
  load_history();
}

void TuningSession::load_history() {
  const auto history = records_.history(workload_.key(), target_info_.key);
  for (const auto& r : history) note_trial(r.schedule, r.measurement);
  result_.resumed = result_.trials;
  trials_reported_ = result_.trials;
  best_reported_ = result_.best_us;
  if (!history.empty()) strategy_.observe(to_trials(history));
  if (const auto def = backend::default_schedule(workload_, target_)) {
    for (const auto& r : history) {
      if (r.schedule == *def && r.measurement.ok()) result_.default_us = r.measurement.time_us;
    }
  }
}

void TuningSession::note_trial(const Schedule& s, const Measurement& m) {
  ++result_.trials;
  if (m.ok() && m.time_us < result_.best_us) {
    if (!std::isfinite(result_.best_us) || m.time_us < result_.best_us * (1 - kMinGain)) {
      trials_at_last_gain_ = result_.trials;
    }
    result_.best_us = m.time_us;
    result_.best_schedule = s;
    result_.best = m;
  }
  result_.curve.push_back(result_.best_us);
}

bool TuningSession::early_stopped() const {
  return options_.early_stopping > 0 && result_.trials > 0 && trials_since_gain() >= options_.early_stopping;
}

TuneProgress TuningSession::progress(int budget) const {
  return TuneProgress{&workload_, result_.trials, budget, result_.best_us, result_.default_us};
}

std::vector<db::Record> TuningSession::records_of(const std::vector<Schedule>& schedules,
                                                  const std::vector<Measurement>& results) const {
  std::vector<db::Record> records;
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    if (is_infrastructure_error(results[i].status)) continue;
    db::Record r(workload_, target_info_, schedules[i], results[i]);
    r.worker = measurer_.name();
    r.job = options_.job;
    records.push_back(std::move(r));
  }
  return records;
}

int TuningSession::store(const std::vector<Schedule>& schedules, const std::vector<Measurement>& results) {
  std::vector<db::Record> records = records_of(schedules, results);
  // The session takes the round in first, so a checkpoint sees it; should the insert
  // fail, the error ends the session anyway.
  for (const auto& r : records) note_trial(r.schedule, r.measurement);
  result_.measured += static_cast<int>(records.size());
  trials_reported_ = result_.trials;
  best_reported_ = result_.best_us;
  const auto also = options_.round_checkpoint ? options_.round_checkpoint() : std::function<void()>();
  if (!records.empty() || also || !options_.claim_owner.empty()) {
    records_.write_together([&] {  // one transaction: all or nothing
      if (!records.empty()) records_.insert(records);
      if (!options_.claim_owner.empty()) records_.release(options_.claim_owner);
      if (also) also();
    });
  }
  if (!schedules.empty() && records.empty()) {
    if (++failed_rounds_ >= options_.max_failed_rounds) {
      throw Error(ErrorKind::io, "tuner: " + std::to_string(failed_rounds_) + " rounds in a row measured nothing (" +
                                     measurer_.name() + ": " + (results.empty() ? "" : results.front().message) + ")");
    }
  } else if (!records.empty()) {
    failed_rounds_ = 0;
  }
  return static_cast<int>(records.size());
}

std::vector<Measurement> TuningSession::measure(const std::vector<Schedule>& schedules, bool report) {
  if (schedules.empty()) return {};
  // The confirmation (report false) re-measures on purpose: no claims there.
  if (report && !options_.claim_owner.empty()) return measure_claimed(schedules);
  return measure_now(schedules, report);
}

void TuningSession::note_claim_wait(std::size_t waiting,
                                    std::optional<std::chrono::steady_clock::time_point>& noted) const {
  const auto now = std::chrono::steady_clock::now();
  if (waiting == 0 || options_.claim_notes == nullptr || (noted && now - *noted < std::chrono::seconds(10))) return;
  noted = now;
  *options_.claim_notes << "note: " << workload_.label() << ": waiting for " << waiting
                        << (waiting == 1 ? " schedule" : " schedules")
                        << " that another process sharing the database has claimed and is measuring; each claim "
                           "lapses at most "
                        << db::kMaxClaimTtlMs / 1000 << " s after it was taken, by the database's clock" << std::endl;
}

std::vector<Measurement> TuningSession::measure_claimed(const std::vector<Schedule>& schedules) {
  std::vector<Measurement> out(schedules.size());
  std::vector<std::size_t> waiting(schedules.size());
  std::iota(waiting.begin(), waiting.end(), std::size_t{0});
  std::optional<std::chrono::steady_clock::time_point> noted;  // the last note on claim_notes
  for (int pass = 0; !waiting.empty(); ++pass) {
    // Polled, not signalled: the other owner may be a process on another machine.
    if (pass > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<std::size_t> unstored, mine, still;
    std::vector<std::string> keys;
    for (const std::size_t i : waiting) {
      const std::string key = schedules[i].key();
      if (auto stored = records_.find(workload_.key(), target_info_.key, key)) {
        out[i] = stored->measurement;  // measured by the claimant meanwhile
        ++result_.measured_elsewhere;
      } else {
        unstored.push_back(i);
        keys.push_back(key);
      }
    }
    const std::vector<bool> held =
        records_.claim(workload_, target_info_, keys, options_.claim_owner, options_.claim_ttl_ms);
    for (std::size_t k = 0; k < unstored.size(); ++k) {
      const std::size_t i = unstored[k];
      if (!held[k]) {
        still.push_back(i);
      } else if (auto stored = records_.find(workload_.key(), target_info_.key, keys[k])) {
        // Stored and released by its claimant between the look-up above and this claim: a
        // claim is free again once the record is in, so only a look-up after it is sure.
        out[i] = stored->measurement;
        ++result_.measured_elsewhere;
      } else {
        mine.push_back(i);
      }
    }
    std::vector<Schedule> batch;
    for (const std::size_t i : mine) batch.push_back(schedules[i]);
    const std::vector<Measurement> measured = measure_now(batch, true);
    for (std::size_t k = 0; k < mine.size(); ++k) out[mine[k]] = measured[k];
    waiting = std::move(still);
    note_claim_wait(waiting.size(), noted);
    if (cancelled(options_.cancel)) {
      for (const std::size_t i : waiting) out[i] = Measurement::failed(Status::error, "cancelled by the caller");
      break;
    }
  }
  return out;
}

std::vector<Measurement> TuningSession::measure_now(const std::vector<Schedule>& schedules, bool report) {
  if (schedules.empty()) return {};
  std::vector<MeasureRequest> inputs;
  for (const auto& s : schedules) {
    inputs.push_back(
        {workload_, target_, s, options_.repeat, measurement_seed(options_.seed, workload_, s), options_.cancel});
  }
  Measurer::OnResult on_result;
  if (report && on_trial_) {
    on_result = [&](std::size_t i, const Measurement& m) {
      if (is_infrastructure_error(m.status)) return;
      if (m.ok()) best_reported_ = std::min(best_reported_, m.time_us);
      on_trial_({&workload_, &target_, &schedules[i], &m, ++trials_reported_, 0, best_reported_, result_.default_us});
    };
  }
  auto results = measurer_.measure_reporting(inputs, on_result);
  if (results.size() != schedules.size()) {
    throw Error(ErrorKind::internal, "tuner: measurer returned " + std::to_string(results.size()) + " results for " +
                                         std::to_string(schedules.size()) + " schedules");
  }
  return results;
}

std::vector<std::pair<Schedule, Measurement>> TuningSession::measure_first(int max_trials) {
  options_.measure_default = false;
  std::vector<Schedule> first;
  const auto vendor = backend::default_schedule(workload_, target_);
  if (vendor) first.push_back(*vendor);
  for (const auto& a : options_.anchors) {
    if (std::find(first.begin(), first.end(), a) == first.end()) first.push_back(a);
  }
  std::erase_if(first,
                [&](const Schedule& s) { return records_.contains(workload_.key(), target_info_.key, s.key()); });
  if (static_cast<int>(first.size()) > max_trials) first.resize(std::max(0, max_trials));
  const std::vector<Measurement> results = measure(first);
  std::vector<std::pair<Schedule, Measurement>> out;
  std::vector<search::Trial> seen;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const Measurement& m = results[i];
    if (!is_infrastructure_error(m.status)) {
      seen.push_back({first[i], m.status, m.time_us});
      if (vendor && first[i] == *vendor && m.ok()) result_.default_us = m.time_us;
    }
    out.emplace_back(first[i], m);
  }
  if (!seen.empty()) strategy_.observe(seen);
  return out;
}

int TuningSession::run_round(int max_trials) {
  if (exhausted_) max_trials = 0;
  const int before = result_.measured;
  std::vector<Schedule> schedules;
  std::vector<Measurement> results;
  // The default takes a slot of this round only when it is measured now (not on resume),
  // and is stored with the round's batch: a round is stored whole or not at all.
  if (max_trials > 0 && options_.measure_default) {
    for (auto& [s, m] : measure_first(max_trials)) {
      --max_trials;
      schedules.push_back(std::move(s));
      results.push_back(std::move(m));
    }
  }
  const int want = std::min(max_trials, options_.batch_size);
  if (want > 0) {
    const auto batch = strategy_.propose(static_cast<std::size_t>(want));
    const auto measured = measure(batch);
    std::vector<search::Trial> trials;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      trials.push_back({batch[i], measured[i].status, measured[i].time_us});
    }
    strategy_.update(trials);  // before store: a checkpoint saves the updated strategy
    exhausted_ = batch.empty();
    schedules.insert(schedules.end(), batch.begin(), batch.end());
    results.insert(results.end(), measured.begin(), measured.end());
  }
  store(schedules, results);  // also an empty round: its checkpoint still runs
  if (options_.after_round) options_.after_round();
  return result_.measured - before;
}

void TuningSession::confirm_best(int k) {
  const auto top = records_.best(workload_.key(), target_info_.key, k);
  if (top.size() < 2) return;
  std::vector<Schedule> schedules;
  for (const auto& r : top) schedules.push_back(r.schedule);
  const std::optional<Schedule> before = result_.best_schedule;
  for (int round = 0; round < std::max(1, options_.confirm_rounds); ++round) {
    std::rotate(schedules.begin(), schedules.begin() + (round > 0 ? 1 : 0), schedules.end());
    // One record per schedule: the store pools each with the ones it holds.
    const std::vector<db::Record> records = records_of(schedules, measure(schedules, false));
    if (!records.empty()) records_.insert(records);
    if (cancelled(options_.cancel)) break;
  }
  result_.confirmed = int(schedules.size());
  const auto best = records_.best(workload_.key(), target_info_.key, 1);
  if (best.empty()) return;
  result_.best_schedule = best.front().schedule;
  result_.best = best.front().measurement;
  result_.best_us = best.front().measurement.time_us;
  result_.pick_changed = before != result_.best_schedule;
}

TuneResult tune(const Workload& workload, const Target& target, int budget, search::SearchStrategy& strategy,
                Measurer& measurer, db::RecordStore& records, const TuneOptions& options,
                const TuneCallbacks& callbacks) {
  if (budget < 1) throw_bad_input("tuner: trials must be >= 1");
  TuningSession session(workload, target, strategy, measurer, records, options);
  if (callbacks.on_trial) {
    session.set_on_trial([&](const TrialProgress& p) {
      TrialProgress with_budget = p;
      with_budget.budget = budget;
      callbacks.on_trial(with_budget);
    });
  }
  auto report = [&] {
    if (callbacks.on_round) callbacks.on_round(session.progress(budget));
  };
  report();
  std::string reason = "budget";
  while (session.result().trials < budget) {
    if (session.early_stopped()) {
      reason = "early_stopping";
      break;
    }
    session.run_round(budget - session.result().trials);
    if (cancelled(options.cancel)) {
      reason = "cancelled";
      break;
    }
    report();
    if (session.exhausted()) {
      reason = "exhausted";
      break;
    }
  }
  if (options.confirm_top > 0 && reason != "cancelled") session.confirm_best(options.confirm_top);
  TuneResult result = session.result();
  result.stop_reason = reason;
  return result;
}

}  // namespace atvoss::tuner
