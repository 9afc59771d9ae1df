#include "tuner/tuner.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <numeric>
#include <random>

#include <set>
#include <span>
#include <sstream>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "db/memory_record_store.hpp"
#include "db/tuning_database.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"
#include "tuner/local_measurer.hpp"

namespace atvoss::tuner {
namespace {

class TunerTest : public testing::Test {
 protected:
  Target target_ = simulator::preset("ascend910");
  Workload workload_ = Workload::from_json(
      Json{{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 256}}}, {"epilogue", {"bias"}}});
  ScheduleSpace space_ = simulator::space_for(workload_, target_);
  db::TuningDatabase db_ = db::TuningDatabase::open(":memory:");
  LocalMeasurer measurer_{LocalMeasurerOptions{2}};

  std::unique_ptr<search::SearchStrategy> strategy(std::uint64_t seed = 1) {
    search::TuneContext o;
    o.seed = seed;
    return search::make_strategy("random", space_, o);
  }
  std::vector<db::Record> stored() {
    return db_.records().history(workload_.key(), db::TargetInfo::from_target(target_).key);
  }
};

TEST_F(TunerTest, StoresEveryTrialAndFindsTheBest) {
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 8;
  const auto r = tune(workload_, target_, 40, *s, measurer_, db_.records(), o);
  EXPECT_EQ(r.trials, 40);
  EXPECT_EQ(r.measured, 40);
  EXPECT_EQ(r.curve.size(), 40u);
  ASSERT_TRUE(r.best_schedule.has_value());
  double best = 1e300;
  for (const auto& rec : stored()) {
    if (rec.measurement.ok()) best = std::min(best, rec.measurement.time_us);
  }
  EXPECT_EQ(r.best_us, best);
  EXPECT_TRUE(std::isfinite(r.default_us));  // default measured first
  for (std::size_t i = 1; i < r.curve.size(); ++i) EXPECT_LE(r.curve[i], r.curve[i - 1]);
}

// A batch job's zero-shot pick is an anchor: measured in the first round right after the
// default, never proposed again, and not measured twice when it is the default itself.
TEST_F(TunerTest, AnchorsAreMeasuredRightAfterTheDefault) {
  const Schedule def = *backend::default_schedule(workload_, target_);
  std::mt19937_64 rng(3);
  Schedule anchor = space_.schedule_at(*space_.random_valid_point(rng, 1000));
  while (anchor == def) anchor = space_.schedule_at(*space_.random_valid_point(rng, 1000));
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 8;
  o.anchors = {def, anchor};
  const auto r = tune(workload_, target_, 24, *s, measurer_, db_.records(), o);
  EXPECT_EQ(r.trials, 24);
  const auto records = stored();
  ASSERT_EQ(records.size(), 24u);
  EXPECT_EQ(records[0].schedule, def);
  EXPECT_EQ(records[1].schedule, anchor);
  int anchors = 0;
  for (const auto& rec : records) anchors += rec.schedule == anchor ? 1 : 0;
  EXPECT_EQ(anchors, 1);
}

TEST_F(TunerTest, ResumeNeverMeasuresAScheduleTwice) {
  TuneOptions o;
  o.batch_size = 8;
  o.repeat = 2;
  auto first = strategy(1);
  const auto a = tune(workload_, target_, 24, *first, measurer_, db_.records(), o);
  auto second = strategy(1);  // same seed: would propose the same schedules again
  const auto b = tune(workload_, target_, 48, *second, measurer_, db_.records(), o);
  EXPECT_EQ(b.resumed, 24);
  EXPECT_EQ(b.measured, 24);
  EXPECT_LE(b.best_us, a.best_us);
  const auto records = stored();
  ASSERT_EQ(records.size(), 48u);
  std::set<std::string> keys;
  for (const auto& r : records) {
    EXPECT_TRUE(keys.insert(r.schedule.key()).second);
    if (r.measurement.ok()) {
      EXPECT_EQ(r.measurement.repeats.size(), 2u);  // never combined with a re-measurement
    }
  }
  auto third = strategy(1);
  const auto c = tune(workload_, target_, 48, *third, measurer_, db_.records(), o);
  EXPECT_EQ(c.measured, 0);
  EXPECT_EQ(c.best_us, b.best_us);  // best restored from the database
}

// Real noise: the default schedule times 10 us the first time (a lucky quiet moment) and
// 10 ms every time after; the rest keep the simulator's time. Without confirmation the lucky
// one wins; confirming the top 3 combines its repeats (median 5005 us) and another wins.
class LuckyOnceMeasurer final : public Measurer {
 public:
  LuckyOnceMeasurer(Measurer& inner, Schedule lucky) : inner_(inner), lucky_(std::move(lucky)) {}
  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override {
    std::vector<Measurement> out = inner_.measure(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!(batch[i].schedule == lucky_) || !out[i].ok()) continue;
      const double t = seen_++ == 0 ? 10.0 : 10000.0;
      out[i].time_us = t;
      out[i].repeats.assign(out[i].repeats.size(), t);
    }
    return out;
  }
  std::string name() const override { return "lucky-once"; }

 private:
  Measurer& inner_;
  Schedule lucky_;
  int seen_ = 0;
};

TEST_F(TunerTest, ConfirmingTheTopKeepsALuckyOnceScheduleFromWinning) {
  const Schedule lucky = *backend::default_schedule(workload_, target_);
  TuneOptions o;
  o.batch_size = 8;
  {
    LuckyOnceMeasurer noisy(measurer_, lucky);
    auto s = strategy(5);
    db::MemoryRecordStore unconfirmed;
    const auto r = tune(workload_, target_, 24, *s, noisy, unconfirmed, o);
    ASSERT_TRUE(r.best_schedule.has_value());
    EXPECT_EQ(*r.best_schedule, lucky);  // what the test guards against
  }
  LuckyOnceMeasurer noisy(measurer_, lucky);
  auto s = strategy(5);
  o.confirm_top = 3;
  o.confirm_rounds = 1;
  db::MemoryRecordStore confirmed;
  const auto r = tune(workload_, target_, 24, *s, noisy, confirmed, o);
  ASSERT_TRUE(r.best_schedule.has_value());
  EXPECT_NE(*r.best_schedule, lucky);
  EXPECT_TRUE(r.pick_changed);
  EXPECT_EQ(r.confirmed, 3);
  EXPECT_LT(r.best_us, 5005.0);
  EXPECT_EQ(r.trials, 24);  // the re-measurements are not trials
  const auto stored = confirmed.find(workload_.key(), db::TargetInfo::from_target(target_).key, lucky.key());
  ASSERT_TRUE(stored.has_value());
  EXPECT_DOUBLE_EQ(stored->measurement.time_us, 5005.0);
}

// The confirmation measures the k side by side in rounds, the order rotated each round so no
// schedule always goes first, and pools every round's repeats with the stored ones. Each
// batch here runs 0.1% slower than the one before, as a machine that warms up: a drift that
// touches the k alike, so the pick holds.
class RecordingMeasurer final : public Measurer {
 public:
  explicit RecordingMeasurer(Measurer& inner) : inner_(inner) {}
  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override {
    std::vector<Schedule> order;
    for (const auto& item : batch) order.push_back(item.schedule);
    batches.push_back(order);
    std::vector<Measurement> out = inner_.measure(batch);
    const double drift = 1 + 0.001 * double(batches.size());
    for (auto& m : out) {
      m.time_us *= drift;
      for (double& x : m.repeats) x *= drift;
    }
    return out;
  }
  std::string name() const override { return "recording"; }
  std::vector<std::vector<Schedule>> batches;

 private:
  Measurer& inner_;
};

TEST_F(TunerTest, TheConfirmationInterleavesItsRoundsAndPoolsTheirRepeats) {
  LocalMeasurer exact(LocalMeasurerOptions{1, std::chrono::milliseconds(10000), 2, 0.0});
  RecordingMeasurer recording(exact);
  auto s = strategy(6);
  TuneOptions o;
  o.batch_size = 8;
  o.repeat = 2;
  o.confirm_top = 3;
  o.confirm_rounds = 3;
  const auto r = tune(workload_, target_, 16, *s, recording, db_.records(), o);
  ASSERT_GE(recording.batches.size(), 3u);
  const std::vector<std::vector<Schedule>> rounds(recording.batches.end() - 3, recording.batches.end());
  for (const auto& round : rounds) ASSERT_EQ(round.size(), 3u);
  EXPECT_EQ(rounds[1], (std::vector<Schedule>{rounds[0][1], rounds[0][2], rounds[0][0]}));
  EXPECT_EQ(rounds[2], (std::vector<Schedule>{rounds[0][2], rounds[0][0], rounds[0][1]}));
  EXPECT_EQ(r.confirmed, 3);
  EXPECT_FALSE(r.pick_changed);
  EXPECT_EQ(r.trials, 16);  // the re-measurements are not trials
  const auto stored = db_.records().find(workload_.key(), db::TargetInfo::from_target(target_).key, rounds[0][0].key());
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->measurement.repeats.size(), 2u + 3 * 2u);  // the trial's and three rounds'
}

// Another owner holds the claim on the schedule the run needs first: the run says what it
// waits for (a run once waited minutes printing nothing), then measures the schedule itself
// once the claim lapses by the store's clock. The claim is taken for 300 ms, so the wait is
// the lapse, not a sleep of the test's.
TEST_F(TunerTest, ARunWaitingOnAnotherOwnersClaimSaysSoAndMeasuresItOnceItLapses) {
  auto s = strategy();
  const Schedule def = *backend::default_schedule(workload_, target_);
  const std::string key = def.key();
  const db::TargetInfo info = db::TargetInfo::from_target(target_);
  ASSERT_EQ(db_.records().claim(workload_, info, std::span<const std::string>(&key, 1), "other-process", 300),
            std::vector<bool>{true});
  std::ostringstream notes;
  TuneOptions o;
  o.batch_size = 1;
  o.claim_owner = "this-process";
  o.claim_notes = &notes;
  const auto r = tune(workload_, target_, 2, *s, measurer_, db_.records(), o);
  EXPECT_EQ(r.trials, 2);
  EXPECT_EQ(r.measured_elsewhere, 0);  // lapsed unstored: measured here
  EXPECT_NE(notes.str().find(": waiting for 1 schedule that another process sharing the database has claimed"),
            std::string::npos)
      << notes.str();
  EXPECT_TRUE(db_.records().contains(workload_.key(), info.key, key));
}

// The tuner needs only the RecordStore interface: over the in-memory store a run and its
// resume store the same schedules, in the same order, as over the SQLite store.
TEST_F(TunerTest, TheMemoryStoreTunesAndResumesAsTheSqliteStore) {
  TuneOptions o;
  o.batch_size = 8;
  db::MemoryRecordStore memory;
  auto a = strategy(3);
  auto b = strategy(3);
  const auto on_file = tune(workload_, target_, 24, *a, measurer_, db_.records(), o);
  const auto in_memory = tune(workload_, target_, 24, *b, measurer_, memory, o);
  EXPECT_EQ(in_memory.best_us, on_file.best_us);
  auto c = strategy(3);
  const auto resumed = tune(workload_, target_, 40, *c, measurer_, memory, o);
  EXPECT_EQ(resumed.resumed, 24);
  EXPECT_EQ(resumed.measured, 16);
  auto d = strategy(3);
  tune(workload_, target_, 40, *d, measurer_, db_.records(), o);
  const auto key = db::TargetInfo::from_target(target_).key;
  std::vector<std::string> file_order, memory_order;
  for (const auto& r : db_.records().history(workload_.key(), key)) file_order.push_back(r.schedule.key());
  for (const auto& r : memory.history(workload_.key(), key)) memory_order.push_back(r.schedule.key());
  EXPECT_EQ(memory_order.size(), 40u);
  EXPECT_EQ(memory_order, file_order);
}

// A batch job's checkpoint sees the round already taken in by the session and the
// strategy, and its writes commit with the round's records or not at all.
TEST_F(TunerTest, ARoundCheckpointCommitsWithItsRecordsOrNotAtAll) {
  auto s = strategy();
  const auto job = db_.jobs().create("j", Json::object());
  TuningSession* session = nullptr;
  std::vector<std::pair<int, std::size_t>> seen;  // (session trials, strategy trials)
  TuneOptions o;
  o.batch_size = 8;
  o.round_checkpoint = [&] {
    seen.emplace_back(session->result().trials, s->trials());
    const int round = static_cast<int>(seen.size());
    return std::function<void()>([&, round] {
      db_.jobs().save_task(job, "t", Json{{"round", round}});
      if (round == 3) throw Error(ErrorKind::io, "disk full");
    });
  };
  TuningSession tuning(workload_, target_, *s, measurer_, db_.records(), o);
  session = &tuning;
  tuning.run_round(8);  // the default and 7 proposals
  tuning.run_round(8);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(8, std::size_t{8}));
  EXPECT_EQ(seen[1], std::make_pair(16, std::size_t{16}));
  EXPECT_EQ(stored().size(), 16u);
  EXPECT_THROW(tuning.run_round(8), Error);
  EXPECT_EQ(stored().size(), 16u);  // the failed checkpoint took its round's records along
  EXPECT_EQ(db_.jobs().tasks(job).at("t")["round"], 2);
}

// A measurer whose odd items always lose their worker.
class FlakyMeasurer : public Measurer {
 public:
  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override {
    std::vector<Measurement> out;
    for (const auto& in : batch) {
      if (n_++ % 2) {
        out.push_back(Measurement::failed(Status::worker_lost, "worker 3 died"));
      } else {
        out.push_back(simulate_item(in, 0));
      }
    }
    return out;
  }
  std::string name() const override { return "flaky"; }

 private:
  int n_ = 0;
};

TEST_F(TunerTest, InfrastructureErrorsAreNeverStored) {
  FlakyMeasurer flaky;
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 6;
  const auto r = tune(workload_, target_, 30, *s, flaky, db_.records(), o);
  EXPECT_EQ(r.trials, 30);
  for (const auto& rec : stored()) {
    EXPECT_FALSE(is_infrastructure_error(rec.measurement.status));
    EXPECT_EQ(rec.worker, "flaky");
  }
}

class DeadMeasurer : public Measurer {
 public:
  std::vector<Measurement> measure(const std::vector<MeasureRequest>& batch) override {
    return std::vector<Measurement>(batch.size(), Measurement::failed(Status::error, "farm down"));
  }
  std::string name() const override { return "dead"; }
};

TEST_F(TunerTest, AMeasurerThatNeverAnswersStopsTheRunWithoutStoring) {
  DeadMeasurer dead;
  auto s = strategy();
  EXPECT_THROW(tune(workload_, target_, 30, *s, dead, db_.records()), Error);
  EXPECT_TRUE(stored().empty());
}

TEST_F(TunerTest, EarlyStoppingEndsAStalledRun) {
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 4;
  o.early_stopping = 8;
  const auto r = tune(workload_, target_, 100000, *s, measurer_, db_.records(), o);
  if (r.stop_reason != "exhausted") {
    EXPECT_EQ(r.stop_reason, "early_stopping");
  }
  EXPECT_LT(r.trials, static_cast<int>(space_.size()));
}

TEST_F(TunerTest, ProgressCallbackSeesEveryRound) {
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 10;
  int calls = 0, last = -1;
  TuneCallbacks cb;
  cb.on_round = [&](const TuneProgress& p) {
    ++calls;
    EXPECT_GE(p.trials, last);
    last = p.trials;
  };
  tune(workload_, target_, 30, *s, measurer_, db_.records(), o, cb);
  EXPECT_GE(calls, 4);  // initial + 3 rounds
  EXPECT_EQ(last, 30);
}

TEST_F(TunerTest, OnTrialSeesEveryTrialAsItFinishes) {
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 7;
  std::vector<int> numbers;
  int budget = 20;
  double best = std::numeric_limits<double>::infinity();
  TuneCallbacks cb;
  cb.on_trial = [&](const TrialProgress& p) {
    numbers.push_back(p.trial);
    EXPECT_EQ(p.budget, budget);
    if (p.measurement->ok()) best = std::min(best, p.measurement->time_us);
    EXPECT_EQ(p.best_us, best);
    EXPECT_TRUE(space_.check(*p.schedule).ok);
  };
  const auto r = tune(workload_, target_, 20, *s, measurer_, db_.records(), o, cb);
  std::vector<int> expected(20);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(numbers, expected);
  EXPECT_EQ(best, r.best_us);
  // Resumed trials count: the next run's first trial is number 21.
  numbers.clear();
  auto s2 = strategy(2);
  budget = 22;
  tune(workload_, target_, budget, *s2, measurer_, db_.records(), o, cb);
  EXPECT_EQ(numbers, (std::vector<int>{21, 22}));
}

// Cancel raised while the 5th item is measured: it finishes and is stored with the four
// before it; the rest of the round is answered `error`, never stored, never reported.
TEST_F(TunerTest, CancelKeepsTheFinishedTrialsAndStops) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::atomic<int> calls{0};
  LocalMeasurer one_thread(LocalMeasurerOptions{1}, [&](const MeasureRequest& item, double noise) {
    if (++calls == 5) flag->store(true);
    return simulate_item(item, noise);
  });
  auto s = strategy();
  TuneOptions o;
  o.batch_size = 8;
  o.measure_default = false;
  o.cancel = flag;
  int reported = 0;
  TuneCallbacks cb;
  cb.on_trial = [&](const TrialProgress&) { ++reported; };
  const auto r = tune(workload_, target_, 40, *s, one_thread, db_.records(), o, cb);
  EXPECT_EQ(r.stop_reason, "cancelled");
  EXPECT_EQ(calls.load(), 5);  // the queued items never reached the backend
  EXPECT_EQ(r.trials, 5);
  EXPECT_EQ(reported, 5);
  EXPECT_EQ(stored().size(), 5u);
}

TEST(MeasurementSeed, StablePerScheduleAndSeed) {
  const auto w = Workload::from_json(Json{{"op", "softmax"}, {"dims", {{"M", 8}, {"N", 8}}}});
  const Schedule a({{"tile_m", 1}}), b({{"tile_m", 2}});
  EXPECT_EQ(measurement_seed(1, w, a), measurement_seed(1, w, a));
  EXPECT_NE(measurement_seed(1, w, a), measurement_seed(1, w, b));
  EXPECT_NE(measurement_seed(1, w, a), measurement_seed(2, w, a));
}

}  // namespace
}  // namespace atvoss::tuner
