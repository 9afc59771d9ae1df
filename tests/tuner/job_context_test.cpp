// A job's declared fusion rules are its own (tuner/job_context.hpp): two jobs in one
// process, one after the other or at once on two threads, each measure under their own
// rule only, the measuring pool's threads included, and the process-wide registry holds
// neither rule afterwards. The observable is what the simulator counted for each stored
// record: kernels launched, 1 when the whole epilogue fused, more for each op left unfused.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include <unistd.h>

#include "backend/targets.hpp"
#include "db/tuning_database.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/fusion_rules.hpp"
#include "tuner/job_context.hpp"
#include "tuner/job_runner.hpp"

namespace atvoss::tuner {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kChain = {"bias", "batchnorm", "relu"};
const Json kChainMatmul = {{"op", "matmul"}, {"dims", {{"M", 256}, {"N", 256}, {"K", 256}}}, {"epilogue", kChain}};

// Two rules of one name: "wide" fuses the whole chain at fusion_level 1 (one kernel);
// "narrow" fuses bias only, as the built-in elementwise rule does (three kernels).
const Json kWide = {
    {"name", "test-job-rule"}, {"pattern", {"matmul", "bias", "batchnorm", "relu"}}, {"max_fusion_depth", 3}};
const Json kNarrow = {{"name", "test-job-rule"}, {"pattern", {"matmul", "bias"}}, {"max_fusion_depth", 1}};
constexpr int kWideKernels = 1, kNarrowKernels = 3;

// Holds each job at the end of its first round until the other job got there too, so
// that both have started (and, before jobs had contexts, both registered their rule)
// before either measures the rest of its budget. Bounded: a job that failed early
// lets the other go on.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : waiting_(parties) {}
  void arrive() {
    std::unique_lock lock(mu_);
    if (--waiting_ <= 0) all_here_.notify_all();
    all_here_.wait_for(lock, std::chrono::seconds(60), [this] { return waiting_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable all_here_;
  int waiting_;
};

class JobContextTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-jobctx-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A small random-search job on the simulator, in a database of its own.
  JobSpec spec(const std::string& name, const Json& fusion_rules) const {
    return JobSpec::from_json(Json{{"name", name},
                                   {"target", "ascend910"},
                                   {"workloads", Json::array({{{"workload", kChainMatmul}}})},
                                   {"trials", 48},
                                   {"strategy", "random"},
                                   {"batch_size", 8},
                                   {"seed", 5},
                                   {"fusion_rules", fusion_rules},
                                   {"database", (dir_ / (name + ".db")).string()},
                                   {"export", (dir_ / (name + "-table.json")).string()},
                                   {"report", (dir_ / (name + ".html")).string()}});
  }

  // Kernels launched by each measured schedule of the job at fusion_level 1.
  std::vector<int> kernels_at_level_1(const std::string& name) const {
    auto db = db::TuningDatabase::open((dir_ / (name + ".db")).string());
    const Target t = backend::load_target("ascend910");
    std::vector<int> out;
    for (const auto& r :
         db.records().history(Workload::from_json(kChainMatmul).key(), db::TargetInfo::from_target(t).key)) {
      if (r.schedule.get_or("fusion_level", -1) == 1 && r.measurement.ok()) {
        out.push_back(r.measurement.profile.kernels);
      }
    }
    return out;
  }

  // Every fusion_level 1 schedule the job measured launched `kernels` kernels.
  void expect_all_launched(const std::string& name, int kernels) const {
    const std::vector<int> got = kernels_at_level_1(name);
    ASSERT_FALSE(got.empty()) << name << ": no fusion_level 1 schedule was measured";
    for (int k : got) EXPECT_EQ(k, kernels) << name;
  }

  static JobRunOptions quiet() {
    JobRunOptions o;
    o.quiet = true;
    return o;
  }

  fs::path dir_;
};

TEST_F(JobContextTest, ARuleDeclaredByOneJobIsUnseenByTheNext) {
  const TunedModel wide = run_job(spec("wide", Json::array({kWide})), quiet());
  const TunedModel plain = run_job(spec("plain", Json::array()), quiet());
  expect_all_launched("wide", kWideKernels);
  expect_all_launched("plain", kNarrowKernels);  // the built-in elementwise rule: bias only
  EXPECT_FALSE(lowering::registered_fusion_rule("test-job-rule"));
  EXPECT_EQ(lowering::split_epilogue("matmul", kChain, 1).rule, "elementwise");
  // The tuned model carries its rules: what the report lowers under (report_job).
  const JobScope in_wide(wide.context);
  EXPECT_EQ(lowering::split_epilogue("matmul", kChain, 1).rule, "test-job-rule");
  EXPECT_EQ(lowering::split_epilogue("matmul", kChain, 1).fused, kChain);
}

TEST_F(JobContextTest, TwoJobsAtOnceEachMeasureUnderTheirOwnRuleOfOneName) {
  Rendezvous first_rounds(2);
  JobRunOptions options = quiet();
  options.on_round = [&first_rounds, arrived = false]() mutable {
    if (!std::exchange(arrived, true)) first_rounds.arrive();
  };
  const JobSpec wide_spec = spec("wide", Json::array({kWide}));
  const JobSpec narrow_spec = spec("narrow", Json::array({kNarrow}));
  std::exception_ptr wide_failed, narrow_failed;
  auto run = [](const JobSpec& s, JobRunOptions o, std::exception_ptr& failed) {
    try {
      run_job(s, o);
    } catch (...) {
      failed = std::current_exception();
    }
  };
  std::thread wide(run, std::cref(wide_spec), options, std::ref(wide_failed));
  std::thread narrow(run, std::cref(narrow_spec), options, std::ref(narrow_failed));
  wide.join();
  narrow.join();
  if (wide_failed) std::rethrow_exception(wide_failed);
  if (narrow_failed) std::rethrow_exception(narrow_failed);
  expect_all_launched("wide", kWideKernels);
  expect_all_launched("narrow", kNarrowKernels);
  EXPECT_FALSE(lowering::registered_fusion_rule("test-job-rule"));
  EXPECT_EQ(lowering::split_epilogue("matmul", kChain, 1).rule, "elementwise");
}

}  // namespace
}  // namespace atvoss::tuner
