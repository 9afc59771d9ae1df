// atvoss-plan as a user runs it: a real process timing a collective on a hand-made topology,
// planning a zoo model's training step over devices (the plan file and the HTML page), and
// refusing bad input with exit 2 and the field named.
#include <sys/resource.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_harness.hpp"

#include "core/json.hpp"

namespace {

using ::testing::HasSubstr;

class PlanCliTest : public atvoss::cli_test::CliTest {};

const char* kOneLink = R"({"devices_per_server":2,"shape":"full_mesh","link":{"gb_per_s":10,"latency_us":1}})";

TEST_F(PlanCliTest, TimesACollectiveOnAHandMadeTopology) {
  const auto r = run_tool("atvoss-plan",
                          "--collective all_reduce --bytes 1000000 --devices 2 --algorithm ring --json "
                          "--topology " +
                              quote(kOneLink));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::Json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["us"].get<double>(), 102);  // 2 steps of 0.5 MB over 10 GB/s, 1 us each
  EXPECT_DOUBLE_EQ(j["lower_bound_us"].get<double>(), 100);
}

TEST_F(PlanCliTest, PlansAModelsTrainingStepAndWritesThePlanAndThePage) {
  const std::string plan = file("plan.json"), html = file("plan.html");
  const auto r = run_tool("atvoss-plan",
                          "--model mlp --devices 4 --topology ascend910b-server8 --trials 12 --seed 3 "
                          "--json --plan-out " +
                              plan + " --html " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = atvoss::Json::parse(r.out);
  EXPECT_EQ(j["model"], "mlp-train");
  const auto p = atvoss::Json::parse(slurp(plan));
  EXPECT_EQ(p["tp"].get<int>() * p["pp"].get<int>() * p["dp"].get<int>(), 4);
  EXPECT_EQ(p, j["plan"]);
  EXPECT_LE(j["search"]["us_per_batch"].get<double>(), j["search"]["data_parallel_us_per_batch"].get<double>());
  // Rows for 1, 2, 4 and 8 devices (the server has no 64), with and without overlap.
  EXPECT_EQ(j["scaling"].size(), 8u);
  // Memory per device: the plan's peak plus the weights' share with Adam's state (16 B per
  // parameter: 8x the fp16 weights), against the 910B's 64 GiB.
  const auto& m = j["search"]["memory"];
  EXPECT_GT(m["weights_and_optimizer_bytes"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(m["need_bytes"].get<double>(),
                   m["plan_peak_bytes"].get<double>() + m["weights_and_optimizer_bytes"].get<double>());
  EXPECT_TRUE(m["fits"].get<bool>());
  EXPECT_THAT(slurp(html), HasSubstr("<svg class=\"gantt\""));
}

TEST_F(PlanCliTest, BadInputExitsTwoNamingTheField) {
  auto r = run_tool("atvoss-plan", "--collective all_reduce --bytes 8 --topology " +
                                       quote(R"({"devices_per_server":2,"shape":"full_mesh","link":{"gb_per_s":-1}})"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("topology.link: field 'gb_per_s'"));
  r = run_tool("atvoss-plan", "--collective all_to_all --bytes 8");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("field 'collective'"));
  r = run_tool("atvoss-plan", "--model mlp --devices 99 --topology ascend910b-server8");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("field 'devices' must be in 1..8"));
  const std::string kept = file("kept.json", "{\"old\": true}\n");
  r = run_tool("atvoss-plan", "--model nope --plan-out " + kept);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(slurp(kept), "{\"old\": true}\n");  // a failed run loses nothing
}

// Inside the documented ranges, a mesh among 65536 devices built 4.3e9 transfers for one step
// and ended in std::bad_alloc at 2.1 GB (exit 1), as did a hierarchical all-reduce inside
// 1024-card full-mesh servers. The work is bounded before anything is allocated: such an
// algorithm is refused naming why (exit 2), and the fastest one is picked among those that
// fit. The runs are under a 3 GB address-space limit, so a regression fails, not the machine.
TEST_F(PlanCliTest, ACollectiveTooLargeToSimulateIsRefusedBeforeAllocating) {
  const std::string big = R"({"name":"big","servers":65536,"devices_per_server":1024,"shape":"full_mesh",)"
                          R"("link":{"gb_per_s":50,"latency_us":1},"nic":{"gb_per_s":25,"latency_us":2}})";
  const auto bounded = [&](const std::string& args) {
    rlimit before{};
    ::getrlimit(RLIMIT_AS, &before);
    rlimit limited = before;
    limited.rlim_cur = rlim_t{3} << 30;  // inherited by the tool; this process allocates nothing meanwhile
    ::setrlimit(RLIMIT_AS, &limited);
    const auto result = run_tool("atvoss-plan", "--collective all_reduce --bytes 100000000 " + args, "", 60);
    ::setrlimit(RLIMIT_AS, &before);
    return result;
  };
  auto r = bounded("--devices 65536 --topology ascend910b-server8-x8192 --algorithm mesh");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("collective: algorithm 'mesh' among 65536 devices sends 4294901760 transfers in one step"));
  r = bounded("--devices 1048576 --algorithm hierarchical --topology " + quote(big));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("algorithm 'hierarchical' among 1048576 devices"));
  r = bounded("--devices 1048576 --json --topology " + quote(big));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(atvoss::Json::parse(r.out)["algorithm"], "mesh");
}

}  // namespace
