// The model engine with a model plan (engine/model.hpp): a plan tuned on this CPU for this file
// runs its schedules and gives the default's outputs; a plan of another CPU, of another model
// (other shapes) or of other weights, a damaged plan and wrong inputs are refused by name.
// Outputs against ONNX Runtime: python/tests/peers/test_engine_vs_ort.py.
#include "engine/model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <unistd.h>

#include "core/error.hpp"
#include "plan/export.hpp"
#include "plan/plan_model.hpp"
#include "tuner/job_runner.hpp"

namespace atvoss::engine {
namespace {

namespace fs = std::filesystem;

// conv 3x3 -> BN -> ReLU -> max pool -> flatten -> Gemm; the image side, the weights' seed and
// the conv's pads (same output size: top + bottom and left + right 2) vary.
constexpr const char* kMakeModel = R"py(
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper
side, seed, pads = int(sys.argv[2]), int(sys.argv[3]), [int(p) for p in sys.argv[4].split(",")]
rng = np.random.default_rng(seed)
def c(name, *shape, lo=-0.5, hi=0.5):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)
half = (side + 1) // 2
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=pads, name="conv"),
         helper.make_node("BatchNormalization", ["c", "g", "beta", "m", "v"], ["n"], name="bn"),
         helper.make_node("Relu", ["n"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, name="pool"),
         helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
         helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1, name="fc")]
inits = [c("w", 16, 8, 3, 3), c("b", 16), c("g", 16, lo=0.5, hi=1.5), c("beta", 16), c("m", 16),
         c("v", 16, lo=0.5, hi=1.5), c("fc", 10, 16 * half * half), c("fcb", 10)]
g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 8, side, side])],
                      [helper.make_tensor_value_info("y", T.FLOAT, ["N", 10])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
)py";

// The convs the engine runs on the 2-D kernel after a rewrite (frontend/phase_conv.hpp): a 3-D
// conv with its ReLU, a 3-D conv whose residual Add is followed by a LeakyRelu (no conv
// epilogue computes it: a host job leaves the node untuned, its Add fused into it), reshaped to
// 2-D for a dilated conv with its ReLU.
constexpr const char* kMakeRewritten = R"py(
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper
rng = np.random.default_rng(5)
def c(name, *shape):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
n = helper.make_node
nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3, 3], pads=[1] * 6, name="conv3d"),
         n("Relu", ["c1"], ["r1"], name="relu3d"),
         n("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1], name="gate3d"),
         n("Add", ["c2", "r1"], ["a2"], name="add3d"),
         n("Elu", ["a2"], ["l2"], alpha=0.5, name="elu3d"),
         n("Reshape", ["l2", "flat"], ["s"], name="to2d"),
         n("Conv", ["s", "w3", "b3"], ["c3"], kernel_shape=[3, 3], pads=[2] * 4, dilations=[2, 2], name="dilated"),
         n("Relu", ["c3"], ["y"], name="relu2d")]
inits = [c("w1", 8, 4, 3, 3, 3), c("b1", 8), c("w2", 8, 8, 1, 3, 3), c("b2", 8), c("w3", 8, 32, 3, 3), c("b3", 8),
         numpy_helper.from_array(np.array([1, 32, 20, 20], np.int64), "flat")]
g = helper.make_graph(nodes, "rewritten", [helper.make_tensor_value_info("x", T.FLOAT, [1, 4, 4, 20, 20])],
                      [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
)py";

class EngineModelTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("atvoss-engine-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "make.py") << kMakeModel;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string model(const std::string& name, int side, int seed, const std::string& pads = "1,1,1,1") const {
    const std::string path = (dir_ / name).string();
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const std::string cmd = python + " " + (dir_ / "make.py").string() + " " + path + " " + std::to_string(side) + " " +
                            std::to_string(seed) + " " + pads;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "scripts/setup.sh installs python3-onnx";
    return path;
  }

  // A host job on the file, run as atvoss-tune runs it.
  tuner::TunedModel tuned_on_host(const std::string& onnx) const {
    const tuner::JobSpec spec = tuner::JobSpec::from_json(Json{{"name", "tiny"},
                                                               {"target", "host"},
                                                               {"model", onnx},
                                                               {"trials", 6},
                                                               {"batch_size", 3},
                                                               {"seed", 2},
                                                               {"database", (dir_ / "j.db").string()},
                                                               {"export", (dir_ / "j-table.json").string()},
                                                               {"report", (dir_ / "j.html").string()}});
    tuner::JobRunOptions quiet;
    quiet.quiet = true;
    return tuner::run_job(spec, quiet);
  }

  // A host job on the file, planned and exported as atvoss-tune does: the plan's path.
  std::string host_plan(const std::string& onnx) const {
    const tuner::TunedModel tuned = tuned_on_host(onnx);
    const plan::PlannedModel planned = plan::plan_model(tuned, plan::task_histories(tuned));
    plan::export_plan(planned.plan, tuned.spec.export_path, tuned.spec.model_plan_path);
    return tuned.spec.model_plan_path;
  }

  static void expect_refused(const std::function<void()>& f, const std::string& says) {
    try {
      f();
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input()) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
};

TEST_F(EngineModelTest, APlanOfThisCpuRunsItsSchedulesAndTheDefaultsOutputs) {
  const std::string onnx = model("tiny.onnx", 12, 1);
  ModelOptions o;
  o.plan = host_plan(onnx);
  Model planned(onnx, o);
  Model plain(onnx);
  const Json d = planned.describe();
  EXPECT_GT(d["kernels"].get<int>(), 0);
  EXPECT_EQ(d["kernels_from_plan"], d["kernels"]);  // every kernel step runs the plan's schedule
  EXPECT_EQ(plain.describe()["kernels_from_plan"], 0);
  std::vector<float> x(std::size_t(elements(plain.inputs()[0].shape)));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : x) v = u(rng);
  const auto a = planned.run({x.data()}), b = plain.run({x.data()});
  ASSERT_EQ(a[0].size(), 10u);
  for (std::size_t i = 0; i < a[0].size(); ++i) {
    EXPECT_NEAR(a[0][i], b[0][i], 1e-4f * std::max(1.0f, std::abs(b[0][i])));
  }
  EXPECT_GT(planned.arena_bytes(), 0);
}

// A conv with pads that differ by side is the importer's im2col matmul task, and the engine runs
// that task's tuned kernel: every kernel step takes the plan's schedule. Seen failing while the
// importer left the conv untuned (its matmul then ran the default schedule).
TEST_F(EngineModelTest, AConvOfUnevenPadsRunsThePlansIm2colMatmul) {
  const std::string onnx = model("uneven.onnx", 12, 1, "0,1,2,1");
  ModelOptions o;
  o.plan = host_plan(onnx);
  const Json d = Model(onnx, o).describe();
  int im2col = 0;
  for (const Json& s : d["steps"]) im2col += s.value("as", "") == "im2col" ? 1 : 0;
  EXPECT_EQ(im2col, 1) << d.dump();
  EXPECT_EQ(d["kernels"], 2) << d.dump();  // the conv's matmul and the Gemm
  EXPECT_EQ(d["kernels_from_plan"], d["kernels"]) << d.dump();
}

// The 3-D and dilated convs' tasks are the 2-D convs the engine runs: a plan's schedules run
// them, and its outputs are the default's, where one conv's fused chain ends in a node no host
// kernel computes (an Elu, tuned at a LeakyRelu's cost: the kernel runs the plan's nearest
// schedule and the Elu after it; seen failing: the engine ran the fused Add twice, or the
// activation twice).
TEST_F(EngineModelTest, APlanRunsTheRewrittenConvsAndTheFusedNodesNoKernelComputes) {
  const std::string onnx = (dir_ / "rewritten.onnx").string();
  std::ofstream(dir_ / "rewritten.py") << kMakeRewritten;
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = python + " " + (dir_ / "rewritten.py").string() + " " + onnx;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ModelOptions o;
  o.plan = host_plan(onnx);
  Model planned(onnx, o);
  Model plain(onnx);
  const Json d = planned.describe();
  std::multiset<std::string> as;
  int elu = 0;  // the conv's fused Elu runs once
  for (const Json& s : d["steps"]) {
    if (s["kind"] == "kernel") as.insert(s.value("as", "") + (s.value("choice", "") == "exact" ? " (plan)" : ""));
    elu += s.value("op", "") == "Elu" ? 1 : 0;
  }
  EXPECT_EQ(elu, 1) << d.dump();
  EXPECT_EQ(as, (std::multiset<std::string>{"3-D conv, depth by depth (plan)", "3-D conv, depth by depth",
                                            "dilated conv as d x d phase images (plan)"}))
      << d.dump();
  std::vector<float> x(std::size_t(elements(plain.inputs()[0].shape)));
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : x) v = u(rng);
  const auto a = planned.run({x.data()}), b = plain.run({x.data()});
  ASSERT_EQ(a[0].size(), b[0].size());
  for (std::size_t i = 0; i < a[0].size(); ++i) {
    EXPECT_NEAR(a[0][i], b[0][i], 1e-4f * std::max(1.0f, std::abs(b[0][i])));
  }
}

// A float32 model is tuned in float32 on a CPU, with no word of float16: the importer had read
// it as float16 (an NPU's default), and the job then warned that float16 "is not supported".
TEST_F(EngineModelTest, AHostJobTunesAFloat32ModelInFloat32WithoutAPrecisionWarning) {
  const tuner::TunedModel tuned = tuned_on_host(model("tiny.onnx", 12, 1));
  EXPECT_TRUE(tuned.precision_warnings.empty()) << tuned.precision_warnings.front();
  ASSERT_FALSE(tuned.model.tasks().empty());
  for (const auto& t : tuned.model.tasks()) EXPECT_EQ(t.workload.dtype(), DType::float32) << t.name;
}

// A plan whose kernels run on two threads, opened to run on one core, runs them on one: the
// caller's thread count caps the plan's (a second thread on a busy core waits out time slices).
TEST_F(EngineModelTest, TheCallersThreadsCapThePlansThreads) {
  const std::string onnx = model("tiny.onnx", 12, 1);
  plan::ModelPlan p = plan::ModelPlan::load(host_plan(onnx));
  for (auto& t : p.tasks) t.schedule.set("threads", 2);
  const std::string two = (dir_ / "two-threads.json").string();
  plan::export_plan(p, (dir_ / "two-threads-table.json").string(), two);
  auto threads_run = [&](int cap) {
    ModelOptions o;
    o.plan = two;
    o.threads = cap;
    std::set<std::int64_t> seen;
    const Json d = Model(onnx, o).describe();
    for (const auto& step : d["steps"]) {
      if (step["kind"] == "kernel") seen.insert(step["schedule"]["threads"].get<std::int64_t>());
    }
    return seen;
  };
  EXPECT_EQ(threads_run(1), std::set<std::int64_t>{1});
  EXPECT_EQ(threads_run(0), std::set<std::int64_t>{2});  // 0: every core, the plan's own
}

TEST_F(EngineModelTest, PlansOfAnotherCpuModelOrWeightsAreRefused) {
  const std::string onnx = model("tiny.onnx", 12, 1);
  ModelOptions o;
  o.plan = host_plan(onnx);
  // Another CPU: the plan's target renamed as another machine's fingerprint would name it.
  plan::ModelPlan p = plan::ModelPlan::load(o.plan);
  p.target.name = "host-000000000000";
  std::ofstream((dir_ / "other-cpu.json").string()) << p.to_json().dump();
  ModelOptions other_cpu = o;
  other_cpu.plan = (dir_ / "other-cpu.json").string();
  expect_refused([&] { Model(onnx, other_cpu); }, "not on this CPU");
  // Another model: other shapes.
  expect_refused([&] { Model(model("wide.onnx", 14, 1), o); }, "is not of");
  // The same shapes, other weights.
  expect_refused([&] { Model(model("reseeded.onnx", 12, 9), o); }, "other weights");
  // A truncated plan.
  const std::string text = p.to_json().dump();
  std::ofstream((dir_ / "cut.json").string()) << text.substr(0, text.size() / 2);
  ModelOptions cut = o;
  cut.plan = (dir_ / "cut.json").string();
  expect_refused([&] { Model(onnx, cut); }, "cut.json");
}

TEST_F(EngineModelTest, WrongInputsAreRefused) {
  Model m(model("tiny.onnx", 12, 1));
  std::vector<float> x(std::size_t(elements(m.inputs()[0].shape)));
  std::vector<float> y(10);
  expect_refused([&] { m.run({}, {y.data()}); }, "1 inputs and 1 outputs expected");
  expect_refused([&] { m.run({nullptr}, {y.data()}); }, "input 'x' is null");
  expect_refused([&] { m.run({x.data()}, {nullptr}); }, "output 'y' is null");
}

TEST_F(EngineModelTest, TheBatchBindsTheSymbolicDims) {
  ModelOptions o;
  o.batch = 3;
  Model m(model("tiny.onnx", 12, 1), o);
  EXPECT_EQ(m.inputs()[0].shape, (Shape{3, 8, 12, 12}));
  EXPECT_EQ(m.outputs()[0].shape, (Shape{3, 10}));
}

}  // namespace
}  // namespace atvoss::engine
