// record_host_spaces as the benches use it: its CSV loads as a recorded space with the host
// knobs, and a rerun resumes (keeps what is there, adds only what is missing). Real compiles
// and runs of a few 256^3 kernels; the compile cache in the build tree makes reruns fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include "cli_harness.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::cli_test {
namespace {

class RecordHostSpacesCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ::setenv("XDG_CACHE_HOME", ATVOSS_BIN_DIR "/../test-cache", 1);
  }
  CliResult record(int points) const {
    return run_tool("record_host_spaces", "--workloads matmul_256 --seed 1 --batch 4 --points " +
                                              std::to_string(points) + " --out " + file("spaces"));
  }
};

std::vector<std::string> knob_names(const RecordedSpace& rs) {
  std::vector<std::string> names;
  for (const auto& k : rs.space().knobs()) names.push_back(k.name);
  return names;
}

TEST_F(RecordHostSpacesCli, WritesARecordedSpaceAndResumesIt) {
  const CliResult r = record(3);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string path = file("spaces") + "/matmul_256.csv";
  const std::string first = slurp(path);
  const auto rs = RecordedSpace::parse(first, path);
  EXPECT_EQ(rs->recorded_count(), 3u);
  // threads too, holding only 1: the recorder makes single-thread landscapes.
  EXPECT_THAT(knob_names(*rs), ::testing::ElementsAre("micro_m", "micro_n", "tile_m", "tile_n", "tile_k", "k_steps",
                                                      "async_copy_depth", "tile_order", "fusion_level", "threads"));
  EXPECT_EQ(rs->space().knobs().back().values, (std::vector<std::int64_t>{1}));
  ASSERT_TRUE(rs->optimum_us().has_value());
  EXPECT_GT(*rs->optimum_us(), 0);

  // One more point: the three rows stay as they were, one row is added, none repeated
  // (parse refuses a duplicate configuration).
  const CliResult again = record(4);
  ASSERT_EQ(again.code, 0) << again.err << again.out;
  const std::string second = slurp(path);
  EXPECT_EQ(second.substr(0, first.size()), first);
  EXPECT_EQ(RecordedSpace::parse(second, path)->recorded_count(), 4u);
}

}  // namespace
}  // namespace atvoss::cli_test
