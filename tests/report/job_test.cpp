#include "report/job_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include <unistd.h>

#include "../tuner/former_host_records.hpp"
#include "core/error.hpp"
#include "costmodel/cost_model.hpp"
#include "db/table/schedule_table.hpp"
#include "db/tuning_database.hpp"
#include "frontend/model_zoo.hpp"
#include "lowering/fusion_rule_scope.hpp"
#include "report/model_analysis.hpp"
#include "simulator/presets.hpp"
#include "tuner/zero_shot.hpp"

namespace atvoss::report {
namespace {

using namespace tuner;

namespace fs = std::filesystem;

class JobRunnerTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-job-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  JobSpec spec(int trials, const std::string& scheduler = "gradient", const std::string& strategy = "random",
               const std::string& db = "j.db") const {
    return JobSpec::from_json(Json{{"name", "mlp"},
                                   {"target", "ascend910"},
                                   {"model", "mlp"},
                                   {"trials", trials},
                                   {"strategy", strategy},
                                   {"batch_size", 8},
                                   {"scheduler", scheduler},
                                   {"cost_model", "linear"},
                                   {"seed", 5},
                                   {"database", (dir_ / db).string()},
                                   {"export", (dir_ / "t.json").string()},
                                   {"report", (dir_ / "r.html").string()}});
  }
  std::vector<int> trials_per_task(const JobOutcome& out) const {
    std::vector<int> v;
    for (const auto& t : out.summary["tasks"]) v.push_back(t["trials"].get<int>());
    return v;
  }
  fs::path dir_;
};

TEST_F(JobRunnerTest, InterruptedJobResumesWhereTheSchedulerStopped) {
  JobRunOptions stop_early;
  stop_early.quiet = true;
  stop_early.max_rounds = 2;  // warm-up rounds of tasks 0 and 1 only
  // Round robin: after warm-up it would restart at task 0, so only a restored state
  // sends the next round to task 2.
  const auto first = run_and_report(spec(200, "round_robin"), stop_early);
  EXPECT_EQ(trials_per_task(first), (std::vector<int>{8, 8, 0}));  // default + 7 each
  auto db = db::TuningDatabase::open((dir_ / "j.db").string());
  const auto job = db.jobs().named("mlp");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, "stopped");
  EXPECT_EQ(job->spec["scheduler"]["tasks"][0]["trials"], 8);

  JobRunOptions one_more = stop_early;
  one_more.max_rounds = 1;
  const auto second = run_and_report(spec(200, "round_robin"), one_more);
  // A restarted warm-up would have gone back to task 0; the restored one goes on to task 2.
  EXPECT_EQ(trials_per_task(second), (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(second.resumed_trials, 16);
  EXPECT_EQ(second.measured, 8);
}

TEST_F(JobRunnerTest, AnExceptionFromOnRoundStopsTheJobResumably) {
  // How the Python binding lets Ctrl-C through: on_round throws between rounds.
  struct Interrupted {};
  JobRunOptions interrupt;
  interrupt.quiet = true;
  int rounds = 0;
  interrupt.on_round = [&rounds] {
    if (++rounds == 2) throw Interrupted{};
  };
  EXPECT_THROW(run_and_report(spec(200, "round_robin"), interrupt), Interrupted);
  auto db = db::TuningDatabase::open((dir_ / "j.db").string());
  const auto job = db.jobs().named("mlp");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, "stopped");   // not left "running"
  EXPECT_EQ(db.stats().records, 16);  // both rounds committed before the hook ran

  JobRunOptions one_more;
  one_more.quiet = true;
  one_more.max_rounds = 1;
  const auto resumed = run_and_report(spec(200, "round_robin"), one_more);
  EXPECT_EQ(resumed.resumed_trials, 16);
  EXPECT_EQ(resumed.measured, 8);
  EXPECT_EQ(trials_per_task(resumed), (std::vector<int>{8, 8, 8}));
}

// Schedule keys of every task's records, in the order they were stored.
std::vector<std::vector<std::string>> measured_in_order(const fs::path& db_path) {
  auto db = db::TuningDatabase::open(db_path.string());
  std::vector<std::vector<std::string>> out;
  const frontend::TaskSet tasks = frontend::zoo_model("mlp");
  for (const auto& t : tasks.tasks()) {
    out.emplace_back();
    for (const auto& r : db.records().history(t.workload.key())) out.back().push_back(r.schedule.key());
  }
  return out;
}

// Resume restores each task's search state (RNG, population, cost model fit on the same
// transfer data), so a job stopped twice measures exactly what an uninterrupted one does.
TEST_F(JobRunnerTest, InterruptedJobMeasuresExactlyWhatAnUninterruptedJobMeasures) {
  for (const std::string strategy : {"evolutionary", "model-guided"}) {
    SCOPED_TRACE(strategy);
    JobRunOptions quiet;
    quiet.quiet = true;
    const std::string whole = strategy + "-whole.db", parts = strategy + "-parts.db";
    run_and_report(spec(120, "gradient", strategy, whole), quiet);
    JobRunOptions stop = quiet;
    stop.max_rounds = 4;  // warm-up of all three tasks, then one more round
    run_and_report(spec(120, "gradient", strategy, parts), stop);
    stop.max_rounds = 3;
    run_and_report(spec(120, "gradient", strategy, parts), stop);
    const auto rest = run_and_report(spec(120, "gradient", strategy, parts), quiet);
    EXPECT_EQ(rest.resumed_trials, 56);
    EXPECT_EQ(measured_in_order(dir_ / parts), measured_in_order(dir_ / whole));
  }
}

// A job keeps only JobRunOptions::live_sessions task sessions alive; a dropped one is
// rebuilt from its saved state when its task is picked again, and measures exactly what a
// session that was never dropped would.
TEST_F(JobRunnerTest, DroppedSessionsAreRebuiltExactly) {
  for (const std::string strategy : {"evolutionary", "model-guided"}) {
    SCOPED_TRACE(strategy);
    JobRunOptions all;
    all.quiet = true;
    all.live_sessions = 100;
    JobRunOptions one = all;
    one.live_sessions = 1;  // every switch of task drops the previous session
    const std::string kept = strategy + "-kept.db", dropped = strategy + "-dropped.db";
    run_and_report(spec(120, "gradient", strategy, kept), all);
    run_and_report(spec(120, "gradient", strategy, dropped), one);
    const auto order = measured_in_order(dir_ / kept);
    std::size_t n = 0;
    for (const auto& task : order) n += task.size();
    EXPECT_EQ(n, 120u);
    EXPECT_EQ(measured_in_order(dir_ / dropped), order);
  }
}

// A task whose space runs out finishes: its last round stores nothing, and the job
// still takes that round in (else the scheduler would pick the task forever).
TEST_F(JobRunnerTest, ATaskWhoseSpaceRunsOutFinishesTheJob) {
  const Json tiny{{"op", "elementwise"}, {"dims", {{"M", 16}, {"N", 16}}}};  // 20 points
  JobRunOptions quiet;
  quiet.quiet = true;
  quiet.max_rounds = 50;  // a bound, so the bug fails the test instead of hanging it
  const auto out = run_and_report(JobSpec::from_json(Json{{"name", "tiny"},
                                                          {"target", "ascend910"},
                                                          {"trials", 100},
                                                          {"workloads", Json::array({Json{{"workload", tiny}}})},
                                                          {"strategy", "random"},
                                                          {"batch_size", 8},
                                                          {"database", (dir_ / "tiny.db").string()},
                                                          {"export", (dir_ / "t.json").string()},
                                                          {"report", (dir_ / "r.html").string()}}),
                                  quiet);
  EXPECT_EQ(out.trials, 20);
  auto db = db::TuningDatabase::open((dir_ / "tiny.db").string());
  EXPECT_EQ(db.jobs().named("tiny")->state, "done");
}

TEST_F(JobRunnerTest, FinishedJobMeasuresNothingAndWritesOutputs) {
  JobRunOptions quiet;
  quiet.quiet = true;
  const auto a = run_and_report(spec(40), quiet);
  EXPECT_EQ(a.trials, 40);
  EXPECT_LT(a.tuned_us, a.default_us);
  EXPECT_TRUE(fs::exists(dir_ / "t.json"));
  EXPECT_TRUE(fs::exists(dir_ / "r.html"));
  const auto b = run_and_report(spec(40), quiet);
  EXPECT_EQ(b.measured, 0);
  EXPECT_EQ(b.tuned_us, a.tuned_us);
}

// A host job on a database from before the fingerprint named the CPU's family and caches: the
// records stored under this machine's former name are adopted before the job starts, so it
// resumes them (nothing measured for them) and says so.
TEST_F(JobRunnerTest, AHostJobAdoptsTheRecordsOfThisMachinesFormerName) {
  const Workload w =
      Workload::from_json(parse_json(R"({"op":"matmul","dtype":"float32","dims":{"M":48,"N":48,"K":48}})", "w"));
  const Target former = tuner::fixtures::store_under_former_host_target((dir_ / "h.db").string(), w, {5.0, 6.0});
  const JobSpec job = JobSpec::from_json(Json{{"name", "adopt"},
                                              {"target", "host"},
                                              {"workloads", Json::array({Json{{"workload", w.to_json()}}})},
                                              {"trials", 2},
                                              {"strategy", "random"},
                                              {"seed", 1},
                                              {"database", (dir_ / "h.db").string()}});
  std::ostringstream warnings;
  JobRunOptions options;
  options.quiet = true;
  options.warnings = &warnings;
  const auto out = run_and_report(job, options);
  EXPECT_EQ(out.trials, 2);
  EXPECT_EQ(out.measured, 0);
  EXPECT_NE(warnings.str().find("adopted 2 records stored under " + former.name), std::string::npos) << warnings.str();
}

// 8 trials warm up only the heaviest of mlp's three tasks (a first round of 4, half the
// budget): the job still gives its end-to-end time, the others run their zero-shot pick
// unless the vendor default is faster, the exported table holds exactly the plan's schedule
// for every task with its provenance, and the report says how many were measured.
TEST_F(JobRunnerTest, ABudgetShortOfEveryTaskStillReportsEndToEnd) {
  JobRunOptions quiet;
  quiet.quiet = true;
  const auto out = run_and_report(spec(8), quiet);
  const auto per_task = trials_per_task(out);
  EXPECT_EQ(std::accumulate(per_task.begin(), per_task.end(), 0), 8);
  EXPECT_EQ(std::count(per_task.begin(), per_task.end(), 0), 3 - out.tasks_tuned);
  EXPECT_LT(out.tasks_tuned, 3);
  EXPECT_EQ(out.summary["tasks_tuned"], out.tasks_tuned);
  ASSERT_TRUE(std::isfinite(out.tuned_us));
  ASSERT_TRUE(std::isfinite(out.default_us));
  EXPECT_GT(out.tuned_us, 0);
  const auto table = table::ScheduleTable::load((dir_ / "t.json").string());
  for (const auto& t : out.summary["tasks"]) {
    const std::string tuned = t["trials"] == 0 ? "zero-shot" : "measured";
    EXPECT_TRUE(t["provenance"] == tuned || t["provenance"] == "default") << t["provenance"];
    const auto hit = table->lookup(Workload::from_json(t["workload"]));
    ASSERT_EQ(hit.kind, table::MatchKind::exact) << t["name"];
    EXPECT_EQ(hit.entry->provenance, t["provenance"]);
    EXPECT_EQ(hit.entry->schedule.to_json(), t["chosen_schedule"]);
    EXPECT_EQ(hit.entry->time_us, t["chosen_us"].get<double>());
  }
  std::ifstream report(dir_ / "r.html");
  const std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find(std::to_string(out.tasks_tuned) + " of 3 tasks measured"), std::string::npos);
  // The untuned tasks count at the default the full job measures for them.
  const auto full = run_and_report(spec(40), quiet);
  EXPECT_NEAR(out.default_us, full.default_us, 0.05 * full.default_us);
}

// Every task the job reaches measures its analytic zero-shot pick in its first round, so
// its measured best is never worse than the pick it would otherwise have run.
TEST_F(JobRunnerTest, EveryTaskReachedMeasuresItsZeroShotPick) {
  JobRunOptions quiet;
  quiet.quiet = true;
  const auto out = run_and_report(spec(24), quiet);
  const Target t = simulator::preset("ascend910");
  const auto model = costmodel::make_cost_model("heuristic", 5);
  auto db = db::TuningDatabase::open((dir_ / "j.db").string());
  int reached = 0;
  const frontend::TaskSet mlp = frontend::zoo_model("mlp");
  for (const auto& task : mlp.tasks()) {
    const auto history = db.records().history(task.workload.key());
    if (history.empty()) continue;
    ++reached;
    const Schedule pick = zero_shot_pick(task.workload, t, *model, 256, 5).schedule;
    const bool measured =
        std::any_of(history.begin(), history.end(), [&](const auto& r) { return r.schedule == pick; });
    EXPECT_TRUE(measured) << task.name;
  }
  EXPECT_EQ(reached, out.tasks_tuned) << out.trials;
  EXPECT_GT(reached, 0);
}

// atvoss-analyze profiles every task at the schedule the plan runs (its exported table entry).
TEST_F(JobRunnerTest, AnalysisProfilesUnmeasuredTasksAtTheirExportedPick) {
  JobRunOptions quiet;
  quiet.quiet = true;
  const auto out = run_and_report(spec(8), quiet);
  ASSERT_LT(out.tasks_tuned, 3);
  std::map<std::string, Json> chosen;
  for (const auto& t : out.summary["tasks"]) chosen[t["name"].get<std::string>()] = t;
  const ModelAnalysis a = analyze_job(spec(8));
  int picks = 0;
  for (const auto& l : a.layers) {
    SCOPED_TRACE(l.name);
    const Json& t = chosen.at(l.name);
    EXPECT_EQ(l.source, t["provenance"].get<std::string>());
    EXPECT_EQ(l.schedule.to_json(), t["chosen_schedule"]);
    picks += t["trials"] == 0 ? 1 : 0;
  }
  EXPECT_EQ(picks, 3 - out.tasks_tuned);
}

TEST_F(JobRunnerTest, DeclaredFusionRulesStayWithTheJobItsReportAndItsAnalysis) {
  JobRunOptions quiet;
  quiet.quiet = true;
  JobSpec declaring = spec(8);
  declaring.fusion_rules.push_back({"test-report-rule", {"matmul", "bias", "relu"}, 1, 2, 0});
  run_and_report(declaring, quiet);
  EXPECT_FALSE(lowering::registered_fusion_rule("test-report-rule"));
  analyze_job(declaring);
  EXPECT_FALSE(lowering::registered_fusion_rule("test-report-rule"));
  EXPECT_EQ(lowering::scoped_fusion_rule_set(), nullptr);  // every scope closed
}

TEST_F(JobRunnerTest, TheTunedTimeHasEachConvInItsChosenLayoutAndTheTransposesBetween) {
  // Eight random schedules per task: ResNet-50's 1x1 and 3x3 convs end up in differing layouts.
  const Json j{{"name", "r50"},
               {"target", "ascend910"},
               {"model", "resnet50"},
               {"trials", 8 * int(frontend::zoo_model("resnet50").tasks().size())},
               {"strategy", "random"},
               {"batch_size", 8},
               {"cost_model", "linear"},
               {"seed", 5},
               {"database", (dir_ / "j.db").string()},
               {"export", (dir_ / "t.json").string()},
               {"report", (dir_ / "r.html").string()}};
  JobRunOptions quiet;
  quiet.quiet = true;
  const auto out = run_and_report(JobSpec::from_json(j), quiet);
  const Json& s = out.summary;
  std::map<std::string, std::string> layout_of_layer;
  double tasks_us = 0;
  for (const auto& t : s["tasks"]) {
    const bool conv = t.contains("layout");
    EXPECT_EQ(conv, t["workload"]["op"] == "conv2d");
    tasks_us += t["weight"].get<int>() * t["chosen_us"].get<double>();  // noise-free, variant (d)
    if (conv && t["provenance"] == "measured") layout_of_layer[t["name"]] = t["layout"];
  }
  ASSERT_FALSE(s["layout_changes"].empty()) << "random schedules agree on every layout: pick another seed";
  double changes_us = 0;
  for (const auto& c : s["layout_changes"]) {
    EXPECT_NE(c["from"], c["to"]);
    EXPECT_EQ(c["transpose"]["op"], "transpose");
    EXPECT_GT(c["time_us"].get<double>(), 0);
    changes_us += c["time_us"].get<double>();
    // A task's first layer names it; the others share its layout.
    if (layout_of_layer.count(c["to_layer"])) EXPECT_EQ(layout_of_layer[c["to_layer"]], c["to"]);
  }
  EXPECT_EQ(out.layout_changes, int(s["layout_changes"].size()));
  EXPECT_NEAR(out.layout_changes_us, changes_us, 1e-6 * changes_us);
  // The plan's serial sum is its tasks, transposes and fallbacks; its figure is its graph run.
  const Json& plan_variant = s["variants"].back();
  EXPECT_NEAR(plan_variant["end_to_end_us"].get<double>(), tasks_us + changes_us + out.fallback_us,
              1e-6 * out.tuned_us);
  EXPECT_EQ(out.tuned_us, s["execution"]["rows"][3]["end_to_end_us"].get<double>());
  EXPECT_EQ(out.tuned_us, out.plan.end_to_end_us);
  std::ifstream report(dir_ / "r.html");
  const std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("id=\"layout-changes\""), std::string::npos);
  EXPECT_NE(html.find(s["layout_changes"][0]["to_layer"].get<std::string>()), std::string::npos);
}

TEST_F(JobRunnerTest, BadInputNeverCreatesTheDatabase) {
  JobSpec bad = spec(10);
  bad.model = "no-such-model";
  EXPECT_THROW(run_and_report(bad), Error);
  bad = spec(10);
  bad.strategy = "psychic";
  EXPECT_THROW(run_and_report(bad), Error);
  bad = spec(10);
  bad.target = "ascend999";
  EXPECT_THROW(run_and_report(bad), Error);
  EXPECT_FALSE(fs::exists(dir_ / "j.db"));
}

}  // namespace
}  // namespace atvoss::report
