// atvoss-analyze on a whole tuned model as a user runs it: atvoss-tune tunes a small zoo
// model, then atvoss-analyze --job and --db/--model read its database in new processes.
// Bad input (missing database or job, unknown model or target) exits 2 naming the field.
#include <gmock/gmock.h>

#include <gtest/gtest.h>
#include <map>

#include "cli_harness.hpp"
#include "core/json.hpp"

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

class AnalyzeModelCli : public CliTest {
 protected:
  // Tunes the mlp zoo model (three tasks) with a small budget; returns the job file.
  std::string tuned_job() {
    const Json spec = {{"name", "mlp-analyze"},
                       {"target", "ascend910"},
                       {"model", "mlp"},
                       {"trials", 36},
                       {"strategy", "random"},
                       {"cost_model", "linear"},
                       {"batch_size", 6},
                       {"seed", 2},
                       {"database", file("mlp.db")},
                       {"export", file("mlp-table.json")},
                       {"report", file("mlp-report.html")}};
    const std::string job = file("job.json", spec.dump());
    const CliResult tuned = run_tool("atvoss-tune", quote(job) + " --quiet --json");
    EXPECT_EQ(tuned.code, 0) << tuned.err;
    summary_ = parse_json(tuned.out, "tune summary");
    return job;
  }
  Json summary_;
};

// The flags a layer must carry under the usual bars, from its own numbers.
std::size_t expected_flags(const Json& l) {
  const double bw = l.at("bandwidth").get<double>(), compute = l.at("compute").get<double>();
  const std::string bound = l.at("bound").get<std::string>();
  return (bound == "memory" && bw < 0.85 ? 1 : 0) + (bound == "compute" && compute < 0.70 ? 1 : 0) +
         (l.at("sync").get<double>() > 0.05 ? 1 : 0);
}

TEST_F(AnalyzeModelCli, ProfilesEveryLayerOfATunedJobAtItsPlannedSchedule) {
  const std::string job = tuned_job();
  const CliResult r = run_tool("atvoss-analyze", "--job " + quote(job) + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const Json a = parse_json(r.out, "analysis");
  const Json& tasks = summary_.at("tasks");
  ASSERT_EQ(a.at("layers").size(), tasks.size());
  std::map<std::string, Json> task_named;
  for (const auto& t : tasks) task_named[t.at("name").get<std::string>()] = t;
  int flagged = 0;
  double before = 0, previous = 1, flagged_share = 0;
  for (const Json& l : a.at("layers")) {  // heaviest share of the model's time first
    SCOPED_TRACE(l.dump());
    const Json& task = task_named.at(l.at("name").get<std::string>());
    EXPECT_EQ(l.at("tuned").get<bool>(), task.at("provenance") == "measured");
    EXPECT_EQ(l.at("schedule"), task.at("chosen_schedule"));  // the plan's, which the table holds
    for (const char* f : {"bandwidth", "compute", "sync"}) {
      EXPECT_GE(l.at(f).get<double>(), 0);
      EXPECT_LE(l.at(f).get<double>(), 1);
    }
    EXPECT_GT(l.at("bandwidth").get<double>() + l.at("compute").get<double>(), 0);
    const double share = l.at("share").get<double>();
    EXPECT_LE(share, previous);
    previous = share;
    // Only the layers that hold the first 80% of the time are flagged; a lighter one's
    // broken bars are listed as minor.
    const std::size_t broken = expected_flags(l);
    EXPECT_EQ(l.at("flags").size(), before < 0.8 ? broken : 0u);
    EXPECT_EQ(l.at("flags").size() + l.at("minor").size(), broken);
    EXPECT_EQ(l.at("hints").size(), l.at("flags").size());
    before += share;
    flagged += l.at("flags").empty() ? 0 : 1;
    flagged_share += l.at("flags").empty() ? 0 : share;
  }
  EXPECT_NEAR(before, 1.0, 1e-9);
  EXPECT_EQ(a.at("flagged"), flagged);
  EXPECT_NEAR(a.at("flagged_share").get<double>(), flagged_share, 1e-12);

  // The same database named by --db/--model/--target gives the same table, as text.
  const CliResult text =
      run_tool("atvoss-analyze", "--db " + quote(file("mlp.db")) + " --model mlp --target ascend910");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("model mlp on ascend910: 3 layers"));
  EXPECT_THAT(text.out, HasSubstr("bandwidth"));
  EXPECT_THAT(text.out, HasSubstr(std::to_string(flagged) + " of 3 layers flagged, holding"));
  for (const auto& t : tasks) EXPECT_THAT(text.out, HasSubstr(t.at("name").get<std::string>()));

  // A real machine's target has no simulated utilisation profile: bad input, saying why.
  const CliResult cpu = run_tool("atvoss-analyze", "--db " + quote(file("mlp.db")) + " --model mlp --target host");
  EXPECT_EQ(cpu.code, 2) << cpu.err;
  EXPECT_THAT(cpu.err, HasSubstr("is a real machine"));
}

TEST_F(AnalyzeModelCli, BadInputExitsTwoNamingTheField) {
  const std::string missing_db = file("absent.db");
  const std::string job_without_db = file(
      "nodb.json",
      Json{{"name", "n"}, {"target", "ascend910"}, {"model", "mlp"}, {"trials", 4}, {"database", missing_db}}.dump());
  struct Case {
    const char* name;
    std::string args;
    const char* mentions;
  };
  const Case cases[] = {
      {"missing db", "--db " + quote(missing_db) + " --model mlp --target ascend910", "--db"},
      {"unknown model", "--db " + quote(missing_db) + " --model resnet51 --target ascend910", "--model"},
      {"unknown target", "--db " + quote(missing_db) + " --model mlp --target ascend999", "--target"},
      {"db without model", "--db " + quote(missing_db), "--model"},
      {"missing job file", "--job " + quote(file("absent.json")), "--job"},
      {"job whose db is missing", "--job " + quote(job_without_db), "field 'database'"},
      {"nothing to analyse", "", "--workload"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const CliResult r = run_tool("atvoss-analyze", c.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.mentions));
  }
  EXPECT_FALSE(std::filesystem::exists(missing_db));  // no database was created
}

}  // namespace
}  // namespace atvoss::cli_test
