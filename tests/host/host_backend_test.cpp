// The backend "host": dispatch by target organisation, a schedule measured end to end, an
// invalid schedule is the candidate's error, and another CPU's fingerprint is refused.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "host/machine.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::workload;

const Workload kMatmul =
    workload(R"({"op":"matmul","dtype":"float32","dims":{"M":30,"N":20,"K":10},"epilogue":["bias","gelu"]})");

TEST(HostBackendTest, ServesCpuTargetsOnly) {
  const Target host = backend::load_target("host");
  EXPECT_EQ(backend::backend_for(kMatmul, host).name(), "host");
  EXPECT_EQ(backend::backend_for(kMatmul, backend::load_target("ascend910")).name(), "npu-sim");
}

TEST(HostBackendTest, MeasuresTheDefaultAndRejectsAnInvalidSchedule) {
  const Target host = backend::load_target("host");
  const Schedule def = backend::required_default(kMatmul, host);
  const Measurement m = backend::measure_one({kMatmul, host, def, 3, 1});
  ASSERT_EQ(m.status, Status::ok) << m.message;
  EXPECT_GT(m.time_us, 0);
  EXPECT_GT(m.profile.cube_utilisation, 0);
  EXPECT_EQ(m.profile.kernels, 1);  // bias and gelu fused at the default level

  const Workload deep = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":30,"N":20,"K":512}})");
  const Schedule bad = testing::rejected_schedule(deep);
  const Verdict v = space_for(deep, this_machine()).check(bad);
  ASSERT_FALSE(v.ok);
  const Measurement b = backend::measure_one({deep, host, bad, 3, 1});
  EXPECT_EQ(b.status, Status::invalid);
  EXPECT_NE(b.message.find(v.reason), std::string::npos) << b.message;
}

// A measurement asked for as in a model (MeasureOptions::as_in_a_model, the model plan's
// check) reaches the runner as --as-in-a-model, and only then: a stand-in runner answers 1 us
// with the flag and 2 us without it.
TEST(HostBackendTest, AMeasurementAsInAModelReachesTheRunner) {
  testing::TempDir dir;
  const auto runner = dir.path() / "runner.sh";
  std::ofstream(runner) << R"(#!/bin/sh
case " $* " in
  *' --as-in-a-model '*) echo '{"status":"ok","time_us":1,"repeats":[1]}' ;;
  *) echo '{"status":"ok","time_us":2,"repeats":[2]}' ;;
esac
)";
  ::chmod(runner.c_str(), 0755);
  ::setenv("ATVOSS_KERNEL_RUNNER", runner.c_str(), 1);
  const Target host = backend::load_target("host");
  const Schedule def = backend::required_default(kMatmul, host);
  backend::MeasureOptions in_model;
  in_model.as_in_a_model = true;
  const Measurement awake = backend::measure_one({kMatmul, host, def, 3, 1}, in_model);
  const Measurement alone = backend::measure_one({kMatmul, host, def, 3, 1});
  ::unsetenv("ATVOSS_KERNEL_RUNNER");
  ASSERT_TRUE(awake.ok()) << awake.message;
  ASSERT_TRUE(alone.ok()) << alone.message;
  EXPECT_EQ(awake.time_us, 1);
  EXPECT_EQ(alone.time_us, 2);
}

TEST(HostBackendTest, AnotherCpusFingerprintIsRefused) {
  Target other = backend::load_target("host");
  other.name = "host-000000000000";
  ASSERT_NE(other.name, this_machine().target_name());
  try {
    backend::space_for(kMatmul, other);
    FAIL() << "expected bad_input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host-000000000000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(this_machine().target_name()), std::string::npos) << e.what();
  }
  const Schedule def = backend::required_default(kMatmul, backend::load_target("host"));
  EXPECT_THROW(backend::measure_one({kMatmul, other, def, 3, 1}), Error);
}

}  // namespace
}  // namespace atvoss::host
