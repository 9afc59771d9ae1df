// The TuningDatabase API, run against an in-memory, a file and a PostgreSQL database (same
// checks for every storage, as LevelDB's table_test does for its implementations).
#include "db/tuning_database.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "db_test_util.hpp"
#include "pg_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;
using ::testing::HasSubstr;

enum class Storage { memory, file, postgres };

void PrintTo(Storage s, std::ostream* os) {
  *os << (s == Storage::memory ? "memory" : s == Storage::file ? "file" : "postgres");
}

class TuningDatabaseTest : public ::testing::TestWithParam<Storage> {
 protected:
  void SetUp() override {
    if (GetParam() == Storage::postgres) pg_ = std::make_unique<PgSchema>();
    path_ = GetParam() == Storage::file     ? dir_.file("tune.db")
            : GetParam() == Storage::memory ? ":memory:"
                                            : pg_->url();
    db_ = std::make_unique<TuningDatabase>(TuningDatabase::open(path_));
  }
  void TearDown() override { db_.reset(); }
  TuningDatabase& db() { return *db_; }

  TempDir dir_;
  std::unique_ptr<PgSchema> pg_;
  std::string path_;
  std::unique_ptr<TuningDatabase> db_;
  const TargetInfo npu_a_ = TargetInfo::named("npu-a");
  const TargetInfo npu_b_ = TargetInfo::named("npu-b");
  const Workload w1_ = matmul(512, 512, 512);
  const Workload w2_ = matmul(1024, 512, 256);
};

INSTANTIATE_TEST_SUITE_P(Storage, TuningDatabaseTest,
                         ::testing::Values(Storage::memory, Storage::file, Storage::postgres), [](const auto& info) {
                           return info.param == Storage::file     ? "File"
                                  : info.param == Storage::memory ? "Memory"
                                                                  : "Postgres";
                         });

TEST_P(TuningDatabaseTest, InsertedRecordRoundTrips) {
  Record r = record(w1_, npu_a_, tiles(64, 128), ok_us(12.5, {12.0, 12.5, 13.0}));
  r.measurement.profile.l1_hit_rate = 0.75;
  r.created_at_ms = 1'700'000'000'123;
  const auto id = db().records().insert(r);
  EXPECT_GT(id, 0);
  const auto got = db().records().find(w1_.key(), npu_a_.key, r.schedule.key());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->workload, w1_);
  EXPECT_EQ(got->target.name, "npu-a");
  EXPECT_EQ(got->schedule, r.schedule);
  EXPECT_EQ(got->measurement.status, Status::ok);
  EXPECT_DOUBLE_EQ(got->measurement.time_us, 12.5);
  EXPECT_EQ(got->measurement.repeats, (std::vector<double>{12.0, 12.5, 13.0}));
  EXPECT_DOUBLE_EQ(got->measurement.profile.l1_hit_rate, 0.75);
  EXPECT_EQ(got->worker, "test");
  EXPECT_EQ(got->job, "job-a");
  EXPECT_EQ(got->created_at_ms, 1'700'000'000'123);
  EXPECT_TRUE(db().records().contains(w1_.key(), npu_a_.key, r.schedule.key()));
  EXPECT_FALSE(db().records().contains(w1_.key(), npu_b_.key, r.schedule.key()));
}

TEST_P(TuningDatabaseTest, BestIsTargetAwareSortedAndSkipsFailures) {
  std::vector<Record> batch = {
      record(w1_, npu_a_, tiles(64, 64), ok_us(30)),
      record(w1_, npu_a_, tiles(64, 128), ok_us(10)),
      record(w1_, npu_a_, tiles(128, 128), Measurement::failed(Status::invalid, "L0A overflow")),
      record(w1_, npu_a_, tiles(32, 32), ok_us(20)),
      // Faster, but on another target: must never show up for npu-a.
      record(w1_, npu_b_, tiles(16, 16), ok_us(1)),
      record(w2_, npu_a_, tiles(16, 16), ok_us(2)),
  };
  db().records().insert(batch);
  const auto best = db().records().best(w1_.key(), npu_a_.key, 5);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_DOUBLE_EQ(best[0].measurement.time_us, 10);
  EXPECT_DOUBLE_EQ(best[1].measurement.time_us, 20);
  EXPECT_DOUBLE_EQ(best[2].measurement.time_us, 30);
  for (const auto& r : best) {
    EXPECT_EQ(r.target.key, npu_a_.key);
    EXPECT_EQ(r.workload, w1_);
  }
  EXPECT_EQ(db().records().best(w1_.key(), npu_a_.key, 1).size(), 1u);
  EXPECT_TRUE(db().records().best(w1_.key(), npu_a_.key, 0).empty());
  EXPECT_TRUE(db().records().best(w1_.key(), TargetInfo::named("nowhere").key, 3).empty());
  ASSERT_EQ(db().records().best(w1_.key(), npu_b_.key, 3).size(), 1u);
}

TEST_P(TuningDatabaseTest, BestQueryWalksTheIndexWithoutScanningRecords) {
  const std::string plan = db().records().explain_best_plan();
  SCOPED_TRACE(plan);
  EXPECT_THAT(plan, HasSubstr("records_best"));
  EXPECT_THAT(plan, ::testing::Not(HasSubstr("SCAN r")));
  EXPECT_THAT(plan, ::testing::Not(HasSubstr("TEMP B-TREE")));
  EXPECT_THAT(plan, ::testing::Not(HasSubstr("Seq Scan on records")));
}

TEST_P(TuningDatabaseTest, InfrastructureErrorRejectsTheWholeBatch) {
  for (Status s : {Status::worker_lost, Status::session_timeout, Status::error}) {
    SCOPED_TRACE(std::string(to_string(s)));
    std::vector<Record> batch = {record(w1_, npu_a_, tiles(64, 64), ok_us(5)),
                                 record(w1_, npu_a_, tiles(64, 32), Measurement::failed(s, "lost"))};
    try {
      db().records().insert(batch);
      FAIL() << "insert accepted an infrastructure error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_THAT(e.what(), HasSubstr("infrastructure"));
    }
    EXPECT_EQ(db().stats().records, 0);
  }
}

TEST_P(TuningDatabaseTest, CandidateErrorsAreStoredWithTheirMessage) {
  db().records().insert(record(w1_, npu_a_, tiles(64, 64), Measurement::failed(Status::timeout, "over 1 s")));
  const auto got = db().records().find(w1_.key(), npu_a_.key, tiles(64, 64).key());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->measurement.status, Status::timeout);
  EXPECT_EQ(got->measurement.message, "over 1 s");
  EXPECT_TRUE(db().records().best(w1_.key(), npu_a_.key, 3).empty());
}

TEST_P(TuningDatabaseTest, SameKeyAgainKeepsBothSetsOfRepeatsOnce) {
  const Schedule s = tiles(64, 64);
  db().records().insert(record(w1_, npu_a_, s, ok_us(10, {10, 10})));
  db().records().insert(record(w1_, npu_a_, s, ok_us(14, {14, 14})));
  db().records().insert(record(w1_, npu_a_, s, ok_us(14, {14, 14})));  // already contained: no change
  const auto got = db().records().find(w1_.key(), npu_a_.key, s.key());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->measurement.repeats, (std::vector<double>{10, 10, 14, 14}));
  EXPECT_DOUBLE_EQ(got->measurement.time_us, 12);  // median of all repeats
  EXPECT_EQ(db().stats().records, 1);
}

TEST_P(TuningDatabaseTest, SuccessReplacesAFailureOfTheSameKeyButNotTheReverse) {
  const Schedule s = tiles(64, 64);
  db().records().insert(record(w1_, npu_a_, s, Measurement::failed(Status::runtime_error, "flaky")));
  db().records().insert(record(w1_, npu_a_, s, ok_us(9)));
  db().records().insert(record(w1_, npu_a_, s, Measurement::failed(Status::timeout, "slow")));
  const auto got = db().records().find(w1_.key(), npu_a_.key, s.key());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->measurement.status, Status::ok);
  EXPECT_DOUBLE_EQ(got->measurement.time_us, 9);
}

TEST_P(TuningDatabaseTest, HistoryIsOldestFirstAndFiltersByTarget) {
  Record a = record(w1_, npu_a_, tiles(64, 64), ok_us(3));
  a.created_at_ms = 3000;
  Record b = record(w1_, npu_b_, tiles(64, 64), ok_us(2));
  b.created_at_ms = 2000;
  Record c = record(w1_, npu_a_, tiles(32, 64), ok_us(1));
  c.created_at_ms = 1000;
  db().records().insert(std::vector<Record>{a, b, c, record(w2_, npu_a_, tiles(8, 8), ok_us(1))});
  const auto all = db().records().history(w1_.key());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].created_at_ms, 1000);
  EXPECT_EQ(all[2].created_at_ms, 3000);
  const auto only_a = db().records().history(w1_.key(), npu_a_.key);
  ASSERT_EQ(only_a.size(), 2u);
  for (const auto& r : only_a) EXPECT_EQ(r.target.key, npu_a_.key);
}

TEST_P(TuningDatabaseTest, StreamsEveryRecordOfATargetAcrossPages) {
  std::vector<Record> batch;
  for (int i = 1; i <= 2500; ++i) batch.push_back(record(w1_, npu_a_, tiles(i, 1), ok_us(i)));
  batch.push_back(record(w1_, npu_b_, tiles(1, 1), ok_us(1)));
  db().records().insert(batch);
  std::int64_t seen = 0, last_id = 0;
  db().records().for_each_record(npu_a_.key, [&](const Record& r) {
    EXPECT_EQ(r.target.key, npu_a_.key);
    EXPECT_GT(r.id, last_id);
    last_id = r.id;
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, 2500);
  seen = 0;
  db().records().for_each_record(npu_a_.key, [&](const Record&) { return ++seen < 10; });
  EXPECT_EQ(seen, 10);
}

TEST_P(TuningDatabaseTest, QueryFiltersCombine) {
  const Workload ln = Workload::from_json(Json{{"op", "layernorm"}, {"dims", {{"M", 64}, {"N", 768}}}});
  Record old_ok = record(w1_, npu_a_, tiles(1, 1), ok_us(1));
  old_ok.created_at_ms = 1000;
  Record new_fail = record(w1_, npu_a_, tiles(2, 2), Measurement::failed(Status::invalid, "x"));
  new_fail.created_at_ms = 5000;
  Record norm = record(ln, npu_a_, Schedule({{"tile_m", 8}}), ok_us(3));
  norm.created_at_ms = 6000;
  Record other = record(w1_, npu_b_, tiles(1, 1), ok_us(1));
  other.created_at_ms = 7000;
  db().records().insert(std::vector<Record>{old_ok, new_fail, norm, other});

  RecordFilter f;
  f.target_key = npu_a_.key;
  EXPECT_EQ(db().records().query(f).size(), 3u);
  f.op = "matmul";
  EXPECT_EQ(db().records().query(f).size(), 2u);
  f.status = Status::invalid;
  ASSERT_EQ(db().records().query(f).size(), 1u);
  f.status.reset();
  f.since_ms = 2000;
  ASSERT_EQ(db().records().query(f).size(), 1u);
  EXPECT_EQ(db().records().query(f)[0].measurement.status, Status::invalid);
  RecordFilter newest;
  newest.limit = 2;
  const auto rows = db().records().query(newest);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].created_at_ms, 7000);
}

TEST_P(TuningDatabaseTest, ModelsSaveAndLoadLatestPerKindAndFeatureVersion) {
  ModelRecord m;
  m.kind = "xgboost";
  m.feature_version = 1;
  m.blob = {1, 2, 3};
  m.n_records = 100;
  m.metrics = Json{{"ndcg", 0.9}};
  m.created_at_ms = 1000;
  db().models().save(npu_a_, m);
  m.blob = {4, 5};
  m.feature_version = 2;
  m.created_at_ms = 2000;
  db().models().save(npu_a_, m);
  m.kind = "linear";
  m.blob = {};
  db().models().save(npu_a_, m);

  const auto latest = db().models().latest(npu_a_.key, "xgboost");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->blob, (std::vector<std::uint8_t>{4, 5}));
  const auto v1 = db().models().latest(npu_a_.key, "xgboost", 1);
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->blob, (std::vector<std::uint8_t>{1, 2, 3}));
  EXPECT_EQ(v1->metrics["ndcg"], 0.9);
  const auto empty = db().models().latest(npu_a_.key, "linear");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->blob.empty());
  EXPECT_FALSE(db().models().latest(npu_b_.key, "xgboost").has_value());
  const auto listed = db().models().list(npu_a_.key);
  ASSERT_EQ(listed.size(), 3u);
  for (const auto& l : listed) EXPECT_TRUE(l.blob.empty());
}

TEST_P(TuningDatabaseTest, JobsCreateReadUpdateDelete) {
  const auto id = db().jobs().create("resnet50", Json{{"trials", 100}});
  EXPECT_THROW(db().jobs().create("resnet50", Json::object()), Error);
  auto j = db().jobs().get(id);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state, "pending");
  EXPECT_EQ(j->spec["trials"], 100);
  db().jobs().update(id, "running", 0.5);
  j = db().jobs().named("resnet50");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state, "running");
  EXPECT_DOUBLE_EQ(j->progress, 0.5);
  EXPECT_GE(j->updated_at_ms, j->created_at_ms);
  db().jobs().update_spec(id, Json{{"trials", 200}});
  EXPECT_EQ(db().jobs().get(id)->spec["trials"], 200);
  EXPECT_EQ(db().jobs().all().size(), 1u);
  EXPECT_TRUE(db().jobs().remove(id));
  EXPECT_FALSE(db().jobs().remove(id));
  EXPECT_FALSE(db().jobs().get(id).has_value());
  try {
    db().jobs().update(id, "done", 1);
    FAIL() << "update of a deleted job succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

// A batch job stores a round's records and its saved state in one transaction.
TEST_P(TuningDatabaseTest, WritesTogetherCommitOrRollBackAsOne) {
  const auto job = db().jobs().create("j", Json::object());
  db().records().write_together([&] {
    db().records().insert(record(w1_, npu_a_, tiles(1, 1), ok_us(1)));
    db().jobs().save_task(job, "t", Json{{"round", 1}});
  });
  EXPECT_EQ(db().stats().records, 1);
  EXPECT_THROW(db().records().write_together([&] {
    db().records().insert(record(w1_, npu_a_, tiles(2, 2), ok_us(2)));
    db().jobs().save_task(job, "t", Json{{"round", 2}});
    throw Error(ErrorKind::io, "crash before the commit");
  }),
               Error);
  EXPECT_EQ(db().stats().records, 1);
  EXPECT_EQ(db().jobs().tasks(job).at("t")["round"], 1);
  db().records().insert(record(w1_, npu_a_, tiles(3, 3), ok_us(3)));  // the connection is usable again
  EXPECT_EQ(db().stats().records, 2);
}

TEST_P(TuningDatabaseTest, JobTaskStatesAreReplacedPerTaskAndGoWithTheirJob) {
  const auto id = db().jobs().create("j", Json::object());
  const auto other = db().jobs().create("k", Json::object());
  db().jobs().save_task(id, "conv", Json{{"round", 1}});
  db().jobs().save_task(id, "fc", Json{{"round", 1}});
  db().jobs().save_task(id, "conv", Json{{"round", 2}});
  db().jobs().save_task(other, "conv", Json{{"round", 7}});
  auto tasks = db().jobs().tasks(id);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks["conv"]["round"], 2);
  EXPECT_EQ(tasks["fc"]["round"], 1);
  EXPECT_TRUE(db().jobs().remove(id));
  EXPECT_TRUE(db().jobs().tasks(id).empty());
  EXPECT_EQ(db().jobs().tasks(other).at("conv")["round"], 7);
  try {
    db().jobs().save_task(id, "conv", Json::object());
    FAIL() << "saved a task state for a deleted job";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

TEST_P(TuningDatabaseTest, StatsCountPerTargetAndStatus) {
  db().records().insert(std::vector<Record>{record(w1_, npu_a_, tiles(1, 1), ok_us(1)),
                                            record(w2_, npu_a_, tiles(1, 1), Measurement::failed(Status::invalid, "x")),
                                            record(w1_, npu_b_, tiles(1, 1), ok_us(1))});
  db().jobs().create("j", Json::object());
  const Stats st = db().stats();
  EXPECT_EQ(st.schema_version, TuningDatabase::kSchemaVersion);
  EXPECT_EQ(st.records, 3);
  EXPECT_EQ(st.targets, 2);
  EXPECT_EQ(st.workloads, 2);
  EXPECT_EQ(st.jobs, 1);
  ASSERT_EQ(st.per_target.size(), 2u);
  EXPECT_EQ(st.per_target[0].target.name, "npu-a");
  EXPECT_EQ(st.per_target[0].ok, 1);
  EXPECT_EQ(st.per_target[0].failed, 1);
  EXPECT_EQ(st.per_target[0].workloads, 2);
  EXPECT_EQ(st.by_status.size(), 2u);
}

TEST_P(TuningDatabaseTest, PruneKeepsBestKPerWorkloadAndTarget) {
  std::vector<Record> batch;
  for (int i = 1; i <= 10; ++i) {
    batch.push_back(record(w1_, npu_a_, tiles(i, 1), ok_us(100 - i)));
    batch.push_back(record(w1_, npu_b_, tiles(i, 1), ok_us(i)));
  }
  batch.push_back(record(w1_, npu_a_, tiles(99, 99), Measurement::failed(Status::invalid, "x")));
  db().records().insert(batch);
  EXPECT_EQ(db().prune(3, /*keep_failed=*/true), 14);
  EXPECT_EQ(db().stats().records, 7);
  const auto a = db().records().best(w1_.key(), npu_a_.key, 10);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_DOUBLE_EQ(a[0].measurement.time_us, 90);
  const auto b = db().records().best(w1_.key(), npu_b_.key, 10);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b[2].measurement.time_us, 3);
  EXPECT_EQ(db().prune(3), 1);  // the failure goes now
  EXPECT_EQ(db().stats().records, 6);
  EXPECT_THROW(db().prune(0), Error);
}

TEST_P(TuningDatabaseTest, BestPerWorkloadGivesOneEntryPerWorkload) {
  db().records().insert(
      std::vector<Record>{record(w1_, npu_a_, tiles(1, 1), ok_us(5)), record(w1_, npu_a_, tiles(2, 1), ok_us(3)),
                          record(w2_, npu_a_, tiles(1, 1), ok_us(7)), record(w2_, npu_b_, tiles(2, 2), ok_us(1))});
  const auto best = db().records().best_per_workload(npu_a_.key);
  ASSERT_EQ(best.size(), 2u);
  for (const auto& e : best) {
    if (e.workload == w1_) {
      EXPECT_EQ(e.schedule, tiles(2, 1));
      EXPECT_DOUBLE_EQ(e.time_us, 3);
    } else {
      EXPECT_EQ(e.workload, w2_);
      EXPECT_DOUBLE_EQ(e.time_us, 7);
    }
  }
}

TEST_P(TuningDatabaseTest, ExportThenImportReproducesTheRecords) {
  db().records().insert(
      std::vector<Record>{record(w1_, npu_a_, tiles(1, 1), ok_us(5, {4, 5, 6})),
                          record(w2_, npu_b_, tiles(1, 1), Measurement::failed(Status::compile_error, "e"))});
  std::stringstream lines;
  EXPECT_EQ(db().export_jsonl(lines), 2);
  auto copy = TuningDatabase::open(":memory:");
  const MergeReport rep = copy.import_jsonl(lines, "export.jsonl");
  EXPECT_EQ(rep.added, 2);
  const auto got = copy.records().find(w1_.key(), npu_a_.key, tiles(1, 1).key());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->measurement.repeats, (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(copy.targets().size(), 2u);
  // Importing the same lines again adds nothing.
  std::stringstream again;
  db().export_jsonl(again);
  const MergeReport rep2 = copy.import_jsonl(again, "export.jsonl");
  EXPECT_EQ(rep2.added, 0);
  EXPECT_EQ(rep2.identical, 2);
}

TEST_P(TuningDatabaseTest, ImportLineMissingAFieldNamesItAndStoresNothing) {
  db().records().insert(record(w1_, npu_a_, tiles(1, 1), ok_us(5)));
  std::stringstream lines;
  db().export_jsonl(lines);
  Json good = parse_json(lines.str(), "line");
  good["schedule"] = tiles(9, 9).to_json();
  good.erase("schedule_key");
  Json bad = good;
  bad["schedule"] = tiles(8, 8).to_json();
  bad.erase("target");
  std::stringstream in(good.dump() + "\n" + bad.dump() + "\n");
  try {
    db().import_jsonl(in, "in.jsonl");
    FAIL() << "import accepted a line without a target";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_THAT(e.what(), HasSubstr("in.jsonl:2"));
    EXPECT_THAT(e.what(), HasSubstr("'target'"));
  }
  EXPECT_EQ(db().stats().records, 1);  // the good first line was not stored either
}

// Every imported record is validated like a measured one; the first bad one refuses the
// whole batch, naming its line, and the caller's space check sees each record.
TEST_P(TuningDatabaseTest, ImportValidatesEveryRecordAndRefusesTheBatchWhole) {
  db().records().insert(std::vector<Record>{record(w1_, npu_a_, tiles(1, 1), ok_us(5, {4, 5, 6})),
                                            record(w2_, npu_a_, tiles(2, 2), ok_us(7))});
  std::stringstream exported;
  db().export_jsonl(exported);
  std::string first, second;
  std::getline(exported, first);
  std::getline(exported, second);
  auto copy = TuningDatabase::open(":memory:");
  const auto refused = [&](const std::string& lines, const RecordCheck& check) -> std::string {
    std::stringstream in(lines);
    try {
      copy.import_jsonl(in, "in.jsonl", check);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      return e.what();
    }
    return "";
  };
  Json negative = parse_json(second, "line");
  negative["measurement"]["time_us"] = -5;
  EXPECT_THAT(refused(first + "\n" + negative.dump() + "\n", {}),
              HasSubstr("in.jsonl:2: measurement: field 'time_us'"));
  Json renamed = parse_json(second, "line");
  renamed["target"]["name"] = "npu-z";  // key and description still say npu-a
  EXPECT_THAT(refused(first + "\n" + renamed.dump() + "\n", {}), HasSubstr("in.jsonl:2: record.target"));
  std::vector<std::string> seen;
  const RecordCheck outside_w2 = [&](const Workload& w, const Json& target, const Schedule&, const Measurement&) {
    seen.push_back(target.at("name").get<std::string>());
    if (w == w2_) throw_bad_input("record: field 'schedule' is not in the space");
  };
  EXPECT_THAT(refused(first + "\n" + second + "\n", outside_w2), HasSubstr("in.jsonl:2: record: field 'schedule'"));
  EXPECT_EQ(seen, (std::vector<std::string>{"npu-a", "npu-a"}));
  EXPECT_EQ(copy.stats().records, 0);

  Record bad = record(w2_, npu_a_, tiles(3, 3), ok_us(7));
  bad.measurement.time_us = 0;
  const std::vector<Record> batch{record(w1_, npu_a_, tiles(3, 3), ok_us(5)), bad};
  try {
    copy.import_records(batch, "cache.json");
    FAIL() << "import_records accepted a zero time";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cache.json: record 2: measurement: field 'time_us'"));
  }
  EXPECT_EQ(copy.stats().records, 0);
  std::stringstream both(first + "\n" + second + "\n");
  EXPECT_EQ(copy.import_jsonl(both, "in.jsonl").added, 2);
}

TEST_P(TuningDatabaseTest, ImportRefusesInfrastructureStatusesAndForeignFormats) {
  const std::string cases[] = {
      R"({"format":"atvoss-record","format_version":1,"workload":{"op":"matmul","dims":{"M":1,"N":1,"K":1}},)"
      R"("target":{"key":"k","name":"n","description":{}},"schedule":{},"measurement":{"status":"worker_lost"}})",
      R"({"format":"something-else","format_version":1})",
      R"({"format":"atvoss-record","format_version":9})",
      R"(not json)",
  };
  for (const auto& line : cases) {
    SCOPED_TRACE(line);
    std::stringstream in(line);
    EXPECT_THROW(db().import_jsonl(in, "x"), Error);
  }
  EXPECT_EQ(db().stats().records, 0);
}

TEST(TuningDatabaseMergeTest, MergeDeduplicatesCombinesAndIsIdempotent) {
  TempDir dir;
  const TargetInfo t = TargetInfo::named("npu-a");
  const Workload w = matmul(256, 256, 256);
  {
    auto other = TuningDatabase::open(dir.file("other.db"));
    other.records().insert(std::vector<Record>{record(w, t, tiles(1, 1), ok_us(5, {5})),    // identical
                                               record(w, t, tiles(2, 2), ok_us(8, {8})),    // combined
                                               record(w, t, tiles(3, 3), ok_us(4, {4})),    // new
                                               record(w, t, tiles(4, 4), ok_us(6, {6}))});  // conflict: ok wins
    ModelRecord m;
    m.kind = "xgboost";
    m.blob = {7};
    other.models().save(t, m);
    other.jobs().create("farm-job", Json::object());
  }
  auto db = TuningDatabase::open(dir.file("main.db"));
  db.records().insert(
      std::vector<Record>{record(w, t, tiles(1, 1), ok_us(5, {5})), record(w, t, tiles(2, 2), ok_us(10, {10})),
                          record(w, t, tiles(4, 4), Measurement::failed(Status::runtime_error, "flake"))});
  const MergeReport rep = db.merge_from(dir.file("other.db"));
  EXPECT_EQ(rep.added, 1);
  EXPECT_EQ(rep.identical, 1);
  EXPECT_EQ(rep.combined, 1);
  EXPECT_EQ(rep.conflicts, 1);
  EXPECT_EQ(rep.models, 1);
  EXPECT_EQ(rep.jobs, 1);
  const auto combined = db.records().find(w.key(), t.key, tiles(2, 2).key());
  ASSERT_TRUE(combined.has_value());
  EXPECT_EQ(combined->measurement.repeats, (std::vector<double>{10, 8}));
  EXPECT_EQ(db.records().find(w.key(), t.key, tiles(4, 4).key())->measurement.status, Status::ok);
  EXPECT_EQ(db.stats().records, 4);

  const MergeReport again = db.merge_from(dir.file("other.db"));
  EXPECT_EQ(again.added + again.combined + again.models + again.jobs, 0);
  EXPECT_EQ(db.records().find(w.key(), t.key, tiles(2, 2).key())->measurement.repeats.size(), 2u);
  EXPECT_EQ(db.integrity_check(), "ok");
}

TEST(TuningDatabaseMergeTest, MergeOfAMissingFileIsNotFoundAndChangesNothing) {
  auto db = TuningDatabase::open(":memory:");
  try {
    db.merge_from("/nonexistent/atvoss.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

TEST(RecordTest, TimeTextRoundTripsAndRejectsGarbage) {
  EXPECT_EQ(format_time_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(parse_time_ms("2026-11-29T14:20:00.5Z", "since"),
            parse_time_ms("2026-11-29", "since") + (14 * 3600 + 20 * 60) * 1000 + 500);
  EXPECT_EQ(parse_time_ms("1700000000", "since"), 1'700'000'000'000);
  EXPECT_EQ(parse_time_ms(format_time_ms(1'764'426'000'123), "t"), 1'764'426'000'123);
  for (const char* bad : {"", "yesterday", "2026-13-01", "2026-11-29T25:00:00", "2026-11-29Tx"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_time_ms(bad, "since"), Error);
  }
}

TEST(RecordTest, TargetFromNpuDescriptionUsesItsKey) {
  Target t;
  t.name = "my-npu";
  const TargetInfo info = TargetInfo::from_target(t);
  EXPECT_EQ(info.key, t.key());
  EXPECT_EQ(info.name, "my-npu");
  Record r(matmul(1, 1, 1), t, tiles(1, 1), ok_us(1));
  EXPECT_EQ(r.target.key, t.key());
  EXPECT_NE(TargetInfo::named("my-npu").key, t.key());
}

}  // namespace
}  // namespace atvoss::db
