// Backends: dispatch by workload and target, the recorded tables served through the
// same calls as the simulator, and a backend registered from outside the library.
#include "backend/backend.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/targets.hpp"
#include "core/error.hpp"
#include "lowering/lowering.hpp"
#include "simulator/analysis.hpp"

namespace atvoss::backend {
namespace {

Workload workload(const std::string& text) { return Workload::from_json(parse_json(text, "workload")); }

const Workload kMatmul = workload(R"({"op":"matmul","dims":{"M":256,"N":256,"K":256}})");

TEST(BackendTest, DispatchesByWorkload) {
  const Target t = load_target("ascend910b");
  EXPECT_EQ(backend_for(kMatmul, t).name(), "npu-sim");
  EXPECT_EQ(backend_for(workload(R"({"op":"recorded","table":"x.csv"})"), t).name(), "recorded");
  EXPECT_EQ(backend_named("recorded").name(), "recorded");
  EXPECT_THROW(backend_named("tpu"), Error);
}

TEST(BackendTest, NpuSimLowersAndMeasuresTheSameSpaceAsLowering) {
  const Target t = load_target("ascend910");
  const Backend& b = backend_for(kMatmul, t);
  const ScheduleSpace space = b.space(kMatmul, t);
  EXPECT_EQ(space.size(), lowering::space_for(kMatmul, t).size());
  const Schedule def = *b.default_schedule(kMatmul, t);
  EXPECT_TRUE(space.check(def).ok);
  const auto plan = b.lower(kMatmul, t, def);
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->verdict.ok);
  EXPECT_DOUBLE_EQ(plan->flops, kMatmul.flops());
  const Measurement m = measure_one(MeasureRequest{kMatmul, t, def, 1, 0}, MeasureOptions{0});
  EXPECT_TRUE(m.ok());
  EXPECT_GT(m.time_us, 0);
}

TEST(BackendTest, RecordedTableIsItsOwnMeasurement) {
  const auto path =
      std::filesystem::temp_directory_path() /
      ("atvoss_backend_recorded_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".csv");
  std::ofstream(path) << "block_x,block_y,time_us,status\n"
                         "32,1,12.5,ok\n32,2,10.0,ok\n64,1,8.25,ok\n64,2,0,compile_error\n";
  const Workload w = workload(R"({"op":"recorded","table":")" + path.string() + R"("})");
  const Target t = load_target("ascend910b");
  const ScheduleSpace space = space_for(w, t);
  ASSERT_EQ(space.dimensions(), 2u);
  EXPECT_EQ(space.knobs()[0].name, "block_x");
  EXPECT_FALSE(default_schedule(w, t).has_value());
  EXPECT_FALSE(backend_for(w, t).lower(w, t, Schedule({{"block_x", 64}, {"block_y", 1}})).has_value());
  EXPECT_THROW(required_default(w, t), Error);
  const Measurement ok = measure_one(MeasureRequest{w, t, Schedule({{"block_x", 64}, {"block_y", 1}})});
  EXPECT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok.time_us, 8.25);
  EXPECT_FALSE(measure_one(MeasureRequest{w, t, Schedule({{"block_x", 64}, {"block_y", 2}})}).ok());
  std::filesystem::remove(path);
}

// A backend added from outside: asked before the built-ins, so it can claim a target.
class FixedBackend final : public Backend {
 public:
  std::string name() const override { return "fixed-test"; }
  bool serves(const Workload&, const Target& t) const override { return t.name == "fixed-test-chip"; }
  ScheduleSpace space(const Workload&, const Target&) const override { return ScheduleSpace({{"x", {1, 2}}}, nullptr); }
  std::optional<Schedule> default_schedule(const Workload&, const Target&) const override {
    return Schedule({{"x", 1}});
  }
  std::optional<lowering::KernelPlan> lower(const Workload&, const Target&, const Schedule&) const override {
    return std::nullopt;
  }
  std::vector<Measurement> measure(std::span<const MeasureRequest> batch, const MeasureOptions&) const override {
    std::vector<Measurement> out;
    for (const auto& r : batch) {
      Measurement m;
      m.time_us = double(r.schedule.at("x"));
      m.repeats = {m.time_us};
      out.push_back(m);
    }
    return out;
  }
};

TEST(BackendTest, RegisteredBackendServesItsTargets) {
  register_backend(std::make_shared<FixedBackend>());
  EXPECT_THROW(register_backend(std::make_shared<FixedBackend>()), Error);
  Target chip = load_target("ascend910b");
  chip.name = "fixed-test-chip";
  EXPECT_EQ(backend_for(kMatmul, chip).name(), "fixed-test");
  EXPECT_EQ(backend_for(kMatmul, load_target("ascend910b")).name(), "npu-sim");
  EXPECT_DOUBLE_EQ(measure_one(MeasureRequest{kMatmul, chip, Schedule({{"x", 2}})}).time_us, 2.0);
}

// Callers ask the traits, never which backend they hold: the host's target is noisy,
// machine-bound (a farm routes it by its name) and limited to the physical cores; an NPU
// target is none of these; another CPU's host target is refused by the backend that serves it.
TEST(BackendTest, TraitsSayHowABackendMeasures) {
  const Target host = load_target("host");
  const Target npu = load_target("ascend910b");
  EXPECT_TRUE(traits_for(kMatmul, npu).noisy == false && traits_for(kMatmul, npu).peak_gflops == 0);
  const Workload cpu_matmul = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":64}})");
  const BackendTraits on_host = traits_for(cpu_matmul, host);
  EXPECT_TRUE(on_host.noisy && on_host.machine_bound);
  EXPECT_GT(on_host.peak_gflops, 0);
  EXPECT_EQ(target_traits(host).max_concurrent, on_host.max_concurrent);
  EXPECT_GE(target_traits(host).max_concurrent, 1);
  EXPECT_TRUE(target_traits(host).machine_bound);
  EXPECT_FALSE(target_traits(npu).machine_bound);
  EXPECT_EQ(target_traits(npu).max_concurrent, 0);
  EXPECT_TRUE(backend_named("host").serves_target(host));
  EXPECT_FALSE(backend_named("host").serves_target(npu));
  EXPECT_FALSE(backend_named("npu-sim").serves_target(host));
  Target other = host;
  other.name = "host-000000000000";  // another CPU's fingerprint
  EXPECT_NO_THROW(check_target(host));
  EXPECT_THROW(check_target(other), Error);
}

// Each backend reads its own measurements: the simulator its breakdown, the host the share of
// the CPU's peak (no cubes or DMA queues), a table nothing; a failed measurement is refused.
TEST(BackendTest, EachBackendAnalysesItsOwnMeasurements) {
  const Target npu = load_target("ascend910b");
  const Schedule def = *default_schedule(kMatmul, npu);
  const Measurement simulated = measure_one(MeasureRequest{kMatmul, npu, def, 1, 0}, MeasureOptions{0});
  EXPECT_EQ(analyze(kMatmul, npu, simulated, def).hint, simulator::analyze(simulated, def).hint);

  const Target host = load_target("host");
  const Workload cpu_matmul = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":64}})");
  Measurement m = Measurement::from_json(simulated.to_json());
  m.profile.cube_utilisation = 0.9;
  m.repeats = {30, 40, 50};  // a coefficient of variation of 20 %
  const Schedule two_threads({{"threads", 2}});
  const Analysis cpu = analyze(cpu_matmul, host, m, two_threads);
  EXPECT_EQ(cpu.bottleneck, "compute");
  EXPECT_NE(cpu.hint.find("90% of the peak FLOP/s of its 2 threads"), std::string::npos) << cpu.hint;
  EXPECT_NE(cpu.hint.find("vary by 20%"), std::string::npos) << cpu.hint;
  EXPECT_EQ(cpu.hint.find("cube"), std::string::npos) << cpu.hint;
  m.profile.cube_utilisation = 0.1;
  EXPECT_EQ(analyze(cpu_matmul, host, m, two_threads).bottleneck, "memory");

  EXPECT_EQ(backend_named("recorded").analyze(m, two_threads).bottleneck, "unknown");
  EXPECT_THROW(analyze(kMatmul, npu, Measurement::failed(Status::invalid, "too big"), def), Error);
}

// The vendor default on more cores is what the runtime runs there: on the host, a conv2d's
// pixel blocks re-blocked to share out evenly (56 rows in blocks of 4, not 16); a matmul's
// threads knob alone.
TEST(BackendTest, TheHostDefaultOnTwoThreadsIsTheOneTheRuntimeRuns) {
  const Target host = load_target("host");
  const Workload conv = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":256,"H":56,"W":56,"K":64,"R":1,"S":1,"pad":0,"stride":1}})");
  const Schedule def = required_default(conv, host);
  const Schedule two = default_on_threads(conv, host, def, 2);
  EXPECT_EQ(two.at("threads"), 2);
  EXPECT_EQ(def.at("tile_h"), 16);
  EXPECT_EQ(two.at("tile_h"), 4);
  const Workload mm = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":64,"K":64}})");
  Schedule expected = required_default(mm, host);
  expected.set("threads", 2);
  EXPECT_EQ(default_on_threads(mm, host, required_default(mm, host), 2), expected);
}

}  // namespace
}  // namespace atvoss::backend
