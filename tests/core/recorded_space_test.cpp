#include "core/recorded_space.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "core/error.hpp"
#include "core/result_check.hpp"

namespace atvoss {
namespace {

namespace fs = std::filesystem;

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = (fs::path(testing::TempDir()) / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string write_gz(const std::string& name, const std::string& text) {
  const auto path = (fs::path(testing::TempDir()) / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

Schedule sched(std::map<std::string, std::int64_t> v) { return Schedule(std::move(v)); }

constexpr const char* kCsv =
    "tile_m,tile_n,time_us,status\n"
    "64,128,12.5,ok\n"
    "\n"
    "64,256,,compile_error\n"
    "32,128,9.0,ok\r\n";

TEST(RecordedSpaceTest, CsvKnobsComeFromColumns) {
  auto rs = RecordedSpace::parse(kCsv, "t.csv");
  const auto& knobs = rs->space().knobs();
  ASSERT_EQ(knobs.size(), 2u);
  EXPECT_EQ(knobs[0].name, "tile_m");
  EXPECT_EQ(knobs[0].values, (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(knobs[1].values, (std::vector<std::int64_t>{128, 256}));
  EXPECT_EQ(rs->recorded_count(), 3u);
  EXPECT_EQ(rs->failed_count(), 1u);
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 9.0);
}

TEST(RecordedSpaceTest, MeasureReturnsRecordedOutcome) {
  auto rs = RecordedSpace::parse(kCsv, "t.csv");
  const auto ok = rs->measure(sched({{"tile_m", 64}, {"tile_n", 128}}));
  EXPECT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok.time_us, 12.5);
  const auto failed = rs->measure(sched({{"tile_m", 64}, {"tile_n", 256}}));
  EXPECT_EQ(failed.status, Status::compile_error);
  const auto absent = rs->measure(sched({{"tile_m", 32}, {"tile_n", 256}}));
  EXPECT_EQ(absent.status, Status::invalid);
  const auto foreign = rs->measure(sched({{"tile_m", 32}}));
  EXPECT_EQ(foreign.status, Status::invalid);
  EXPECT_THAT(foreign.message, testing::HasSubstr("tile_n"));
}

TEST(RecordedSpaceTest, CheckRejectsAbsentButAcceptsFailed) {
  auto rs = RecordedSpace::parse(kCsv, "t.csv");
  EXPECT_TRUE(rs->space().check(sched({{"tile_m", 64}, {"tile_n", 256}})).ok);
  auto v = rs->space().check(sched({{"tile_m", 32}, {"tile_n", 256}}));
  EXPECT_FALSE(v.ok);
  EXPECT_THAT(v.reason, testing::HasSubstr("not in the recorded table"));
}

TEST(RecordedSpaceTest, SpaceOutlivesRecordedSpace) {
  ScheduleSpace copy;
  {
    auto rs = RecordedSpace::parse(kCsv, "t.csv");
    copy = rs->space();
  }
  EXPECT_TRUE(copy.check(sched({{"tile_m", 64}, {"tile_n", 128}})).ok);
}

TEST(RecordedSpaceTest, MalformedCsvNamesLineAndField) {
  const struct {
    const char* name;
    const char* text;
    const char* error;
  } kCases[] = {
      {"empty", "", "empty CSV"},
      {"bad_header", "a,b,time\n1,2,3\n", "header must be"},
      {"columns", "a,time_us,status\n1,2\n", "line 2: expected 3 columns"},
      {"non_int", "a,time_us,status\n1.5,2,ok\n", "line 2: column 'a' must be an integer"},
      {"bad_time", "a,time_us,status\n1,-2,ok\n", "line 2: column 'time_us'"},
      {"bad_status", "a,time_us,status\n1,2,great\n", "'status'"},
      {"infra", "a,time_us,status\n1,2,worker_lost\n", "infrastructure error"},
      {"duplicate", "a,time_us,status\n1,2,ok\n1,3,ok\n", "line 3: duplicate"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    try {
      RecordedSpace::parse(c.text, "t.csv");
      ADD_FAILURE() << "expected bad_input";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(c.error));
    }
  }
}

constexpr const char* kKernelTuner = R"({
  "device_name": "test", "kernel_name": "k", "problem_size": 10,
  "tune_params_keys": ["block", "method", "scale"],
  "tune_params": {"block": [64, 32], "method": ["fast", "slow"], "scale": [0.5, 1.5]},
  "cache": {
    "32,fast,0.5": {"block": 32, "method": "fast", "scale": 0.5, "time": 2.0, "times": [1.9, 2.1]},
    "64,slow,1.5": {"block": 64, "method": "slow", "scale": 1.5, "time": 0.5},
    "32,fast,1.5": {"block": 32, "method": "fast", "scale": 1.5, "time": 4.0, "times": [3.1, 3.3]},
    "64,fast,0.5": {"block": 64, "method": "fast", "scale": 0.5, "time": "CompilationFailedConfig"},
    "32,slow,0.5": {"block": 32, "method": "slow", "scale": 0.5, "time": "RuntimeFailedConfig"}
  }
})";

TEST(RecordedSpaceTest, KernelTunerMapsValuesAndConvertsMs) {
  auto rs = RecordedSpace::parse(kKernelTuner, "k.json");
  const auto& knobs = rs->space().knobs();
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[0].name, "block");
  EXPECT_EQ(knobs[0].values, (std::vector<std::int64_t>{32, 64}));  // integers as is, sorted
  EXPECT_EQ(knobs[1].values, (std::vector<std::int64_t>{0, 1}));    // strings: tune_params index
  EXPECT_EQ(knobs[2].values, (std::vector<std::int64_t>{0, 1}));    // floats: tune_params index
  const auto m = rs->measure(sched({{"block", 32}, {"method", 0}, {"scale", 0}}));
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m.time_us, 2000.0);
  EXPECT_EQ(m.repeats, (std::vector<double>{1900.0, 2100.0}));
  // "time" taken apart from "times" (host-side, as in pnpoly): the times are not its repeats.
  const auto host = rs->measure(sched({{"block", 32}, {"method", 0}, {"scale", 1}}));
  EXPECT_DOUBLE_EQ(host.time_us, 4000.0);
  EXPECT_EQ(host.repeats, (std::vector<double>{4000.0}));
  EXPECT_NO_THROW(check_result(host));
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 500.0);
  EXPECT_EQ(rs->measure(sched({{"block", 64}, {"method", 0}, {"scale", 0}})).status, Status::compile_error);
  EXPECT_EQ(rs->measure(sched({{"block", 32}, {"method", 1}, {"scale", 0}})).status, Status::runtime_error);
  EXPECT_EQ(rs->failed_count(), 2u);
}

// A cache's restrictions (Kernel Tuner's, as strings) are parsed by core/constraint.hpp: an
// entry that breaks one is not a configuration of the space.
TEST(RecordedSpaceTest, KernelTunerRestrictionsLeaveOutTheEntriesThatBreakThem) {
  std::string text = kKernelTuner;
  text.replace(text.find("\"cache\""), 0,
               R"("restrictions": ["block * scale <= 48", "method != 'slow' or block > 32"], )");
  auto rs = RecordedSpace::parse(text, "k.json");
  EXPECT_TRUE(rs->space().check(sched({{"block", 32}, {"method", 0}, {"scale", 0}})).ok);
  EXPECT_TRUE(rs->space().check(sched({{"block", 32}, {"method", 0}, {"scale", 1}})).ok);   // 32 * 1.5 = 48
  EXPECT_FALSE(rs->space().check(sched({{"block", 64}, {"method", 1}, {"scale", 1}})).ok);  // 64 * 1.5 = 96
  EXPECT_FALSE(rs->space().check(sched({{"block", 32}, {"method", 1}, {"scale", 0}})).ok);  // slow at 32
  EXPECT_EQ(rs->measure(sched({{"block", 64}, {"method", 1}, {"scale", 1}})).status, Status::invalid);
  EXPECT_DOUBLE_EQ(*rs->optimum_us(), 2000.0);  // the 0.5 ms entry breaks the first restriction
  for (const char* bad : {R"x("restrictions": ["__import__('os')"], )x", R"x("restrictions": ["blok > 1"], )x",
                          R"x("restrictions": "block > 1", )x"}) {
    std::string broken = kKernelTuner;
    broken.replace(broken.find("\"cache\""), 0, bad);
    try {
      RecordedSpace::parse(broken, "k.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("restrictions"), std::string::npos) << e.what();
    }
  }
}

TEST(RecordedSpaceTest, MalformedKernelTunerNamesKey) {
  const struct {
    const char* name;
    const char* text;
    const char* error;
  } kCases[] = {
      {"no_keys", R"({"tune_params": {}, "cache": {}})", "tune_params_keys"},
      {"no_domain", R"({"tune_params_keys": ["a"], "tune_params": {}, "cache": {}})", "tune_params['a']"},
      {"off_domain", R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {"2": {"a": 2, "time": 1}}})",
       "cache['2']: parameter 'a' = 2"},
      {"bad_time", R"({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {"1": {"a": 1, "time": null}}})",
       "cache['1']: field 'time'"},
      {"not_json", "{", "invalid JSON"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    try {
      RecordedSpace::parse(c.text, "k.json");
      ADD_FAILURE() << "expected bad_input";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(c.error));
    }
  }
}

TEST(RecordedSpaceTest, LoadReadsFilesAndCachesByPath) {
  const auto csv = write_file("recorded_space_test.csv", kCsv);
  const auto gz = write_gz("recorded_space_test.json.gz", kKernelTuner);
  auto a = RecordedSpace::load(csv);
  EXPECT_EQ(a.get(), RecordedSpace::load(csv).get());
  EXPECT_EQ(a->recorded_count(), 3u);
  EXPECT_EQ(RecordedSpace::load(gz)->recorded_count(), 5u);
}

TEST(RecordedSpaceTest, MissingFileIsIoError) {
  try {
    RecordedSpace::load("/nonexistent/dir/x.csv");
    ADD_FAILURE() << "expected io error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_THAT(e.what(), testing::HasSubstr("/nonexistent/dir/x.csv"));
  }
}

// The four real Kernel Tuner spaces (data/recorded-spaces/README.md table).
TEST(RecordedSpaceTest, RealKernelTunerSpacesMatchTheirReadme) {
  const struct {
    const char* file;
    std::size_t knobs, configs, failed;
    double best_ms;
  } kSpaces[] = {
      {"convolution-RTX_3090.json.gz", 8, 6768, 1548, 0.5266},
      {"pnpoly-RTX_3090.json.gz", 4, 4092, 330, 7.2242},
      {"gemm-RTX_3090.json.gz", 15, 17956, 0, 5.6578},
      {"dedispersion_milo-A4000.json.gz", 8, 11130, 0, 147.698},
  };
  for (const auto& s : kSpaces) {
    SCOPED_TRACE(s.file);
    auto rs = RecordedSpace::load(std::string(ATVOSS_DATA_DIR) + "/recorded-spaces/" + s.file);
    EXPECT_EQ(rs->space().dimensions(), s.knobs);
    EXPECT_EQ(rs->recorded_count(), s.configs);
    EXPECT_EQ(rs->failed_count(), s.failed);
    ASSERT_TRUE(rs->optimum_us());
    EXPECT_NEAR(*rs->optimum_us(), s.best_ms * 1000.0, s.best_ms * 1000.0 * 1e-3);
    const auto configs = rs->configurations();
    ASSERT_FALSE(configs.empty());
    EXPECT_TRUE(rs->space().check(configs.front()).ok);
  }
}

}  // namespace
}  // namespace atvoss
