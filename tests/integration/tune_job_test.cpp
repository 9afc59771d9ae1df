// atvoss-tune as a user runs it: real processes in a scratch directory, checking
// exit codes, outputs, the database (through the sqlite3 CLI) and resumption —
// including a kill -9 in the middle of a job.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/json.hpp"
#include "db/job_store.hpp"
#include "simulator/presets.hpp"
#include "tests/db/pg_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-tune-cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string job(const std::string& name, atvoss::Json spec) const {
    spec["name"] = name;
    if (!spec.contains("target")) spec["target"] = "ascend910";
    if (!spec.contains("database")) spec["database"] = path(name + ".db");
    spec["export"] = path(name + "-table.json");
    spec["report"] = path(name + "-report.html");
    const auto file = path(name + ".json");
    std::ofstream(file) << spec.dump(2);
    return file;
  }

  Result run(const std::string& args, const std::string& tool = "atvoss-tune") const {
    const std::string out = path("stdout"), err = path("stderr");
    const std::string cmd = "cd " + dir_.string() + " && " + std::string(ATVOSS_BIN_DIR) + "/" + tool + " " + args +
                            " >" + out + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  // `atvoss-tune spec --quiet` started in the test directory, its output discarded; -1 if
  // fork failed.
  pid_t spawn_tune(const std::string& spec) const {
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir_.c_str()) != 0) _exit(127);
      freopen("/dev/null", "w", stderr);
      freopen("/dev/null", "w", stdout);
      execl((std::string(ATVOSS_BIN_DIR) + "/atvoss-tune").c_str(), "atvoss-tune", spec.c_str(), "--quiet",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  // Kills pid with SIGKILL once count() (a record count as text) reaches 40, or after 60 s;
  // true if it reached 40 first.
  static bool kill_after_records(pid_t pid, const std::function<std::string()>& count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool stored = false;
    while (!stored && std::chrono::steady_clock::now() < deadline) {
      const std::string n = count();
      stored = !n.empty() && std::stoi(n) >= 40;
      if (!stored) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    return stored;
  }

  // The output of a shell command, trailing newlines cut; "" if it failed.
  std::string output_of(const std::string& cmd_line) const {
    const std::string out = path("cmd.out");
    const std::string cmd = cmd_line + " >" + out + " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) return "";
    std::string s = slurp(out);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }

  // `psql url -c sql` (unaligned, tuples only), or "" on failure.
  std::string psql(const std::string& url, const std::string& query) const {
    return output_of("psql -X -q -t -A '" + url + "' -c \"" + query + "\"");
  }

  // `sqlite3 db sql`, or "" if the CLI is missing.
  std::string sql(const std::string& db, const std::string& query) const {
    return output_of("sqlite3 " + db + " \"" + query + "\"");
  }

  fs::path dir_;
};

const atvoss::Json kMlpJob = {{"model", "mlp"}, {"strategy", "random"}, {"batch_size", 8}, {"trials", 48}, {"seed", 3}};

TEST_F(TuneCli, SingleWorkloadPrintsBestAndCurve) {
  const std::string wl = R"('{"op":"matmul","dims":{"M":256,"N":512,"K":256},"epilogue":["bias","relu"]}')";
  const Result r = run("--target ascend910 --workload " + wl + " --trials 24 --strategy random --db " +
                       path("single.db") + " --export " + path("single-table.json") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::parse_json(r.out, "stdout");
  EXPECT_EQ(j["trials"], 24);
  EXPECT_EQ(j["curve"].size(), 24u);
  EXPECT_TRUE(j["best_schedule"].is_object());
  EXPECT_GT(j["best_us"].get<double>(), 0);
  EXPECT_TRUE(fs::exists(path("single-table.json")));
  const Result text = run("--target ascend910 --workload " + wl + " --trials 24 --db " + path("single.db"));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("best schedule:"));
  EXPECT_THAT(text.out, HasSubstr("24 resumed, 0 measured now"));
}

TEST_F(TuneCli, BatchJobWritesOutputsAndARerunMeasuresNothing) {
  const auto spec = job("mlp", kMlpJob);
  const Result first = run(spec + " --json");
  ASSERT_EQ(first.code, 0) << first.err;
  const auto a = atvoss::parse_json(first.out, "stdout");
  EXPECT_EQ(a["trials"], 48);
  EXPECT_EQ(a["measured"], 48);
  EXPECT_EQ(a["variants"].size(), 4u);
  EXPECT_TRUE(fs::exists(path("mlp.db")));
  EXPECT_THAT(slurp(path("mlp-table.json")), HasSubstr("tile_m"));
  const std::string html = slurp(path("mlp-report.html"));
  EXPECT_THAT(html, HasSubstr("<svg class=\"curve\""));
  EXPECT_THAT(first.err, HasSubstr("48/48 trials"));  // plain progress: stderr is a file
  const Result again = run(spec + " --json --quiet");
  ASSERT_EQ(again.code, 0) << again.err;
  const auto b = atvoss::parse_json(again.out, "stdout");
  EXPECT_EQ(b["resumed"], 48);
  EXPECT_EQ(b["measured"], 0);
  EXPECT_TRUE(again.err.empty()) << again.err;
}

// The model plan the job wrote beside its table gives back the job's figure from the file
// alone; an edited kernel time is a mismatch (exit 1), a damaged file bad input (exit 2).
TEST_F(TuneCli, TheModelPlanRecomputesTheJobsFigure) {
  const Result tuned = run(job("mlp", kMlpJob) + " --json --quiet");
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  const auto summary = atvoss::parse_json(tuned.out, "stdout");
  EXPECT_EQ(summary["model_plan"], path("mlp-model-plan.json"));
  const Result check = run("--plan mlp-model-plan.json --json", "atvoss-analyze");
  ASSERT_EQ(check.code, 0) << check.out << check.err;
  const auto r = atvoss::parse_json(check.out, "stdout");
  EXPECT_EQ(r["plan_us"], summary["tuned_us"]);
  EXPECT_NEAR(r["recomputed_us"].get<double>(), summary["tuned_us"].get<double>(),
              1e-3 * summary["tuned_us"].get<double>());
  EXPECT_TRUE(r["kernels_simulated_again"].get<bool>());
  auto plan = atvoss::parse_json(slurp(path("mlp-model-plan.json")), "plan");
  plan["tasks"][1]["time_us"] = plan["tasks"][1]["time_us"].get<double>() + 1;
  std::ofstream(path("edited.json")) << plan.dump();
  const Result edited = run("--plan edited.json", "atvoss-analyze");
  EXPECT_EQ(edited.code, 1);
  EXPECT_THAT(edited.out, HasSubstr("mismatch: " + plan["tasks"][1]["name"].get<std::string>()));
  const std::string text = slurp(path("mlp-model-plan.json"));
  std::ofstream(path("cut.json")) << text.substr(0, text.size() / 3);
  const Result cut = run("--plan cut.json", "atvoss-analyze");
  EXPECT_EQ(cut.code, 2);
  EXPECT_THAT(cut.err, HasSubstr("cut.json"));
}

TEST_F(TuneCli, KillNineThenResumeMeasuresNoScheduleTwice) {
  atvoss::Json spec = kMlpJob;
  spec["trials"] = 1500;
  spec["strategy"] = "evolutionary";
  spec["repeat"] = 3;
  const auto file = job("killed", spec);
  const auto db = path("killed.db");
  const pid_t pid = spawn_tune(file);
  ASSERT_GE(pid, 0);
  // Wait until a few rounds are stored, then kill without warning.
  const bool stored = kill_after_records(pid, [&] { return sql(db, "SELECT COUNT(*) FROM records"); });
  // Too slow, or no sqlite3 CLI, is a failure: a skip would hide that the resume went untested.
  ASSERT_TRUE(stored) << "the job stored fewer than 40 records in 60 s, or the sqlite3 CLI "
                         "(scripts/setup.sh installs it) is missing";
  const int before = std::stoi(sql(db, "SELECT COUNT(*) FROM records"));
  ASSERT_LT(before, 1500) << "the job finished before it could be killed";
  const Result resumed = run(file + " --json --quiet");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto j = atvoss::parse_json(resumed.out, "stdout");
  EXPECT_EQ(j["resumed"], before);
  EXPECT_EQ(j["trials"], 1500);
  // A schedule stored twice would have its repeats combined into one row.
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM records"), "1500");
  EXPECT_EQ(sql(db, "SELECT MAX(json_array_length(repeats)) FROM records WHERE status='ok'"), "3");
  EXPECT_THAT(sql(db, "SELECT state FROM jobs WHERE name='killed'"), HasSubstr("done"));
  // Exact resume: an uninterrupted run of the same job stores the same schedules, in the
  // same order, wherever the kill struck.
  ASSERT_EQ(run(job("whole", spec) + " --quiet").code, 0);
  const std::string order =
      "SELECT group_concat(schedule_key, ',') FROM (SELECT schedule_key FROM records ORDER BY id)";
  EXPECT_EQ(sql(db, order), sql(path("whole.db"), order));
}

// The same kill -9 with the job's database on a PostgreSQL server: the round's records and
// the job's checkpoint commit together there too, so the resumed run stores exactly the
// schedules, in the same order, as an uninterrupted run into an SQLite file.
TEST_F(TuneCli, KillNineThenResumeOnPostgresIsExactToo) {
  atvoss::db::testing::PgSchema schema;
  atvoss::Json spec = kMlpJob;
  spec["trials"] = 600;
  spec["strategy"] = "evolutionary";
  spec["repeat"] = 3;
  spec["database"] = schema.url();
  const auto file = job("killed", spec);
  const pid_t pid = spawn_tune(file);
  ASSERT_GE(pid, 0);
  const std::string records = "SELECT COUNT(*) FROM records";
  const bool stored = kill_after_records(pid, [&] { return psql(schema.url(), records); });
  ASSERT_TRUE(stored) << "the job stored fewer than 40 records in 60 s";
  const int before = std::stoi(psql(schema.url(), records));
  ASSERT_LT(before, 600) << "the job finished before it could be killed";
  const Result resumed = run(file + " --json --quiet");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto j = atvoss::parse_json(resumed.out, "stdout");
  EXPECT_EQ(j["resumed"], before);
  EXPECT_EQ(psql(schema.url(), records), "600");
  EXPECT_EQ(psql(schema.url(), "SELECT MAX(json_array_length(repeats::json)) FROM records WHERE status='ok'"), "3");
  EXPECT_THAT(psql(schema.url(), "SELECT state FROM jobs WHERE name='killed'"), HasSubstr("done"));
  atvoss::Json whole = spec;
  whole.erase("database");
  ASSERT_EQ(run(job("whole", whole) + " --quiet").code, 0);
  EXPECT_EQ(psql(schema.url(), "SELECT string_agg(schedule_key, ',' ORDER BY id) FROM records"),
            sql(path("whole.db"),
                "SELECT group_concat(schedule_key, ',') FROM (SELECT schedule_key FROM records ORDER BY id)"));
  // The layer-by-layer analysis reads the model's tuning from the server as from a file.
  const Result analysis = run("--db '" + schema.url() + "' --model mlp --target ascend910 --json", "atvoss-analyze");
  EXPECT_EQ(analysis.code, 0) << analysis.err;
  const Result from_file = run("--db " + path("whole.db") + " --model mlp --target ascend910 --json", "atvoss-analyze");
  EXPECT_EQ(atvoss::parse_json(analysis.out, "analysis")["layers"],
            atvoss::parse_json(from_file.out, "analysis")["layers"]);
}

// Two atvoss-tune processes tune one host workload at once against one PostgreSQL database:
// each schedule is measured once, by whichever process claimed it first; the other waits
// for that record and takes it (TuneOptions::claim_owner). The second starts once the
// first holds its claims, and the shape is new to this machine's kernel cache, so the
// first is still compiling and measuring when the second asks.
TEST_F(TuneCli, TwoProcessesSharingAServerDatabaseMeasureEachScheduleOnce) {
  atvoss::db::testing::PgSchema schema;
  const int m = 32 + 8 * static_cast<int>(std::random_device{}() % 96);
  const std::string wl = R"({"op":"matmul","dtype":"float32","dims":{"M":)" + std::to_string(m) + R"(,"N":72,"K":40}})";
  const auto tune = [&](const std::string& out) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir_.c_str()) != 0) _exit(127);
      // A compile cache of the test's own, so that the shape is new whatever ran before.
      setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
      freopen((out + ".json").c_str(), "w", stdout);
      freopen((out + ".err").c_str(), "w", stderr);
      execl((std::string(ATVOSS_BIN_DIR) + "/atvoss-tune").c_str(), "atvoss-tune", "--target", "host", "--workload",
            wl.c_str(), "--trials", "6", "--strategy", "random", "--seed", "1", "--confirm-top", "0", "--json",
            "--quiet", "--db", schema.url().c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  };
  const pid_t first = tune("a");
  ASSERT_GT(first, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (psql(schema.url(), "SELECT COUNT(*) FROM claims") < "1" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const pid_t second = tune("b");
  ASSERT_GT(second, 0);
  int status = 0;
  waitpid(first, &status, 0);
  waitpid(second, &status, 0);
  int here = 0, elsewhere = 0;
  std::string both;  // what each run said, for a failure's message
  for (const char* f : {"a", "b"}) {
    const std::string out = slurp(path(std::string(f) + ".json"));
    both += std::string(f) + ": " + out + slurp(path(std::string(f) + ".err")) + "\n";
    ASSERT_FALSE(out.empty()) << slurp(path(std::string(f) + ".err"));
    const auto j = atvoss::parse_json(out, f);
    EXPECT_EQ(j["trials"], 6) << out;
    here += j["measured"].get<int>() - j["measured_elsewhere"].get<int>();
    elsewhere += j["measured_elsewhere"].get<int>();
  }
  // Six distinct schedules, six measurements in all: none measured by both.
  EXPECT_EQ(here, 6) << both;
  EXPECT_GE(elsewhere, 1) << "the two runs did not overlap, so the claims went untested\n" << both;
  EXPECT_EQ(psql(schema.url(), "SELECT COUNT(*) FROM records"), "6") << both;
  EXPECT_EQ(psql(schema.url(), "SELECT COUNT(*) FROM claims"), "0");  // released with the rounds
}

// An ONNX model built here with Debian's python3-onnx: Conv+BatchNormalization+Relu
// twice (same shape: one task, weight 2), a Neg (an op atvoss has no template for) and a
// transpose whose rows (1M elements) fit no buffer of the chip: neither fails the job;
// both are listed by node name and timed by the fallback rule in the one end-to-end
// figure that the summary, --json and the report state.
TEST_F(TuneCli, OnnxModelJob) {
  const std::string script = R"py(
import sys
from onnx import helper, TensorProto as T
import onnx
def t(name, *shape):
    n = 1
    for d in shape: n *= d
    return helper.make_tensor(name, T.FLOAT, shape, [0.5] * n)
nodes, inits = [], []
prev = "x"
for i in range(2):
    nodes += [helper.make_node("Conv", [prev, "w%d" % i], ["c%d" % i], pads=[1, 1, 1, 1], name="conv%d" % i),
              helper.make_node("BatchNormalization", ["c%d" % i, "s", "b", "m", "v"], ["n%d" % i]),
              helper.make_node("Relu", ["n%d" % i], ["r%d" % i])]
    inits.append(t("w%d" % i, 16, 16, 3, 3))
    prev = "r%d" % i
nodes.append(helper.make_node("Neg", [prev], ["y"]))
nodes.append(helper.make_node("Transpose", ["z"], ["zt"], perm=[0, 2, 1, 3, 4], name="huge_shuffle"))
inits += [t("s", 16), t("b", 16), t("m", 16), t("v", 16)]
g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 16, 28, 28]),
                                      helper.make_tensor_value_info("z", T.FLOAT, [1, 2, 2, 1024, 1024])],
                      [helper.make_tensor_value_info("y", T.FLOAT, None),
                       helper.make_tensor_value_info("zt", T.FLOAT, None)], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
)py";
  std::ofstream(path("make.py")) << script;
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  // scripts/setup.sh installs python3-onnx: a model that cannot be built is a failure.
  ASSERT_EQ(std::system((python + " " + path("make.py") + " " + path("tiny.onnx")).c_str()), 0);
  const auto spec = job(
      "tiny", {{"model", path("tiny.onnx")}, {"batch", 2}, {"trials", 16}, {"strategy", "random"}, {"batch_size", 8}});
  const Result r = run(spec + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::parse_json(r.out, "stdout");
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["weight"], 2);
  EXPECT_EQ(j["tasks"][0]["workload"]["dims"]["N"], 2);
  EXPECT_EQ(j["tasks"][0]["workload"]["epilogue"], atvoss::Json::array({"bias", "relu"}));  // BN folded
  EXPECT_EQ(j["tasks"][0]["nodes"].size(), 2u);                                             // conv0 and conv1
  EXPECT_EQ(j["graph"]["nodes"], 2 * 3 + 2);  // every node of the file, folded ones too
  EXPECT_EQ(j["tasks"][0]["provenance"], "measured");
  ASSERT_EQ(j["not_tuned"].size(), 2u);
  // Tasks without a valid schedule first, then the ops without a lowering.
  EXPECT_EQ(j["not_tuned"][0]["name"], "huge_shuffle");
  EXPECT_EQ(j["not_tuned"][1]["name"], "Neg:y");
  EXPECT_THAT(j["not_tuned"][0]["reason"].get<std::string>(), HasSubstr("no valid schedule on ascend910"));
  const double fallback = j["fallback_us"].get<double>();
  EXPECT_NEAR(fallback, j["not_tuned"][0]["time_us"].get<double>() + j["not_tuned"][1]["time_us"].get<double>(), 1e-9);
  EXPECT_GT(j["not_tuned"][0]["time_us"].get<double>(), 5.0);  // 16 MB moved at HBM speed
  // One end-to-end figure: the model plan's graph run (fallback nodes run in it), and the
  // vendor default's; the serial variants explain it. The plan is never the slower.
  EXPECT_DOUBLE_EQ(j["tuned_us"].get<double>(), j["execution"]["rows"][3]["end_to_end_us"].get<double>());
  EXPECT_DOUBLE_EQ(j["default_us"].get<double>(), j["execution"]["rows"][1]["end_to_end_us"].get<double>());
  EXPECT_LE(j["tuned_us"].get<double>(), j["default_us"].get<double>());
  EXPECT_GT(j["variants"][3]["end_to_end_us"].get<double>(), fallback);  // (d) serial: kernels + fallbacks
  EXPECT_EQ(j["model_plan"], path("tiny-model-plan.json"));
  // Fusion under the chosen schedules: conv x2 with bias (its folded BatchNormalization) and
  // relu, and the two nodes not tuned.
  EXPECT_EQ(j["fusion"]["ops_before"], 2 * 3 + 2);
  EXPECT_LE(j["fusion"]["kernels_after"].get<int>(), 2 * 3 + 2);
  EXPECT_GE(j["fusion"]["kernels_after"].get<int>(), 2 + 2);
  const std::string html = slurp(path("tiny-report.html"));
  EXPECT_THAT(html, HasSubstr("ops before fusion"));
  EXPECT_THAT(html, HasSubstr("2 nodes not tuned"));
  EXPECT_THAT(html, HasSubstr("huge_shuffle"));
  EXPECT_THAT(html, HasSubstr("The graph run on the device"));
  // The plain summary (a rerun measures nothing more) names them and states the same figure.
  const Result again = run(spec + " --quiet");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("2 nodes not tuned"));
  EXPECT_THAT(again.out, HasSubstr("huge_shuffle (transpose) x1"));
  EXPECT_THAT(again.out, HasSubstr("end-to-end (the model plan: graph run)"));
  char tuned[64];
  std::snprintf(tuned, sizeof tuned, "tuned %.1f us", j["tuned_us"].get<double>());
  EXPECT_THAT(again.out, HasSubstr(tuned));
  // The graph run: the conv chain and the shuffle are independent, so scheduled beats the
  // serial sum; the memory plan is never below the liveness bound, and it checks sound.
  const auto& e = j["execution"];
  ASSERT_EQ(e["rows"].size(), 4u);
  EXPECT_LT(e["rows"][3]["end_to_end_us"].get<double>(), e["rows"][2]["end_to_end_us"].get<double>());
  EXPECT_LT(e["rows"][1]["end_to_end_us"].get<double>(), e["rows"][0]["end_to_end_us"].get<double>());
  EXPECT_GE(e["memory"]["peak_bytes"].get<double>(), e["memory"]["lower_bound_bytes"].get<double>());
  EXPECT_GT(e["memory"]["lower_bound_bytes"].get<double>(), 16.0 * 1024 * 1024);  // the shuffle's input
  // A plan path that cannot be written is bad input before a job runs: its database is not
  // even created.
  const auto fresh = job("tiny_fresh", {{"model", path("tiny.onnx")}, {"trials", 8}, {"strategy", "random"}});
  const Result nowhere = run(fresh + " --quiet --memory-plan no/such/dir/plan.json");
  EXPECT_EQ(nowhere.code, 2);
  EXPECT_THAT(nowhere.err, HasSubstr("--memory-plan: 'no/such/dir/plan.json': the directory"));
  EXPECT_FALSE(fs::exists(path("tiny_fresh.db")));
  ASSERT_EQ(run(spec + " --quiet --memory-plan plan.json").code, 0);
  const Result check = run("--check-plan plan.json", "atvoss-analyze");
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("sound"));
  auto plan = atvoss::parse_json(slurp(path("plan.json")), "plan");
  ASSERT_GE(plan["allocations"].size(), 2u);
  for (auto& a : plan["allocations"]) a["offset"] = 0;  // everything at one offset: overlaps
  std::ofstream(path("bad-plan.json")) << plan.dump();
  const Result bad = run("--check-plan bad-plan.json", "atvoss-analyze");
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.out, HasSubstr("share bytes while both are live"));
  std::ofstream(path("broken-plan.json")) << R"({"allocations": [{"tensor": "a", "offset": "x"}]})";
  const Result broken = run("--check-plan broken-plan.json", "atvoss-analyze");
  EXPECT_EQ(broken.code, 2);
  EXPECT_THAT(broken.err, HasSubstr("field 'offset' must be an integer"));
}

// A BERT-base training step on a chip with room for its weights and 60 MB more: the plan's
// 68 MB of activations (its epilogues' gradients among them) do not fit, so activations are
// recomputed until it does (a fifth row); with 32 MB more, recompute lowers the peak but cannot
// reach it, and says by how much.
TEST_F(TuneCli, ATrainingStepOverTheDeviceMemoryRecomputesActivations) {
  const auto run_with_room = [&](const std::string& name, double room_bytes) {
    atvoss::Json target = atvoss::simulator::preset("ascend910").to_json();
    target["device_memory_bytes"] = static_cast<std::int64_t>(169869312 + room_bytes);  // bert-base weights + room
    std::ofstream(path(name + "-target.json")) << target.dump();
    const auto spec = job(name, {{"model", "bert-base-train"},
                                 {"target", path(name + "-target.json")},
                                 {"trials", 40},
                                 {"strategy", "random"},
                                 {"seed", 1}});
    const Result r = run(spec + " --json --quiet");
    EXPECT_EQ(r.code, 0) << r.err;
    return atvoss::parse_json(r.out, "stdout")["execution"];
  };
  const auto fits = run_with_room("roomy", 60e6);
  const auto& m = fits["memory"];
  ASSERT_FALSE(m["fits"].get<bool>()) << m.dump();
  const auto& r = m["recompute"];
  EXPECT_TRUE(r["fits"].get<bool>()) << r.dump();
  EXPECT_GE(r["tensors"].get<int>(), 1);
  EXPECT_LT(r["peak_bytes"].get<double>(), m["peak_bytes"].get<double>());
  EXPECT_GT(r["extra_us"].get<double>(), 0);
  ASSERT_EQ(fits["rows"].size(), 5u);
  EXPECT_EQ(fits["rows"][4]["name"], "tuned, scheduled, recomputing activations to fit");
  EXPECT_DOUBLE_EQ(fits["rows"][4]["end_to_end_us"].get<double>(), r["end_to_end_us"].get<double>());
  const auto tight = run_with_room("tight", 32e6);
  const auto& tr = tight["memory"]["recompute"];
  EXPECT_FALSE(tr["fits"].get<bool>());
  EXPECT_GT(tr["over_bytes"].get<double>(), 0);
  EXPECT_LT(tr["over_bytes"].get<double>(), tight["memory"]["over_bytes"].get<double>());
  EXPECT_EQ(tight["rows"].size(), 4u);
}

// Any model's training step at any batch, from the job spec alone: the zoo's mlp at batch 16
// tunes its backward and update kernels, at 16 rows.
TEST_F(TuneCli, ATrainingJobAtABatchTunesTheStepsBackwardKernels) {
  atvoss::Json spec = kMlpJob;
  spec["mode"] = "training";
  spec["batch"] = 16;
  spec["optimizer"] = "adam";
  const Result r = run(job("step", spec) + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const atvoss::Json out = atvoss::parse_json(r.out, "stdout");
  EXPECT_EQ(out["model"], "mlp-b16-train");
  EXPECT_EQ(out["batch"], 16);
  EXPECT_EQ(out["training"], (atvoss::Json{{"optimizer", "adam"}, {"mixed_precision", false}}));
  EXPECT_THAT(slurp(path("step-report.html")), HasSubstr("training step, adam"));
  std::set<std::string> names;
  for (const auto& t : out["tasks"]) names.insert(t["name"].get<std::string>());
  for (const char* n : {"fc1", "fc1.wgrad", "fc1.update", "fc3.dgrad"}) EXPECT_TRUE(names.count(n)) << n;
  // Stored at the step's batch: the forward fc1 at 16 rows of 784.
  EXPECT_NE(sql(path("step.db"),
                "SELECT COUNT(*) FROM records r JOIN workloads w ON w.id = r.workload_id WHERE "
                "json_extract(w.description, '$.dims.M') = 16 AND json_extract(w.description, '$.dims.K') = 784"),
            "0");
}

// Two BERT-base encoder layers with multi-head attention as exporters write it
// (bench/graph/make_attention.py), tuned as a job: Q, K and V are branches, so the graph runs
// faster scheduled than serially, and the job's memory plan is within 5 % of the liveness
// bound (the planner's own test of these layers is in tests/execution).
TEST_F(TuneCli, AnAttentionModelRunsItsBranchesSideBySideAndPlansAtTheBound) {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string make = python + " " + std::string(ATVOSS_SOURCE_DIR) + "/bench/graph/make_attention.py " +
                           path("mha.onnx") + " 2 128 >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  const auto spec = job("mha", {{"model", path("mha.onnx")}, {"trials", 24}, {"strategy", "random"}, {"seed", 1}});
  const Result r = run(spec + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto e = atvoss::parse_json(r.out, "stdout")["execution"];
  EXPECT_LT(e["rows"][1]["end_to_end_us"].get<double>(), e["rows"][0]["end_to_end_us"].get<double>());
  const double peak = e["memory"]["peak_bytes"].get<double>(), bound = e["memory"]["lower_bound_bytes"].get<double>();
  EXPECT_GE(peak, bound);
  EXPECT_LE(peak, 1.05 * bound) << "the plan is " << 100 * (peak / bound - 1) << " % above the liveness bound";
  // The tuned run is no faster than the bound on any order of its graph, and the heads' branches
  // bring it below the serial sum.
  const double tuned = e["rows"][3]["end_to_end_us"].get<double>(), floor = e["lower_bound_us"].get<double>();
  EXPECT_GE(tuned, floor * (1 - 1e-9));
  EXPECT_LT(floor, e["rows"][2]["end_to_end_us"].get<double>());
}

// Inception v1 at batch 1 (bench/graph/make_inception.py) on ascend910b: launched by the host,
// its graph run is its 139 launches in a row and tuning does not show (409 -> 408 us); sunk to
// the device (docs/decisions/launch-mode.md), each kernel pays 1 us on its own stream, and the
// tuned plan runs below the default (174 -> 149 us at 100 trials). The job says which mode it
// ran; a target that gives no sunk cost, or another mode's name, is refused naming the field.
TEST_F(TuneCli, ASunkGraphShowsTuningOnABranchyModel) {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string make = python + " " + std::string(ATVOSS_SOURCE_DIR) + "/bench/graph/make_inception.py " +
                           path("inception.onnx") + " >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  const atvoss::Json base = {{"model", path("inception.onnx")}, {"target", "ascend910b"}, {"trials", 100}, {"seed", 1}};
  std::map<std::string, atvoss::Json> runs;
  for (const char* mode : {"host", "sunk"}) {
    atvoss::Json spec = base;
    spec["launch"] = mode;
    const Result r = run(job(std::string("inc-") + mode, spec) + " --json --quiet");
    ASSERT_EQ(r.code, 0) << r.err;
    runs[mode] = atvoss::parse_json(r.out, "stdout");
    EXPECT_EQ(runs[mode]["launch"]["mode"], mode);
  }
  EXPECT_EQ(runs["host"]["launch"]["us_per_kernel"], 5.0);
  EXPECT_EQ(runs["sunk"]["launch"]["us_per_kernel"], 1.0);
  const auto& sunk = runs["sunk"]["execution"]["rows"];
  EXPECT_LT(sunk[3]["end_to_end_us"].get<double>(), 0.95 * sunk[1]["end_to_end_us"].get<double>());
  const auto& host = runs["host"]["execution"]["rows"];
  EXPECT_LT(sunk[1]["end_to_end_us"].get<double>(), 0.5 * host[1]["end_to_end_us"].get<double>());
  EXPECT_THAT(slurp(path("inc-sunk-report.html")), HasSubstr("graph sunk to the device, 1 us per kernel"));
  // mlu370 gives no sunk cost; "device" is no mode.
  atvoss::Json mlu = base;
  mlu["target"] = "mlu370";
  mlu["launch"] = "sunk";
  const Result refused = run(job("mlu", mlu) + " --quiet");
  EXPECT_EQ(refused.code, 2);
  EXPECT_THAT(refused.err, HasSubstr("field 'launch'"));
  EXPECT_THAT(refused.err, HasSubstr("sunk_launch_us"));
  atvoss::Json typo = base;
  typo["launch"] = "device";
  const Result bad = run(job("typo", typo) + " --quiet");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("field 'launch' must be \"host\" or \"sunk\""));
}

// A job over many devices: the tuned model's training step on 6 cards of a server, the plan
// searched and written, its section in the report, its figures in --json.
TEST_F(TuneCli, AJobWithDevicesWritesThePlanItChose) {
  atvoss::Json extra = kMlpJob;
  extra["parallel"] = {{"devices", 6}, {"topology", "ascend910b-server8"}, {"trials", 12}, {"plan", path("plan.json")}};
  const Result r = run(job("par", extra) + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto p = atvoss::parse_json(r.out, "stdout")["parallel"];
  EXPECT_EQ(p["mode"], "training");
  EXPECT_EQ(p["model"], "mlp-train");
  const auto plan = atvoss::parse_json(slurp(path("plan.json")), "plan");
  EXPECT_EQ(plan, p["plan"]);
  EXPECT_EQ(plan["tp"].get<int>() * plan["pp"].get<int>() * plan["dp"].get<int>(), 6);
  EXPECT_LE(p["search"]["us_per_batch"].get<double>(), p["search"]["data_parallel_us_per_batch"].get<double>());
  EXPECT_THAT(slurp(path("par-report.html")), HasSubstr("<section id=\"parallel\">"));
  // The scaling table, per device count (the plan's 6 among them): the tuned step's throughput
  // beside the vendor default's (the MLP's kernels are shorter than their launches: level).
  std::set<int> counts;
  for (const auto& row : p["scaling"]) {
    counts.insert(row["devices"].get<int>());
    EXPECT_GT(row["default_samples_per_s"].get<double>(), 0) << row.dump();
    EXPECT_GE(row["samples_per_s"].get<double>(), row["default_samples_per_s"].get<double>()) << row.dump();
  }
  EXPECT_TRUE(counts.count(6));
  EXPECT_THAT(slurp(path("par-report.html")), HasSubstr("default/s"));
  // Inference: the replicas never synchronise, so no data-parallel table.
  extra["parallel"]["mode"] = "inference";
  const Result inf = run(job("inf", extra) + " --json --quiet");
  ASSERT_EQ(inf.code, 0) << inf.err;
  const auto q = atvoss::parse_json(inf.out, "stdout")["parallel"];
  EXPECT_EQ(q["mode"], "inference");
  EXPECT_TRUE(q["scaling"].empty());
}

// Node and tensor names holding bytes that are not UTF-8 (\xff\xfe, written into the file
// after python3-onnx serialised it): the raw bytes went into the HTML report declared UTF-8,
// and `atvoss-tune --json` and `atvoss-analyze --json` exited 1 ("invalid UTF-8 byte") after
// the work was done. The names are escaped where the model is read, so every output is
// valid and the names stay apart.
TEST_F(TuneCli, ModelNamesThatAreNotUtf8AreEscapedInEveryOutput) {
  const std::string script = R"py(
import sys
from onnx import helper, TensorProto as T
import onnx
w = helper.make_tensor("wQQ", T.FLOAT, [16, 16], [0.5] * 256)
nodes = [helper.make_node("MatMul", ["x", "wQQ"], ["yQQ"], name="mmQQ"),
         helper.make_node("Neg", ["yQQ"], ["z"], name="negQQ")]
g = helper.make_graph(nodes, "gQQ", [helper.make_tensor_value_info("x", T.FLOAT, [16, 16])],
                      [helper.make_tensor_value_info("z", T.FLOAT, None)], [w])
data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
open(sys.argv[1], "wb").write(data.replace(b"QQ", b"\xff\xfe"))
)py";
  std::ofstream(path("make.py")) << script;
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  ASSERT_EQ(std::system((python + " " + path("make.py") + " " + path("bytes.onnx")).c_str()), 0);
  ASSERT_NE(slurp(path("bytes.onnx")).find("mm\xff\xfe"), std::string::npos);
  const auto spec = job("bytes", {{"model", path("bytes.onnx")}, {"trials", 4}, {"strategy", "random"}});
  const Result r = run(spec + " --json --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::parse_json(r.out, "stdout");
  bool named = false;
  for (const auto& n : j["not_tuned"]) named = named || n["name"] == "neg\\xFF\\xFE";
  EXPECT_TRUE(named) << j["not_tuned"].dump();
  const std::string html = slurp(path("bytes-report.html"));
  EXPECT_THAT(html, HasSubstr("neg\\xFF\\xFE"));
  EXPECT_EQ(html.find("\xff\xfe"), std::string::npos);
  const Result analyze = run("--job " + spec + " --json", "atvoss-analyze");
  ASSERT_EQ(analyze.code, 0) << analyze.err;
  EXPECT_NO_THROW((void)atvoss::parse_json(analyze.out, "stdout"));
}

// Two runs of one job at once on a server database each counted their own budget under the
// job's one claim owner (a 40-trial job stored 67 trials). A run is now refused while another
// holds the job; the test holds it here as a first run would (its advisory lock), so the
// second run's refusal is certain, and once it lets go the job runs.
TEST_F(TuneCli, AJobAnotherProcessIsRunningOnAServerDatabaseIsRefused) {
  atvoss::db::testing::PgSchema schema;
  atvoss::Json spec = kMlpJob;
  spec["database"] = schema.url();
  const std::string file = job("twice", spec);
  PGconn* holder = PQconnectdb(schema.url().c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK) << PQerrorMessage(holder);
  const std::string lock = "SELECT pg_advisory_lock(" + std::to_string(atvoss::db::job_lock_key("twice")) + ")";
  PQclear(PQexec(holder, lock.c_str()));
  const Result refused = run(file + " --quiet");
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("job 'twice' is being run by another process"));
  EXPECT_EQ(psql(schema.url(), "SELECT COUNT(*) FROM records"), "0");
  EXPECT_EQ(psql(schema.url(), "SELECT COUNT(*) FROM jobs"), "0");
  PQfinish(holder);
  const Result alone = run(file + " --quiet");
  EXPECT_EQ(alone.code, 0) << alone.err;
  EXPECT_EQ(psql(schema.url(), "SELECT COUNT(*) FROM records"), "48");
}

// The same on an SQLite file: the lock is an flock on a file beside the database, which the
// test holds here as a first run would.
TEST_F(TuneCli, AJobAnotherProcessIsRunningOnAnSqliteFileIsRefused) {
  const std::string file = job("twice", kMlpJob);
  const std::string db = path("twice.db");
  const int holder = ::open(atvoss::db::job_lock_file(db, "twice").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(holder, 0);
  ASSERT_EQ(::flock(holder, LOCK_EX | LOCK_NB), 0);
  const Result refused = run(file + " --quiet");
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("job 'twice' is being run by another process"));
  ::close(holder);
  const Result alone = run(file + " --quiet");
  EXPECT_EQ(alone.code, 0) << alone.err;
  EXPECT_EQ(sql(db, "SELECT COUNT(*) FROM records"), "48");
}

TEST_F(TuneCli, BadInputExitsTwoAndLeavesTheDatabaseAlone) {
  // A good run first, so there is a database whose bytes must not change.
  const auto good = job("shared", kMlpJob);
  ASSERT_EQ(run(good + " --quiet").code, 0);
  const std::string db = path("shared.db");
  const std::string before = slurp(db);
  std::ofstream(path("garbage.onnx")) << "not an onnx model";
  const struct {
    const char* name;
    atvoss::Json patch;
    const char* says;
  } cases[] = {
      {"unknown_model", {{"model", "resnet51"}}, "unknown model"},
      {"bad_onnx", {{"model", path("garbage.onnx")}}, "not an ONNX model"},
      {"trials_wrong_type", {{"trials", "lots"}}, "trials"},
      {"unreachable_farm", {{"farm", "127.0.0.1:1"}}, "unreachable"},
      {"unknown_strategy", {{"strategy", "psychic"}}, "strategy"},
      {"strategy_config_key", {{"strategy_config", {{"tpe_gamma", 0.3}}}}, "unknown field 'tpe_gamma'"},
      {"strategy_config_range", {{"strategy", "tpe"}, {"strategy_config", {{"tpe_gamma", 3}}}}, "'tpe_gamma' must be"},
      {"strategy_config_type", {{"strategy_config", "fast"}}, "field 'strategy_config' must be a JSON object"},
      {"too_many_devices", {{"parallel", {{"devices", 99}, {"topology", "ascend910b-server8"}}}}, "parallel.devices"},
      {"unknown_topology", {{"parallel", {{"devices", 2}, {"topology", "dgx-a100"}}}}, "unknown preset 'dgx-a100'"},
      {"bad_mode", {{"parallel", {{"devices", 2}, {"mode", "serving"}}}}, "field 'mode' must be training or inference"},
      // The plan's path was checked only when the plan was written, after tuning had
      // written the database.
      {"plan_in_missing_dir",
       {{"parallel", {{"devices", 2}, {"topology", "ascend910b-server8"}, {"plan", "/nonexistent/dir/p.json"}}}},
       "job spec: field 'parallel.plan': '/nonexistent/dir/p.json'"},
      {"plan_on_a_device",
       {{"parallel", {{"devices", 2}, {"topology", "ascend910b-server8"}, {"plan", "/dev/null"}}}},
       "job spec: field 'parallel.plan': '/dev/null' is a device node"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    atvoss::Json spec = kMlpJob;
    spec.update(c.patch);
    spec["database"] = db;
    const Result r = run(job(c.name, spec));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("error:"));
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(slurp(db), before);
  }
  const Result flags = run("--trials 5");
  EXPECT_EQ(flags.code, 2);
  const Result missing = run(path("absent.json"));
  EXPECT_EQ(missing.code, 2);
  const std::string wl = R"('{"op":"matmul","dims":{"M":64,"N":64,"K":64}}')";
  const Result config = run("--target ascend910 --workload " + wl + " --trials 4 --strategy evolutionary --db " +
                            path("single.db") + R"( --strategy-config '{"population":1}')");
  EXPECT_EQ(config.code, 2);
  EXPECT_THAT(config.err, HasSubstr("evolutionary strategy_config: field 'population' must be >= 2"));
  EXPECT_FALSE(fs::exists(path("single.db")));
}

}  // namespace
