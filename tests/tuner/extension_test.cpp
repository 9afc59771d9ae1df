// Extension points end to end: a strategy, a fusion rule and an op registered from this
// test (no library code edited) are named in a job spec and used by run_job; a fusion
// rule declared in the spec itself binds with its memory budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <unistd.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "core/op_registry.hpp"
#include "db/tuning_database.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/fusion_rules.hpp"
#include "lowering/knob_names.hpp"
#include "lowering/lowering.hpp"
#include "search/strategy_registry.hpp"
#include "tuner/job_context.hpp"
#include "tuner/job_runner.hpp"

namespace atvoss::tuner {
namespace {

namespace fs = std::filesystem;

const Json kMatmul = {
    {"op", "matmul"}, {"dims", {{"M", 256}, {"N", 256}, {"K", 256}}}, {"epilogue", {"bias", "batchnorm", "relu"}}};

// A prefix scan: an op outside the built-in list, lowered by the test's own template.
class ScanLowering final : public lowering::OpLowering {
 public:
  std::vector<Knob> knobs(const Workload&, const Target&) const override {
    return {{std::string(knobs::tile_n), {256, 512, 1024, 2048}}};
  }
  lowering::KernelPlan plan(const Workload& w, const Target& t, const Schedule& s) const override {
    lowering::KernelPlan p;
    p.family = OpFamily::custom;
    p.uses_cube = false;
    p.cores = t.vector_cores;
    const double n = double(w.dim("N")), tile = double(s.at("tile_n"));
    lowering::TileWork tw;
    tw.count = std::ceil(n / tile);
    tw.copies[0] = {tile * 2, tile * 2};
    tw.vector_bytes = tile * 2 * 2;  // an add and a carry per element
    tw.store_bytes = tile * 2;
    tw.out_elems = tile;
    p.tiles.push_back(tw);
    p.operand_read_bytes = n * 2;
    p.out_bytes = n * 2;
    lowering::Buffers held;
    held.vector = 2 * tile * 2;
    lowering::hold(p, lowering::compute_unit(t), held);
    return p;
  }
};

void register_scan_once() {
  if (find_op("test_prefix_scan")) return;
  OpInfo scan;
  scan.name = "test_prefix_scan";
  scan.family = OpFamily::custom;
  scan.dims = {"N"};
  register_op(scan);
  lowering::register_lowering("test_prefix_scan", std::make_shared<ScanLowering>());
}

JobRunOptions quiet() {
  JobRunOptions o;
  o.quiet = true;
  return o;
}

class ExtensionTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-ext-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    search::StrategyEntry e;
    e.name = "test-counted-random";
    e.priority = 1;
    e.make = [this](const ScheduleSpace& space, const search::TuneContext& o, const Json& config) {
      ++made_;
      last_config_ = config;
      return search::make_strategy("random", space, o);
    };
    // Its one setting, checked as a built-in's would be.
    e.check_config = [](const Json& config) {
      for (const auto& [key, value] : config.items()) {
        if (key != "k" || !value.is_number_integer()) throw_bad_input("test strategy_config: field '" + key + "'");
      }
    };
    search::register_strategy(e);
  }
  void TearDown() override {
    search::unregister_strategy("test-counted-random");
    lowering::unregister_fusion_rule("test-matmul-bn-relu");
    lowering::unregister_fusion_rule("test-declared");
    fs::remove_all(dir_);
  }

  Json spec_json(const Json& workloads, const Json& fusion_rules) const {
    return Json{{"name", "ext"},
                {"target", "ascend910"},
                {"workloads", workloads},
                {"trials", 48},
                {"strategy", "test-counted-random"},
                {"batch_size", 8},
                {"seed", 3},
                {"fusion_rules", fusion_rules},
                {"database", (dir_ / "e.db").string()},
                {"export", (dir_ / "t.json").string()},
                {"report", (dir_ / "r.html").string()}};
  }

  // The stored records of w on ascend910 with fusion_level `level`.
  std::vector<db::Record> records_at_level(const Json& w, int level) const {
    auto db = db::TuningDatabase::open((dir_ / "e.db").string());
    const Target t = backend::load_target("ascend910");
    std::vector<db::Record> out;
    for (auto& r : db.records().history(Workload::from_json(w).key(), db::TargetInfo::from_target(t).key)) {
      if (r.schedule.get_or("fusion_level", -1) == level) out.push_back(std::move(r));
    }
    return out;
  }

  int made_ = 0;
  Json last_config_;
  fs::path dir_;
};

TEST_F(ExtensionTest, RegisteredStrategyAndFusionRuleRunThroughAJobSpec) {
  // Built-in rules fuse only bias at fusion_level 1; this rule fuses the whole chain there.
  lowering::register_fusion_rule({"test-matmul-bn-relu", {"matmul", "bias", "batchnorm", "relu"}, 1, 3, 0});
  const Json spec = spec_json(Json::array({{{"workload", kMatmul}}}), Json::array({"test-matmul-bn-relu"}));
  const TunedModel out = run_job(JobSpec::from_json(spec), quiet());
  EXPECT_EQ(made_, 1);  // the registered strategy tuned the task
  EXPECT_EQ(out.tasks_tuned(), 1);
  const auto level1 = records_at_level(kMatmul, 1);
  int ok = 0;
  for (const auto& r : level1) {
    if (!r.measurement.ok()) continue;
    ++ok;
    EXPECT_EQ(r.measurement.profile.kernels, 1) << r.schedule.to_json().dump();
  }
  EXPECT_GT(ok, 0) << "no fusion_level 1 schedule was measured";
}

// A job spec's strategy_config reaches the strategy, and one it refuses stops the job before
// the database is opened.
TEST_F(ExtensionTest, AJobSpecsStrategyConfigReachesTheStrategyOrStopsTheJob) {
  Json spec = spec_json(Json::array({{{"workload", kMatmul}}}), Json::array());
  spec["strategy_config"] = {{"k", 3}};
  run_job(JobSpec::from_json(spec), quiet());
  EXPECT_EQ(made_, 1);
  EXPECT_EQ(last_config_, Json({{"k", 3}}));
  fs::remove(dir_ / "e.db");
  spec["strategy_config"] = {{"z", 1}};
  try {
    run_job(JobSpec::from_json(spec), quiet());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("field 'z'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(made_, 1);
  EXPECT_FALSE(fs::exists(dir_ / "e.db"));
  spec["strategy_config"] = Json::array({1});
  EXPECT_THROW(JobSpec::from_json(spec), Error);
}

TEST_F(ExtensionTest, FusionRuleDeclaredInTheSpecBindsItsMemoryBudget) {
  // One byte of budget: every schedule this rule fuses at fusion_level 1 is invalid, while
  // at fusion_level 2 the built-in any-epilogue rule fuses the same chain without a budget.
  const Json rule = {{"name", "test-declared"},
                     {"pattern", {"matmul", "bias", "batchnorm|relu+"}},
                     {"max_fusion_depth", 3},
                     {"memory_budget", 1}};
  const TunedModel out =
      run_job(JobSpec::from_json(spec_json(Json::array({{{"workload", kMatmul}}}), Json::array({rule}))), quiet());
  EXPECT_EQ(out.tasks_tuned(), 1);
  // Strategies propose valid schedules only, so none at fusion_level 1 was measured.
  EXPECT_TRUE(records_at_level(kMatmul, 1).empty());
  const auto level2 = records_at_level(kMatmul, 2);
  ASSERT_FALSE(level2.empty());
  // The rule is the job's (job_context.hpp): checked here under the rules it ran with.
  const JobScope in_job(out.context);
  Schedule s = level2.front().schedule;
  const ScheduleSpace space = backend::space_for(Workload::from_json(kMatmul), backend::load_target("ascend910"));
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
  s.set("fusion_level", 1);
  const Verdict v = space.check(s);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("memory budget of fusion rule 'test-declared'"), std::string::npos) << v.reason;
}

TEST_F(ExtensionTest, AnOpRegisteredFromTheTestIsTunedByAJob) {
  register_scan_once();
  const Json scan = {{"op", "test_prefix_scan"}, {"dims", {{"N", 1 << 20}}}};
  const TunedModel out =
      run_job(JobSpec::from_json(spec_json(Json::array({{{"workload", scan}}}), Json::array())), quiet());
  EXPECT_EQ(out.tasks_tuned(), 1);
  EXPECT_EQ(out.trials, 4);  // the space has four schedules, all measured
  auto db = db::TuningDatabase::open((dir_ / "e.db").string());
  const auto history = db.records().history(Workload::from_json(scan).key());
  ASSERT_EQ(history.size(), 4u);
  for (const auto& r : history) {
    EXPECT_TRUE(r.measurement.ok()) << r.measurement.message;
    // The test's own plan lowered each schedule: its footprint is two tiles of fp16.
    EXPECT_DOUBLE_EQ(r.measurement.profile.peak_workspace_bytes, 4.0 * double(r.schedule.at("tile_n")));
  }
}

TEST_F(ExtensionTest, BadFusionRuleDeclarationsNameTheField) {
  struct Case {
    Json rule;
    const char* mentions;
  };
  const Case cases[] = {
      {Json{{"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 1}}, "missing field 'name'"},
      {Json{{"name", "x"}, {"pattern", {"matmul"}}, {"max_fusion_depth", 1}}, "field 'pattern'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", 5}}, {"max_fusion_depth", 1}}, "field 'pattern[1]'"},
      {Json{{"name", "x"}, {"pattern", {"matmul+", "relu"}}, {"max_fusion_depth", 1}}, "field 'pattern[0]'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu||bias"}}, {"max_fusion_depth", 1}}, "field 'pattern[1]'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu"}}}, "missing field 'max_fusion_depth'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 0}}, "field 'max_fusion_depth'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 1}, {"memory_budget", -4}},
       "field 'memory_budget'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 1}, {"fusion_level", 4}},
       "field 'fusion_level'"},
      {Json{{"name", "x"}, {"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 1}, {"budget", 4}},
       "unknown field 'budget'"},
      {Json{{"name", "elementwise"}, {"pattern", {"matmul", "relu"}}, {"max_fusion_depth", 1}}, "built-in"},
      {Json("test-never-registered"), "no fusion rule named 'test-never-registered'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule.dump());
    try {
      JobSpec::from_json(spec_json(Json::array({{{"workload", kMatmul}}}), Json::array({c.rule})));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("fusion_rules[0]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.mentions), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace atvoss::tuner
