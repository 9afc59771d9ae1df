// The runner's timing protocol (host/kernel_timing.hpp): what the timed calls read.
#include "host/kernel_timing.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::TempDir;
using testing::workload;

struct Counts {
  long prepacked_calls = 0;  // calls with qb_packed set
  long changes = 0;          // calls whose qb_packed differs from the call before
};

// w's default kernel built with counters of the calls that read prepacked weights and of the
// changes of those weights' address, timed by time_kernel; returns the runner's result and them.
std::pair<Json, Counts> time_counting_prepacked_calls(const Workload& w) {
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string entry = "extern \"C\" void atvoss_kernel(const AtvossArgs* g) {\n";
  EXPECT_NE(src.find(entry), std::string::npos);
  src.replace(src.find(entry), entry.size(),
              "extern \"C\" { long atvoss_test_prepacked_calls = 0, atvoss_test_changes = 0; }\n"
              "static const void* atvoss_test_last = nullptr;\n" +
                  entry +
                  "  if (g->qb_packed) ++atvoss_test_prepacked_calls;\n"
                  "  if (g->qb_packed != atvoss_test_last) ++atvoss_test_changes, atvoss_test_last = g->qb_packed;\n");
  TempDir cache;
  BuildOptions options;
  options.cache_dir = cache.str();
  const auto built = build_all({src}, options);
  EXPECT_EQ(built[0].status, Status::ok) << built[0].message;
  TimingOptions timing;
  timing.min_repeat_us = 50;
  const Json r = time_kernel(built[0].so_path, w, timing);
  void* handle = ::dlopen(built[0].so_path.c_str(), RTLD_NOW | RTLD_LOCAL);  // the runner's, still loaded
  EXPECT_NE(handle, nullptr);
  Counts counts;
  if (handle) {
    counts.prepacked_calls = *static_cast<const long*>(::dlsym(handle, "atvoss_test_prepacked_calls"));
    counts.changes = *static_cast<const long*>(::dlsym(handle, "atvoss_test_changes"));
    ::dlclose(handle);
  }
  return {r, counts};
}

// A matmul's B is a layer's weights, which a model packs once at load: its timed calls read
// them prepacked, as a conv's do (the tuner ranked schedules that pack B in every call behind
// one that reads it in place, and the model then ran them slower: ResNet-50's classifier).
// And, as in a model, from memory: the calls rotate over copies of them.
TEST(KernelTimingTest, AMatmulIsTimedWithItsWeightsPrepackedAndCold) {
  const auto [r, counts] =
      time_counting_prepacked_calls(workload(R"({"op":"matmul","dtype":"float32","dims":{"M":24,"N":96,"K":64}})"));
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_TRUE(r.at("prepacked_weights").get<bool>()) << r.dump();
  // The prepacked path's check and every timed repeat.
  const long timed = 5 * r.at("inner").get<long>();
  EXPECT_GE(counts.prepacked_calls, 1 + timed) << r.dump();
  const long copies = r.at("weight_copies").get<long>();
  EXPECT_GT(copies, 1) << r.dump();
  EXPECT_GE(counts.changes, std::min(timed, copies)) << r.dump();
}

// A batch_matmul's B is an activation (attention's keys and values): packed in every call.
TEST(KernelTimingTest, ABatchMatmulPacksItsActivationsInEveryCall) {
  const auto [r, counts] = time_counting_prepacked_calls(
      workload(R"({"op":"batch_matmul","dtype":"float32","dims":{"B":2,"M":24,"N":96,"K":64}})"));
  ASSERT_EQ(r.at("status"), "ok") << r.dump();
  EXPECT_FALSE(r.at("prepacked_weights").get<bool>()) << r.dump();
  EXPECT_EQ(counts.prepacked_calls, 1) << r.dump();  // the prepacked path's check only
  EXPECT_EQ(r.at("weight_copies").get<long>(), 0) << r.dump();
}

}  // namespace
}  // namespace atvoss::host
