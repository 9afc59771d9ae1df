// atvoss-tune on the host backend as a user runs it: real compiles, the real kernel runner,
// results stored under this machine's fingerprinted target; bad input exits 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdio>
#include <set>

#include "cli_harness.hpp"
#include "core/json.hpp"

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

class TuneHostCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Calibration and compiled kernels stay in the build tree, shared across runs.
    ::setenv("XDG_CACHE_HOME", ATVOSS_BIN_DIR "/../test-cache", 1);
  }
};

const std::string kWorkload =
    R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":40,"K":36},"epilogue":["bias","relu"]})";

TEST_F(TuneHostCli, TunesOneWorkloadAndStoresItUnderTheHostTarget) {
  const CliResult r = run_tool("atvoss-tune", "--target host --workload " + quote(kWorkload) +
                                                  " --trials 6 --strategy random --seed 1 --db " + file("h.db") +
                                                  " --export " + file("t.json") + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const Json out = Json::parse(r.out);
  EXPECT_THAT(out.dump(), HasSubstr("\"host-"));
  EXPECT_THAT(slurp(file("t.json")), HasSubstr("host-"));
  EXPECT_THAT(slurp(file("t.json")), HasSubstr("micro_m"));
  // A lookup with --target host finds them: the stored target is this machine's fingerprint.
  const CliResult db =
      run_tool("atvoss-db", "--db " + file("h.db") + " --json best --target host --workload " + quote(kWorkload));
  ASSERT_EQ(db.code, 0) << db.err;
  EXPECT_THAT(db.out, HasSubstr("micro_m"));
}

TEST_F(TuneHostCli, RunsAJobSpecWithTargetHost) {
  const Json spec = {
      {"name", "tiny-host"},
      {"target", "host"},
      {"workloads",
       Json::array(
           {Json{{"workload", Json::parse(kWorkload)}},
            Json{
                {"workload",
                 Json::parse(
                     R"({"op":"batch_matmul","dtype":"float32","dims":{"B":2,"M":8,"N":16,"K":8},"epilogue":["add"]})")}}})},
      {"trials", 12},
      {"batch_size", 4},
      {"strategy", "random"},
      {"seed", 3},
      {"database", file("job.db")},
      {"export", file("job-table.json")},
      {"report", file("job.html")}};
  const CliResult r = run_tool("atvoss-tune", quote(file("job.json", spec.dump())) + " --quiet");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string table = slurp(file("job-table.json"));
  EXPECT_THAT(table, HasSubstr("batch_matmul")) << table;  // both tasks got trials and a best
  // Each task's fastest schedules were measured again before the export (real noise,
  // TuneOptions::confirm_top): their rows hold both measurements' repeats.
  const CliResult q = run_tool("atvoss-db", "--db " + file("job.db") + " --json query");
  ASSERT_EQ(q.code, 0) << q.err;
  int confirmed = 0;
  for (const Json& rec : Json::parse(q.out)) confirmed += rec["measurement"]["repeats"].size() > 3 ? 1 : 0;
  EXPECT_GE(confirmed, 4) << q.out;
  EXPECT_THAT(table, HasSubstr("\"relu\"")) << table;
  // The report shows host results in GFLOP/s against the peak this machine's target carries.
  const std::string html = slurp(file("job.html"));
  EXPECT_THAT(html, HasSubstr("% of peak)")) << html;
  EXPECT_THAT(html, HasSubstr("measured single-core peak")) << html;
}

// The row ops tune end to end too, with the default (model-guided) strategy for one of them.
TEST_F(TuneHostCli, TunesASoftmaxAndALayernorm) {
  for (const auto& [w, strategy] :
       {std::pair<std::string, std::string>{R"({"op":"softmax","dtype":"float32","dims":{"M":24,"N":200}})", "random"},
        {R"({"op":"layernorm","dtype":"float32","dims":{"M":16,"N":96}})", "model-guided"}}) {
    const CliResult r = run_tool("atvoss-tune", "--target host --workload " + quote(w) + " --trials 6 --strategy " +
                                                    strategy + " --seed 2 --db " + file("rows.db") + " --json --quiet");
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const Json out = Json::parse(r.out);
    EXPECT_THAT(out.dump(), HasSubstr("tile_order")) << out.dump();  // a best schedule of the row-op space
    EXPECT_THAT(out.dump(), HasSubstr("threads")) << out.dump();
  }
}

// A zoo model is float16; the host runs float32, int8 and bf16. The model is tuned in float32
// (said in a warning), not left as untuned fallbacks; seen failing before the model's own
// dtype was fitted (no task had a valid schedule, so the export found no record). The report
// measures each fp32 matmul's int8 and bf16 error and times next to the NPU's estimate.
TEST_F(TuneHostCli, AZooModelInFloat16RunsInFloat32OnTheHost) {
  const Json spec = {{"name", "mlp-host"},
                     {"target", "host"},
                     {"model", "mlp"},
                     {"trials", 4},
                     {"strategy", "random"},
                     {"seed", 1},
                     {"database", file("mlp.db")},
                     {"export", file("mlp-table.json")},
                     {"report", file("mlp-report.html")}};
  const CliResult r = run_tool("atvoss-tune", quote(file("mlp.json", spec.dump())) + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_THAT(r.err, HasSubstr("float16 is not supported")) << r.err;
  const Json table = Json::parse(slurp(file("mlp-table.json")));
  int float32_matmuls = 0;
  for (const Json& e : table["entries"]) {
    const Json& w = e["workload"];
    if (w["op"] == "matmul" && w["dtype"] == "float32") ++float32_matmuls;
  }
  EXPECT_EQ(float32_matmuls, 3) << table.dump();  // fc1, fc2, fc3
  const Json measured = atvoss::parse_json(r.out, "stdout")["measured_precision"];
  if (slurp("/proc/cpuinfo").find("avx512_vnni") == std::string::npos) {
    std::printf("[ SKIPPED  ] measured precision: %s\n", measured["reason"].get<std::string>().c_str());
    return;
  }
  ASSERT_EQ(measured["layers"].size(), 3u) << measured.dump();
  for (const Json& l : measured["layers"]) {
    EXPECT_GT(l["int8_error"].get<double>(), 1e-4) << l.dump();
    EXPECT_LT(l["int8_error"].get<double>(), 0.2) << l.dump();
    EXPECT_GT(l["estimated_int8_error"].get<double>(), 0) << l.dump();
    EXPECT_GT(l["fp32_us"].get<double>(), 0) << l.dump();
    EXPECT_GT(l["int8_us"].get<double>(), 0) << l.dump();
    if (!l["bf16_error"].is_null()) EXPECT_LT(l["bf16_error"].get<double>(), l["int8_error"].get<double>());
  }
  EXPECT_THAT(slurp(file("mlp-report.html")), HasSubstr("int8 and bf16, measured on this CPU"));
}

// A mixed-precision plan (runtime/sensitivity.hpp's precision_config) runs as a job on the host:
// the bf16 layer before an int8 one ends in "quantize", the int8 layers in "requantize", and
// every layer is tuned, none left as a fallback.
TEST_F(TuneHostCli, AMixedPrecisionPlanOfTheMlpIsTunedLayerByLayer) {
  if (!slurp("/proc/cpuinfo").empty() && (slurp("/proc/cpuinfo").find("avx512_vnni") == std::string::npos ||
                                          slurp("/proc/cpuinfo").find("avx512_bf16") == std::string::npos)) {
    GTEST_SKIP() << "this CPU lacks avx512_vnni or avx512_bf16";
  }
  const Json spec = {{"name", "mlp-mixed"},
                     {"target", "host"},
                     {"model", "mlp"},
                     {"precision", Json::parse(R"({"fc1":{"weight":16,"act":16,"type":"bfloat16"},
                                                    "fc2":{"weight":8,"act":8},"fc3":{"weight":8,"act":8}})")},
                     {"trials", 4},
                     {"strategy", "random"},
                     {"seed", 1},
                     {"database", file("mixed.db")},
                     {"export", file("mixed-table.json")}};
  const CliResult r = run_tool("atvoss-tune", quote(file("mixed.json", spec.dump())) + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const Json table = Json::parse(slurp(file("mixed-table.json")));
  std::set<std::string> tuned;
  for (const Json& e : table["entries"]) tuned.insert(e["workload"].dump());
  const auto has = [&](const std::string& dtype, const std::string& last_op) {
    for (const auto& w : tuned) {
      if (w.find("\"dtype\":\"" + dtype + "\"") != std::string::npos &&
          w.find("\"" + last_op + "\"]") != std::string::npos)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(has("bfloat16", "quantize")) << table.dump();
  EXPECT_TRUE(has("int8", "requantize")) << table.dump();
  EXPECT_EQ(tuned.size(), 3u) << table.dump();
}

// int8 and bf16 tune end to end with the default (model-guided) strategy, where the CPU has the
// instructions; elsewhere the tune is bad input naming the flag (host_space.hpp).
TEST_F(TuneHostCli, TunesInt8AndBf16MatmulsWhereTheCpuHasTheInstructions) {
  for (const auto& [dtype, flag] :
       {std::pair<std::string, std::string>{"int8", "avx512_vnni"}, {"bfloat16", "avx512_bf16"}}) {
    const std::string w =
        R"({"op":"matmul","dtype":")" + dtype + R"(","dims":{"M":40,"N":96,"K":200},"epilogue":["bias","gelu"]})";
    const CliResult r = run_tool("atvoss-tune", "--target host --workload " + quote(w) + " --trials 8 --seed 2 --db " +
                                                    file(dtype + ".db") + " --json --quiet");
    if (r.code == 2 && r.err.find(flag) != std::string::npos) {
      std::printf("[ SKIPPED  ] %s: this CPU has no %s: %s\n", dtype.c_str(), flag.c_str(), r.err.c_str());
      continue;
    }
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const Json out = Json::parse(r.out);
    EXPECT_GE(out["trials"].get<int>(), 8) << out.dump();
    EXPECT_TRUE(out["best_schedule"].is_object()) << out.dump();
    const CliResult q = run_tool("atvoss-db", "--db " + file(dtype + ".db") + " --json query");
    ASSERT_EQ(q.code, 0) << q.err;
    int ok = 0;
    for (const Json& rec : Json::parse(q.out)) ok += rec["measurement"]["status"] == "ok" ? 1 : 0;
    EXPECT_GE(ok, 8) << "every trial computes the reference: " << q.out.substr(0, 2000);
  }
}

TEST_F(TuneHostCli, AWorkloadTheHostCannotGenerateIsBadInput) {
  const CliResult r = run_tool("atvoss-tune", "--target host --trials 2 --db " + file("x.db") + " --workload " +
                                                  quote(R"({"op":"matmul","dims":{"M":8,"N":8,"K":8}})"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("dtype"));
}

}  // namespace
}  // namespace atvoss::cli_test
