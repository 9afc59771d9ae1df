// Kernel Tuner cache export: a database's records written as a cache, read back by the
// importer (the same schedules, times and statuses), laid out as Kernel Tuner's simulation
// mode needs it (core/kernel_tuner_format.hpp), and refused with the field named.
#include "db/kernel_tuner_cache.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "db/tuning_database.hpp"
#include "db_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Schedule key -> measurement, for comparing what two record lists say.
std::map<std::string, Measurement> by_schedule(const std::vector<Record>& records) {
  std::map<std::string, Measurement> out;
  for (const auto& r : records) out[r.schedule.key()] = r.measurement;
  return out;
}

class KernelTunerExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Workload w = matmul(1024, 1024, 1024);
    db_.records().insert(std::vector<Record>{
        record(w, npu_, tiles(128, 128), ok_us(45, {44, 45, 47})), record(w, npu_, tiles(64, 64), ok_us(80)),
        record(w, npu_, tiles(32, 256), Measurement::failed(Status::compile_error, "too big")),
        record(w, npu_, tiles(16, 16), Measurement::failed(Status::invalid, "breaks a rule")),
        record(w, npu_, tiles(8, 8), Measurement::failed(Status::timeout, "slow")),
        record(matmul(64, 64, 64), npu_, tiles(16, 16), ok_us(2)),  // another workload
    });
    history_ = db_.records().history(w.key(), npu_.key);
    path_ = dir_.file("export.json");
  }

  TempDir dir_;
  TuningDatabase db_ = TuningDatabase::open(":memory:");
  const TargetInfo npu_ = TargetInfo::named("npu-a");
  std::vector<Record> history_;
  std::string path_;
};

TEST_F(KernelTunerExportTest, ImportingTheExportGivesTheSameSchedulesTimesAndStatuses) {
  const auto report = write_kernel_tuner_cache(history_, path_);
  EXPECT_EQ(report.entries, 4);  // 128x128, 64x64, 32x256 (compile error), 8x8 (timeout)
  EXPECT_EQ(report.failed, 2);
  EXPECT_EQ(report.skipped, 1);  // 16x16: invalid only, absent to Kernel Tuner
  EXPECT_EQ(report.kernel_name, "matmul");
  EXPECT_EQ(report.device_name, "npu-a");
  ASSERT_TRUE(is_kernel_tuner_cache(path_));
  const auto back = by_schedule(read_kernel_tuner_cache(path_));
  ASSERT_EQ(back.size(), 4u);
  const Measurement& best = back.at(tiles(128, 128).key());
  ASSERT_TRUE(best.ok());
  EXPECT_NEAR(best.time_us, 45, 1e-9);
  ASSERT_EQ(best.repeats.size(), 3u);
  EXPECT_NEAR(best.repeats[2], 47, 1e-9);
  EXPECT_NEAR(back.at(tiles(64, 64).key()).time_us, 80, 1e-9);
  EXPECT_EQ(back.at(tiles(32, 256).key()).status, Status::compile_error);
  EXPECT_EQ(back.at(tiles(8, 8).key()).status, Status::runtime_error);  // no timeout tag
  EXPECT_EQ(back.count(tiles(16, 16).key()), 0u);
  // The importer maps names to what the file says: the same target, by name.
  EXPECT_EQ(read_kernel_tuner_cache(path_).front().target.name, "npu-a");
}

TEST_F(KernelTunerExportTest, FileHasWhatKernelTunersSimulationModeReads) {
  write_kernel_tuner_cache(history_, path_, "matmul_kernel");
  const std::string text = read_text(path_);
  // Kernel Tuner strips the text and takes it as finished only if it ends in "}\n}".
  std::string stripped = text;
  while (!stripped.empty() && std::isspace(static_cast<unsigned char>(stripped.back()))) stripped.pop_back();
  ASSERT_GE(stripped.size(), 3u);
  EXPECT_EQ(stripped.substr(stripped.size() - 3), "}\n}");
  const auto doc = nlohmann::ordered_json::parse(text);
  std::vector<std::string> fields;
  for (const auto& [k, v] : doc.items()) fields.push_back(k);
  EXPECT_EQ(fields, (std::vector<std::string>{"device_name", "kernel_name", "tune_params_keys", "tune_params",
                                              "objective", "cache"}));  // cache last
  EXPECT_EQ(doc["device_name"], "npu-a");
  EXPECT_EQ(doc["kernel_name"], "matmul_kernel");
  EXPECT_EQ(doc["objective"], "time");
  const auto keys = doc["tune_params_keys"].get<std::vector<std::string>>();
  EXPECT_EQ(keys, (std::vector<std::string>{"async_copy_depth", "tile_k", "tile_m", "tile_n"}));
  std::vector<std::string> param_names;
  for (const auto& [k, v] : doc["tune_params"].items()) param_names.push_back(k);
  EXPECT_EQ(param_names, keys);
  EXPECT_EQ(doc["tune_params"]["tile_m"], (std::vector<int>{8, 32, 64, 128}));
  ASSERT_EQ(doc["cache"].size(), 4u);
  for (const auto& [key, entry] : doc["cache"].items()) {
    std::string joined;  // ",".join(str(v) for v in config), as simulation mode looks it up
    for (const auto& k : keys) {
      ASSERT_TRUE(entry.contains(k)) << key;
      const auto values = doc["tune_params"][k];
      EXPECT_NE(std::find(values.begin(), values.end(), entry[k]), values.end()) << key << " " << k;
      joined += (joined.empty() ? "" : ",") + std::to_string(entry[k].get<std::int64_t>());
    }
    EXPECT_EQ(key, joined);
    for (const char* f : {"compile_time", "verification_time", "benchmark_time"}) {
      EXPECT_TRUE(entry.contains(f) && entry[f].is_number()) << key << " " << f;
    }
    EXPECT_TRUE(entry["time"].is_number() || entry["time"] == "CompilationFailedConfig" ||
                entry["time"] == "RuntimeFailedConfig")
        << key;
  }
  EXPECT_DOUBLE_EQ(doc["cache"]["2,64,128,128"]["time"].get<double>(), 0.045);  // ms
  EXPECT_DOUBLE_EQ(doc["cache"]["2,64,128,128"]["benchmark_time"].get<double>(), (44 + 45 + 47) / 1000.0);
}

TEST_F(KernelTunerExportTest, OfSeveralRecordsOfASchedulesTheFastestOkOneIsWritten) {
  // A database keeps one record a schedule (db/duplicate_rule.hpp), but a record list from
  // elsewhere (several databases' histories) may hold more.
  const Workload w = matmul(1024, 1024, 1024);
  const std::vector<Record> records{
      record(w, npu_, tiles(128, 128), ok_us(50)),
      record(w, npu_, tiles(128, 128), ok_us(45)),
      record(w, npu_, tiles(128, 128), ok_us(47)),
      record(w, npu_, tiles(64, 64), ok_us(80)),
      record(w, npu_, tiles(64, 64), Measurement::failed(Status::runtime_error, "later flake")),
      record(w, npu_, tiles(32, 32), Measurement::failed(Status::runtime_error, "first")),
      record(w, npu_, tiles(32, 32), Measurement::failed(Status::compile_error, "newest")),
  };
  EXPECT_EQ(write_kernel_tuner_cache(records, path_).entries, 3);
  const auto back = by_schedule(read_kernel_tuner_cache(path_));
  EXPECT_NEAR(back.at(tiles(128, 128).key()).time_us, 45, 1e-9);
  EXPECT_TRUE(back.at(tiles(64, 64).key()).ok());
  EXPECT_EQ(back.at(tiles(32, 32).key()).status, Status::compile_error);
}

TEST(KernelTunerRoundTripTest, ARecordedSpaceSurvivesImportExportImport) {
  const std::string source = std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/pnpoly-RTX_3090.json.gz";
  const auto imported = read_kernel_tuner_cache(source);
  TempDir dir;
  const std::string path = dir.file("pnpoly.json");
  const auto report = write_kernel_tuner_cache(imported, path);
  EXPECT_EQ(report.entries, 4092);
  EXPECT_EQ(report.failed, 330);
  EXPECT_EQ(report.kernel_name, imported.front().job);  // the kernel named in the source cache
  EXPECT_FALSE(report.kernel_name.empty());
  EXPECT_EQ(report.device_name, "NVIDIA GeForce RTX 3090");
  const auto a = by_schedule(imported);
  const auto b = by_schedule(read_kernel_tuner_cache(path));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, m] : a) {
    const Measurement& n = b.at(key);
    ASSERT_EQ(n.status, m.status) << key;
    EXPECT_NEAR(n.time_us, m.time_us, 1e-9 * m.time_us) << key;
    EXPECT_EQ(n.repeats.size(), m.repeats.size()) << key;
  }
}

TEST_F(KernelTunerExportTest, BadInputNamesTheField) {
  auto expect_bad = [](auto&& call, const std::string& field) {
    try {
      call();
      ADD_FAILURE() << "no error for " << field;
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_bad([&] { write_kernel_tuner_cache(history_, dir_.file("x.json.gz")); }, "'path'");
  expect_bad([&] { write_kernel_tuner_cache(history_, dir_.file("x.csv")); }, "'path'");
  expect_bad([&] { write_kernel_tuner_cache({}, path_); }, "no records");
  auto mixed = history_;
  mixed.push_back(record(matmul(64, 64, 64), npu_, tiles(16, 16), ok_us(2)));
  expect_bad([&] { write_kernel_tuner_cache(mixed, path_); }, "'workload'");
  auto other_target = history_;
  other_target.push_back(record(matmul(1024, 1024, 1024), TargetInfo::named("npu-b"), tiles(16, 16), ok_us(2)));
  expect_bad([&] { write_kernel_tuner_cache(other_target, path_); }, "'target'");
  auto knobs = history_;
  knobs.push_back(record(matmul(1024, 1024, 1024), npu_, Schedule({{"tile_m", 1}}), ok_us(2)));
  expect_bad([&] { write_kernel_tuner_cache(knobs, path_); }, "'schedule'");
  const std::vector<Record> invalid_only{
      record(matmul(1024, 1024, 1024), npu_, tiles(16, 16), Measurement::failed(Status::invalid, "x"))};
  expect_bad([&] { write_kernel_tuner_cache(invalid_only, path_); }, "no record to write");
  EXPECT_FALSE(std::filesystem::exists(path_));  // nothing written on refusal
}

}  // namespace
}  // namespace atvoss::db
