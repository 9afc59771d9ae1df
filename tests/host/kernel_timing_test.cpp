// The runner's timing protocol (host/kernel_timing.hpp): what the timed calls read and write.
#include "host/kernel_timing.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::TempDir;
using testing::workload;

// w's default kernel with the counters `names` (extern "C" longs, 0 at load) and `count`, C++
// statements at the top of its entry point that bump them, timed by time_kernel (the kernel
// reads its arguments as g) with repeats of min_repeat_us; returns the runner's result and the
// counters after it.
std::pair<Json, std::map<std::string, long>> time_counting(const Workload& w, const std::vector<std::string>& names,
                                                           const std::string& count, TimingOptions timing = {},
                                                           double min_repeat_us = 50) {
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string entry = "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n";
  EXPECT_NE(src.find(entry), std::string::npos);
  std::string globals = "static const void* atvoss_test_last = nullptr;\n";
  for (const auto& n : names) globals += "extern \"C\" { long " + n + " = 0; }\n";
  src.replace(src.find(entry), entry.size(), globals + entry + count);
  TempDir cache;
  BuildOptions options;
  options.cache_dir = cache.str();
  const auto built = build_all({src}, options);
  EXPECT_EQ(built[0].status, Status::ok) << built[0].message;
  timing.min_repeat_us = min_repeat_us;
  const Json r = time_kernel(built[0].so_path, w, timing);
  std::map<std::string, long> counters;
  void* handle = ::dlopen(built[0].so_path.c_str(), RTLD_NOW | RTLD_LOCAL);  // the runner's, still loaded
  EXPECT_NE(handle, nullptr);
  if (handle) {
    for (const auto& n : names) counters[n] = *static_cast<const long*>(::dlsym(handle, n.c_str()));
    ::dlclose(handle);
  }
  return {r, counters};
}

// Counts the calls that read prepacked weights and the changes of their address.
std::pair<Json, std::map<std::string, long>> time_counting_prepacked_calls(const Workload& w,
                                                                           double min_repeat_us = 50) {
  return time_counting(w, {"prepacked_calls", "changes"},
                       "  if (g->qb_packed) ++prepacked_calls;\n"
                       "  if (g->qb_packed != atvoss_test_last) ++changes, atvoss_test_last = g->qb_packed;\n",
                       {}, min_repeat_us);
}

// A matmul's B is a layer's weights, which a model packs once at load: its timed calls read
// them prepacked, as a conv's do (the tuner ranked schedules that pack B in every call behind
// one that reads it in place, and the model then ran them slower: ResNet-50's classifier).
// And, as in a model, from memory: the calls rotate over copies of them.
TEST(KernelTimingTest, AMatmulIsTimedWithItsWeightsPrepackedAndCold) {
  auto [r, counts] =
      time_counting_prepacked_calls(workload(R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":288,"K":64}})"));
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_TRUE(r.at("prepacked_weights").get<bool>()) << r.dump();
  // The prepacked path's check and every timed repeat.
  const long timed = 5 * r.at("inner").get<long>();
  EXPECT_GE(counts["prepacked_calls"], 1 + timed) << r.dump();
  const long copies = r.at("weight_copies").get<long>();
  EXPECT_GT(copies, 1) << r.dump();
  EXPECT_GE(counts["changes"], std::min(timed, copies)) << r.dump();
}

// A right kernel's fp32 sums over many terms drift further from the double reference: the check
// allows for it (seen failing: tiny YOLOv3's 512 -> 1024 3x3 conv, 4608 terms, 1.1e-4 off, and
// a job refused its vendor default).
TEST(KernelTimingTest, TheErrorAllowedGrowsWithTheTermsEachOutputSums) {
  EXPECT_EQ(allowed_relative_error(workload(R"({"op":"matmul","dtype":"float32","dims":{"M":8,"N":8,"K":1024}})")),
            kMaxRelativeError);
  EXPECT_EQ(allowed_relative_error(workload(R"({"op":"softmax","dtype":"float32","dims":{"M":8,"N":9000}})")),
            kMaxRelativeError);
  const Workload conv = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":512,"H":13,"W":13,"K":1024,"R":3,"S":3,"pad":1},"epilogue":["bias","leaky_relu"]})");
  EXPECT_NEAR(allowed_relative_error(conv), kMaxRelativeError * std::sqrt(4.5), 1e-12);
  const Json r = time_counting(conv, {}, "").first;
  EXPECT_EQ(r.at("status"), "ok") << r.dump();
}

// A kernel slower than a repeat's minimum is timed one call per repeat (as on a loaded machine):
// those calls still rotate over the weights' copies, each repeat reading the next one.
TEST(KernelTimingTest, ACallPerRepeatStillReadsTheNextCopyOfTheWeights) {
  auto [r, counts] = time_counting_prepacked_calls(
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":288,"K":64}})"), /*min_repeat_us=*/0);
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  ASSERT_EQ(r.at("inner").get<long>(), 1) << r.dump();
  const long copies = r.at("weight_copies").get<long>();
  ASSERT_GT(copies, 5) << r.dump();
  // The check's call, the warm-up, the call at the timed size and five timed repeats.
  EXPECT_GE(counts["changes"], 7) << r.dump();
}

// A batch_matmul's B is an activation (attention's keys and values): packed in every call.
TEST(KernelTimingTest, ABatchMatmulPacksItsActivationsInEveryCall) {
  auto [r, counts] = time_counting_prepacked_calls(
      workload(R"({"op":"batch_matmul","dtype":"float32","dims":{"B":2,"M":24,"N":288,"K":64}})"));
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_FALSE(r.at("prepacked_weights").get<bool>()) << r.dump();
  EXPECT_EQ(counts["prepacked_calls"], 1) << r.dump();  // the prepacked path's check only
  EXPECT_EQ(r.at("weight_copies").get<long>(), 0) << r.dump();
}

// The runner times a u8-output kernel writing its codes (the call an int8 chain makes): a
// counter the kernel bumps on every call with qc set sees the timed calls, not only the check.
TEST(KernelTimingTest, AU8OutputKernelIsTimedWritingItsCodes) {
  auto [r, counts] = time_counting(
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":32,"K":16},"epilogue":["bias","quantize"]})"),
      {"code_calls"}, "  if (g->qc) ++code_calls;\n");
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_TRUE(r.at("u8_output").get<bool>());
  // The check's one call, the warm-ups and every timed repeat.
  EXPECT_GE(counts["code_calls"], 1 + 5 * r.at("inner").get<long>()) << r.dump();
}

// A kernel timed as in a model (TimingOptions::as_in_a_model) runs under a libgomp spin
// (GOMP_SPINCOUNT, read when the kernel loads libgomp) and writes its output to, and reads its
// residual from, a different copy call after call, as a model's layer finds them cold; timed
// alone, under no spin, into one output from one residual. The kernel itself sees both.
TEST(KernelTimingTest, AKernelTimedAsInAModelSpinsAndFindsItsOutputAndResidualCold) {
  ASSERT_EQ(std::getenv("GOMP_SPINCOUNT"), nullptr) << "the test's environment sets GOMP_SPINCOUNT";
  const Workload w =
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":32,"K":16},"epilogue":["bias","add"]})");
  const std::vector<std::string> names = {"spin_calls", "outputs", "residuals", "last_output", "last_residual"};
  const std::string count =
      "  if (std::getenv(\"GOMP_SPINCOUNT\")) spin_calls = 1;\n"
      "  if (long(g->c) != last_output) ++outputs, last_output = long(g->c);\n"
      "  if (long(g->residual) != last_residual) ++residuals, last_residual = long(g->residual);\n";
  auto [alone, alone_counts] = time_counting(w, names, count);
  ASSERT_EQ(alone.at("status"), "ok") << alone.dump();
  EXPECT_EQ(alone_counts["spin_calls"], 0);
  EXPECT_EQ(alone_counts["outputs"], 1);
  EXPECT_EQ(alone_counts["residuals"], 1);
  EXPECT_FALSE(alone.at("as_in_a_model").get<bool>());
  TimingOptions awake;
  awake.as_in_a_model = true;
  auto [in_model, model_counts] = time_counting(w, names, count, awake);
  ASSERT_EQ(in_model.at("status"), "ok") << in_model.dump();
  EXPECT_EQ(model_counts["spin_calls"], 1);
  EXPECT_GT(model_counts["outputs"], 2);
  EXPECT_GT(model_counts["residuals"], 2);
  EXPECT_TRUE(in_model.at("as_in_a_model").get<bool>());
}

}  // namespace
}  // namespace atvoss::host
