// Runtime lookup table: export from a database, load with checksum validation, exact and
// nearest-shape lookups, concurrent readers; and the Kernel Tuner cache import.
#include "db/table/schedule_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "db/kernel_tuner_cache.hpp"
#include "db/table_export.hpp"
#include "db/tuning_database.hpp"
#include "db_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;
using table::MatchKind;
using table::ScheduleTable;
using ::testing::HasSubstr;

class ScheduleTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.records().insert(std::vector<Record>{
        record(matmul(1024, 1024, 1024), npu_, tiles(128, 128), ok_us(50)),
        record(matmul(1024, 1024, 1024), npu_, tiles(64, 64), ok_us(80)),
        record(matmul(64, 64, 64), npu_, tiles(16, 16), ok_us(2)),
        record(matmul(1024, 1024, 1024, "float16", {"bias"}), npu_, tiles(32, 32), ok_us(60)),
        record(matmul(4096, 4096, 4096), npu_, tiles(99, 99), Measurement::failed(Status::invalid, "x")),
        record(matmul(1024, 1024, 1024), other_, tiles(8, 8), ok_us(1)),
    });
    path_ = dir_.file("table.json");
    report_ = export_table(db_, npu_, path_);
  }

  std::string text() const {
    std::ifstream in(path_);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  TempDir dir_;
  TuningDatabase db_ = TuningDatabase::open(":memory:");
  const TargetInfo npu_ = TargetInfo::named("npu-a");
  const TargetInfo other_ = TargetInfo::named("npu-b");
  std::string path_;
  TableExportReport report_;
};

TEST_F(ScheduleTableTest, ExportWritesBestPerWorkloadOfOneTargetWithHeader) {
  EXPECT_EQ(report_.entries, 3);
  EXPECT_THAT(report_.checksum, ::testing::StartsWith("sha256:"));
  const auto t = ScheduleTable::load(path_);
  EXPECT_EQ(t->header().target_name, "npu-a");
  EXPECT_EQ(t->header().target_key, npu_.key);
  EXPECT_EQ(t->header().record_count, 3);
  EXPECT_EQ(t->header().checksum, report_.checksum);
  EXPECT_FALSE(t->header().created_at.empty());
  EXPECT_FALSE(t->header().tool_version.empty());
  const auto hit = t->lookup(matmul(1024, 1024, 1024));
  EXPECT_EQ(hit.kind, MatchKind::exact);
  ASSERT_NE(hit.entry, nullptr);
  EXPECT_EQ(hit.entry->schedule, tiles(128, 128));  // the fastest, and not npu-b's
  EXPECT_DOUBLE_EQ(hit.entry->time_us, 50);
}

TEST_F(ScheduleTableTest, NearestIsSameClassAndFlaggedApproximateWithDistance) {
  const auto t = ScheduleTable::load(path_);
  const auto near = t->lookup(matmul(1000, 1024, 1024));
  EXPECT_EQ(near.kind, MatchKind::nearest);
  ASSERT_NE(near.entry, nullptr);
  EXPECT_EQ(near.entry->workload, matmul(1024, 1024, 1024));
  EXPECT_NEAR(near.distance, std::log2(1025.0) - std::log2(1001.0), 1e-12);
  const auto small = t->lookup(matmul(100, 64, 64));
  ASSERT_EQ(small.kind, MatchKind::nearest);
  EXPECT_EQ(small.entry->workload, matmul(64, 64, 64));
  // Epilogue and dtype must match: a bias matmul only matches the bias entry.
  const auto bias = t->lookup(matmul(512, 512, 512, "float16", {"bias"}));
  ASSERT_EQ(bias.kind, MatchKind::nearest);
  EXPECT_EQ(bias.entry->schedule, tiles(32, 32));
  EXPECT_EQ(t->lookup(matmul(1024, 1024, 1024, "int8")).kind, MatchKind::none);
  EXPECT_EQ(t->lookup(matmul(1024, 1024, 1024, "float16", {"relu"})).kind, MatchKind::none);
  const Json j = t->lookup(matmul(1000, 1024, 1024)).to_json("npu-a");
  EXPECT_EQ(j["match"], "nearest");
  EXPECT_GT(j["distance"].get<double>(), 0);
}

TEST_F(ScheduleTableTest, BadChecksumCountOrFormatIsRefused) {
  const std::string good = text();
  const auto write = [&](const std::string& content) { std::ofstream(path_, std::ios::trunc) << content; };
  // One digit of the schedule changed: checksum mismatch.
  std::string edited = good;
  const auto pos = edited.find("\"tile_m\": 128");
  ASSERT_NE(pos, std::string::npos);
  edited.replace(pos, 13, "\"tile_m\": 256");
  write(edited);
  try {
    ScheduleTable::load(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt);
    EXPECT_THAT(e.what(), HasSubstr("checksum"));
  }
  Json doc = parse_json(good, "t");
  doc["entries"].erase(doc["entries"].begin());
  write(doc.dump());
  EXPECT_THROW(ScheduleTable::load(path_), Error);
  doc = parse_json(good, "t");
  doc["header"]["format_version"] = 7;
  write(doc.dump());
  try {
    ScheduleTable::load(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_THAT(e.what(), HasSubstr("format_version 7"));
  }
  write(good.substr(0, good.size() / 2));
  EXPECT_THROW(ScheduleTable::load(path_), Error);
  EXPECT_THROW(ScheduleTable::load(dir_.file("absent.json")), Error);
}

TEST_F(ScheduleTableTest, ExportOfATargetWithoutValidRecordsIsNotFound) {
  try {
    export_table(db_, TargetInfo::named("empty"), dir_.file("empty.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.file("empty.json")));
}

TEST_F(ScheduleTableTest, ConcurrentLookupsAgreeWithSequentialOnes) {
  const auto t = ScheduleTable::load(path_);
  std::vector<Workload> queries;
  for (int m = 16; m <= 4096; m *= 2) queries.push_back(matmul(m, 1024, 1024));
  std::vector<std::string> expected;
  for (const auto& q : queries) expected.push_back(t->lookup(q).to_json("x").dump());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        for (std::size_t k = 0; k < queries.size(); ++k) {
          if (t->lookup(queries[k]).to_json("x").dump() != expected[k]) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// A runtime table's time is a plausible one: -1e308 was accepted, and would always win.
TEST(ScheduleTableEntryTest, AnImpossibleTimeIsRefused) {
  const Json entry = {{"workload", {{"op", "matmul"}, {"dims", {{"M", 8}, {"N", 8}, {"K", 8}}}}},
                      {"schedule", {{"tile_m", 8}}},
                      {"time_us", 12.5}};
  EXPECT_DOUBLE_EQ(table::TableEntry::from_json(entry).time_us, 12.5);
  for (const double t : {-1e308, 0.0, 1e-300, 1e300}) {
    Json bad = entry;
    bad["time_us"] = t;
    try {
      (void)table::TableEntry::from_json(bad);
      ADD_FAILURE() << "accepted time_us " << t;
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("field 'time_us'"), std::string::npos) << e.what();
    }
  }
}

TEST(ScheduleTableNearestTest, PrunedSearchAgreesWithBruteForce) {
  // Few distinct dims, so equal first coordinates and equal distances (ties) are common.
  std::mt19937_64 rng(42);
  const auto dim = [&] { return std::int64_t{16} << (rng() % 9); };  // 729 shapes, 300 drawn
  std::vector<table::TableEntry> entries;
  std::set<std::string> keys;
  while (entries.size() < 300) {
    const Workload w = matmul(dim(), dim(), dim());
    if (keys.insert(w.key()).second) entries.push_back({w, tiles(16, 16), 1.0});
  }
  const ScheduleTable t(table::TableHeader{}, entries);
  const auto log1p2 = [](std::int64_t v) { return std::log2(static_cast<double>(v) + 1); };
  for (int i = 0; i < 500; ++i) {
    const Workload q = matmul(1 + static_cast<std::int64_t>(rng() % 700), 1 + static_cast<std::int64_t>(rng() % 700),
                              1 + static_cast<std::int64_t>(rng() % 700));
    SCOPED_TRACE(q.label());
    const table::TableEntry* want = nullptr;
    double want_d = 1e300;
    for (const auto& e : entries) {
      double sum = 0;
      for (const char* n : {"K", "M", "N"}) sum += std::pow(log1p2(e.workload.dim(n)) - log1p2(q.dim(n)), 2);
      if (sum < want_d || (sum == want_d && e.workload.key() < want->workload.key())) {
        want_d = sum;
        want = &e;
      }
    }
    const auto got = t.lookup(q);
    if (got.kind == MatchKind::exact) {
      EXPECT_EQ(want_d, 0);
      continue;
    }
    ASSERT_EQ(got.kind, MatchKind::nearest);
    EXPECT_EQ(got.entry->workload, want->workload);
    EXPECT_DOUBLE_EQ(got.distance, std::sqrt(want_d));
  }
}

TEST(ScheduleTableFixtureTest, CheckedInFixtureStillLoads) {
  // tests/db/data/table_small.json is also read by the C API test; if the format changes,
  // regenerate it (atvoss-db export-table) and bump kTableFormatVersion.
  const auto t = ScheduleTable::load(std::string(ATVOSS_SOURCE_DIR) + "/tests/db/data/table_small.json");
  EXPECT_GE(t->entries().size(), 2u);
  EXPECT_EQ(t->lookup(t->entries()[0].workload).kind, MatchKind::exact);
}

TEST(KernelTunerImportTest, CacheBecomesRecordsOfARecordedWorkloadOnANamedTarget) {
  const std::string path = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/pnpoly-RTX_3090.json.gz";
  ASSERT_TRUE(is_kernel_tuner_cache(path));
  const auto records = read_kernel_tuner_cache(path);
  ASSERT_EQ(records.size(), 4092u);
  std::size_t failed = 0;
  double best = 1e300;
  for (const auto& r : records) {
    EXPECT_EQ(r.workload.op(), "recorded");
    EXPECT_EQ(r.target.name, "NVIDIA GeForce RTX 3090");
    if (r.measurement.ok())
      best = std::min(best, r.measurement.time_us);
    else
      ++failed;
  }
  EXPECT_EQ(failed, 330u);
  EXPECT_NEAR(best, 7224.2, 0.1);  // README: best 7.2242 ms
  auto db = TuningDatabase::open(":memory:");
  const MergeReport rep = db.import_records(records);
  EXPECT_EQ(rep.added, 4092);
  const auto top = db.records().best(records[0].workload.key(), TargetInfo::named("NVIDIA GeForce RTX 3090").key, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_NEAR(top[0].measurement.time_us, 7224.2, 0.1);
  EXPECT_EQ(db.import_records(records).identical, 4092);
}

TEST(KernelTunerImportTest, NonCacheFilesAreRecognisedAndRefused) {
  TempDir dir;
  const auto path = dir.file("lines.json");
  std::ofstream(path) << "{\"format\":\"atvoss-record\"}\n{\"format\":\"atvoss-record\"}\n";
  EXPECT_FALSE(is_kernel_tuner_cache(path));
  EXPECT_THROW(read_kernel_tuner_cache(path), Error);
  EXPECT_THROW(read_kernel_tuner_cache(dir.file("absent.json.gz")), Error);
}

}  // namespace
}  // namespace atvoss::db
