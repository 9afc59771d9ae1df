// Many devices on tiny topologies with hand-computed answers: routes through meshes, rings
// and NICs; collective times against their bandwidth lower bound for every algorithm and
// size; data parallelism whose gradient AllReduces overlap the backward pass.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "distributed/collectives.hpp"
#include "distributed/data_parallel.hpp"
#include "distributed/device_memory.hpp"
#include "distributed/load_balance.hpp"
#include "distributed/parallel_plan.hpp"
#include "distributed/pipeline_parallel.hpp"
#include "distributed/tensor_parallel.hpp"
#include "distributed/topology.hpp"
#include "distributed/training_roles.hpp"
#include "execution/exec_graph.hpp"
#include "execution/memory_plan.hpp"
#include "frontend/model_zoo.hpp"
#include "frontend/training.hpp"

namespace atvoss::distributed {
namespace {

using Role = frontend::TrainingRole;

ParallelPlan plan(int tp, int pp, int dp, int micro_batches = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batches = micro_batches;
  return p;
}

Topology two_devices_one_link() {
  return Topology::from_json(
      Json{{"devices_per_server", 2}, {"shape", "full_mesh"}, {"link", {{"gb_per_s", 10}, {"latency_us", 1}}}});
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Topology, RoutesGoThroughTheLinksOfTheServerShapeAndTheNicsBetweenServers) {
  const Topology mesh = topology_preset("ascend910b-server8-x2");
  EXPECT_EQ(mesh.devices(), 16);
  EXPECT_EQ(mesh.route(0, 7).size(), 1u);
  const auto across = mesh.route(3, 11);
  ASSERT_EQ(across.size(), 2u);
  EXPECT_DOUBLE_EQ(across[0].bytes_per_us, 25e3);                // a 200GE NIC
  EXPECT_NE(across[0].resource, mesh.route(4, 12)[0].resource);  // each card its own NIC

  const Topology ring = topology_preset("ring8");
  EXPECT_EQ(ring.route(0, 3).size(), 3u);
  EXPECT_EQ(ring.route(0, 6).size(), 2u);                                 // the shorter way round
  EXPECT_EQ(ring.route(1, 2)[0].resource, ring.route(0, 2)[1].resource);  // 0 -> 2 passes 1 -> 2

  const Topology groups = topology_preset("ascend910-server8");
  EXPECT_EQ(groups.route(0, 3).size(), 1u);  // one HCCS mesh of 4
  const auto pcie = groups.route(0, 5);      // between the meshes: PCIe ports
  ASSERT_EQ(pcie.size(), 2u);
  EXPECT_DOUBLE_EQ(pcie[0].bytes_per_us, 24e3);
}

TEST(Topology, ABadDescriptionIsRefusedNamingTheField) {
  const Json good = {{"devices_per_server", 8},
                     {"shape", "mesh_groups"},
                     {"group_size", 4},
                     {"link", {{"gb_per_s", 30}}},
                     {"group_port", {{"gb_per_s", 24}}}};
  EXPECT_EQ(Topology::from_json(good).devices(), 8);
  Json j = good;
  j["group_size"] = 3;
  EXPECT_NE(message_of([&] { Topology::from_json(j); }).find("'group_size' must divide"), std::string::npos);
  j = good;
  j["link"]["gb_per_s"] = -1;
  EXPECT_NE(message_of([&] { Topology::from_json(j); }).find("topology.link: field 'gb_per_s'"), std::string::npos);
  j = good;
  j["servers"] = 2;  // servers need NICs
  EXPECT_NE(message_of([&] { Topology::from_json(j); }).find("'nic'"), std::string::npos);
  j = good;
  j["links"] = 1;
  EXPECT_NE(message_of([&] { Topology::from_json(j); }).find("unknown field 'links'"), std::string::npos);
  EXPECT_NE(message_of([] { topology_preset("ring8-xmany"); }).find("-x<servers>"), std::string::npos);
  EXPECT_NE(message_of([] { topology_preset("dgx"); }).find("ascend910b-server8"), std::string::npos);
}

// Seeded mutations of topology JSON (counts, shapes, links: zero, negative, huge, the wrong
// type, fields dropped) as a job spec or --topology may carry them: each loads or is refused
// as bad input, and every one that loads times an all-reduce on up to 4096 of its devices
// with a finite result or a bad-input refusal (a mesh among 65536 devices once ran out of
// memory). Bounded by count and time.
TEST(Topology, MutatedDescriptionsLoadOrAreRefusedAndTheirCollectivesStayBounded) {
  const Json seed = {{"servers", 2},
                     {"devices_per_server", 8},
                     {"shape", "mesh_groups"},
                     {"group_size", 4},
                     {"link", {{"gb_per_s", 30}, {"latency_us", 1}}},
                     {"group_port", {{"gb_per_s", 24}, {"latency_us", 2}}},
                     {"nic", {{"gb_per_s", 25}, {"latency_us", 3}}}};
  const std::vector<Json> values = {0,
                                    -1,
                                    1,
                                    2,
                                    3,
                                    7,
                                    1024,
                                    1025,
                                    65536,
                                    65537,
                                    1e300,
                                    -1e9,
                                    0.5,
                                    "x",
                                    nullptr,
                                    Json::array(),
                                    "full_mesh",
                                    "ring",
                                    "mesh_groups",
                                    std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::vector<std::string>> fields = {{"servers"},
                                                        {"devices_per_server"},
                                                        {"shape"},
                                                        {"group_size"},
                                                        {"link", "gb_per_s"},
                                                        {"link", "latency_us"},
                                                        {"group_port", "gb_per_s"},
                                                        {"nic", "gb_per_s"},
                                                        {"nic", "latency_us"}};
  std::mt19937_64 rng(20261205);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 3000 && std::chrono::steady_clock::now() < deadline; ++i) {
    Json j = seed;
    for (int k = 0, edits = 1 + static_cast<int>(rng() % 3); k < edits; ++k) {
      const auto& f = fields[rng() % fields.size()];
      Json& at = f.size() == 1 ? j[f[0]] : j[f[0]][f[1]];
      if (rng() % 8 == 0 && f.size() == 1) {
        j.erase(f[0]);
      } else {
        at = values[rng() % values.size()];
      }
    }
    try {
      const Topology t = Topology::from_json(j);
      ++loaded;
      const int n = std::min(t.devices(), 4096);
      const CollectiveTime r = best_collective(t, Collective::all_reduce, first_devices(n), 1 << 20);
      EXPECT_TRUE(std::isfinite(r.us)) << j.dump();
    } catch (const Error& e) {
      ++refused;
      ASSERT_EQ(e.kind(), ErrorKind::bad_input) << j.dump() << ": " << e.what();
    }
  }
  EXPECT_GT(loaded, 50);
  EXPECT_GT(refused, 50);
}

TEST(Topology, ATargetFileCarriesItsTopology) {
  const std::string path = ::testing::TempDir() + "/cluster-target.json";
  std::ofstream(path) << R"({"preset": "ascend910b", "topology": {"servers": 2, "devices_per_server": 4,
      "shape": "ring", "link": {"gb_per_s": 20}, "nic": {"gb_per_s": 5, "latency_us": 3}}})";
  const Topology t = load_topology(path);
  EXPECT_EQ(t.devices(), 8);
  EXPECT_EQ(t.shape, ServerShape::ring);
  EXPECT_EQ(Topology::from_json(t.to_json()).to_json(), t.to_json());
  EXPECT_EQ(load_topology("ascend910b-server8-x4").devices(), 32);
}

TEST(Collectives, TwoDevicesOnOneLinkTakeTheHandComputedTime) {
  const Topology t = two_devices_one_link();
  const std::vector<int> both = {0, 1};
  // Ring AllReduce of 1 MB: 2 steps of 0.5 MB over 10 GB/s (50 us) plus 1 us latency each.
  const CollectiveTime ring = time_collective(t, Collective::all_reduce, Algorithm::ring, both, 1'000'000);
  EXPECT_DOUBLE_EQ(ring.us, 102);
  EXPECT_EQ(ring.steps, 2);
  EXPECT_DOUBLE_EQ(ring.lower_bound_us, 100);  // 2 (n-1)/n S / B
  // Tree: up and down the one edge, the whole buffer each way, unchunked: 2 x (1 + 100).
  EXPECT_DOUBLE_EQ(time_collective(t, Collective::all_reduce, Algorithm::tree, both, 1'000'000).us, 202);
  EXPECT_DOUBLE_EQ(time_collective(t, Collective::send_recv, Algorithm::ring, both, 1'000'000).us, 101);
  EXPECT_DOUBLE_EQ(time_collective(t, Collective::all_gather, Algorithm::mesh, both, 1'000'000).us, 51);
  EXPECT_EQ(best_collective(t, Collective::all_reduce, both, 1'000'000).us, 102);
}

TEST(Collectives, ARingAllReduceOnARingServerIsTwoNMinusOneStepsOfOneNth) {
  const Topology t = topology_preset("ring8");
  const double s = 8e6, per_step = 2 + (s / 8) / 56e3;
  const CollectiveTime r = time_collective(t, Collective::all_reduce, Algorithm::ring, first_devices(8), 8'000'000);
  EXPECT_NEAR(r.us, 14 * per_step, 1e-9);
  // A mesh step routes 56 transfers over 8 links each way: they share, so it loses to the ring here.
  EXPECT_GT(time_collective(t, Collective::all_reduce, Algorithm::mesh, first_devices(8), 8'000'000).us, r.us);
  // On a full mesh every transfer has its own link: the mesh wins.
  const Topology mesh = topology_preset("ascend910b-server8");
  EXPECT_LT(time_collective(mesh, Collective::all_reduce, Algorithm::mesh, first_devices(8), 8'000'000).us,
            time_collective(mesh, Collective::all_reduce, Algorithm::ring, first_devices(8), 8'000'000).us);
}

TEST(Collectives, EveryAlgorithmIsAtOrAboveTheBandwidthLowerBoundAtEverySize) {
  int checked = 0;
  for (const char* name :
       {"ascend910b-server8", "ascend910b-server8-x4", "ring8", "ascend910-server8", "ascend910-server8-x2"}) {
    const Topology t = topology_preset(name);
    for (int n : {2, 4, 8, t.devices()}) {
      for (Collective c :
           {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast}) {
        for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::mesh, Algorithm::hierarchical}) {
          if (a == Algorithm::tree && c != Collective::all_reduce && c != Collective::broadcast) continue;
          for (std::int64_t bytes : {std::int64_t(1), std::int64_t(4096), std::int64_t(1) << 20,
                                     std::int64_t(100) << 20, std::int64_t(1) << 30}) {
            const CollectiveTime r = time_collective(t, c, a, first_devices(n), bytes);
            EXPECT_GE(r.us, r.lower_bound_us)
                << name << " n=" << n << " " << to_string(c) << " " << to_string(a) << " " << bytes;
            EXPECT_GT(r.lower_bound_us, 0);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Collectives, HierarchicalBeatsAFlatRingAcrossServers) {
  const Topology t = topology_preset("ascend910b-server8-x4");
  const auto all = first_devices(32);
  const std::int64_t s = 100 << 20;
  const double hier = time_collective(t, Collective::all_reduce, Algorithm::hierarchical, all, s).us;
  EXPECT_LT(hier, time_collective(t, Collective::all_reduce, Algorithm::ring, all, s).us);
  EXPECT_EQ(best_collective(t, Collective::all_reduce, all, s).algorithm, Algorithm::hierarchical);
}

TEST(Collectives, WhatCannotRunIsRefusedByName) {
  const Topology t = topology_preset("ascend910b-server8-x2");
  EXPECT_NE(message_of([&] {
              time_collective(t, Collective::all_gather, Algorithm::tree, first_devices(4), 8);
            }).find("'tree' does not run all_gather"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              time_collective(t, Collective::all_reduce, Algorithm::hierarchical, {0, 1, 8}, 8);
            }).find("same number of devices on each server"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              time_collective(t, Collective::send_recv, Algorithm::ring, {0, 1, 2}, 8);
            }).find("group of two"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              time_collective(t, Collective::all_reduce, Algorithm::ring, {0, 16}, 8);
            }).find("device 16 is not in"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_algorithm("butterfly"); }).find("field 'algorithm'"), std::string::npos);
}

// forward f1 -> f2, then backward: wgrad2, dgrad2, wgrad1, and an update per weight.
execution::ExecGraph tiny_training_step() {
  using execution::NodeCost;
  using execution::Unit;
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 1000), a1 = g.add_buffer("a1", 1000), y = g.add_buffer("y", 1000);
  const int g2 = g.add_buffer("grad:w2", 4'000'000), da1 = g.add_buffer("grad:a1", 1000);
  const int g1 = g.add_buffer("grad:w1", 4'000'000);
  const int w1 = g.add_buffer("w1'", 1, true), w2 = g.add_buffer("w2'", 1, true);
  const NodeCost k{100, 0, 8, Unit::cube};
  g.add_node("f1", "Conv", k, {x}, {a1}, {Role::forward, 0});
  g.add_node("f2", "Conv", k, {a1}, {y}, {Role::forward, 1});
  g.add_node("f2.wgrad", "ConvWeightGrad", k, {y, a1}, {g2}, {Role::weight_grad, 1});
  g.add_node("f2.update", "OptimizerUpdate", {10, 0, 8, Unit::vector}, {g2}, {w2}, {Role::update, 1});
  g.add_node("f2.dgrad", "ConvGrad", k, {y}, {da1}, {Role::data_grad, 1});
  g.add_node("f1.wgrad", "ConvWeightGrad", k, {da1, x}, {g1}, {Role::weight_grad, 0});
  g.add_node("f1.update", "OptimizerUpdate", {10, 0, 8, Unit::vector}, {g1}, {w1}, {Role::update, 0});
  return g;
}

TEST(DataParallel, EachBucketsAllReduceOverlapsTheBackwardThatFollowsIt) {
  const Topology t = two_devices_one_link();  // 4 MB: 2 x (1 + 200) = 402 us per bucket
  const execution::Device d{8, 8, true};      // updates on the vector cores, beside the convs
  DataParallelOptions o;
  o.devices = 2;
  o.bucket_bytes = 4'000'000;  // one gradient per bucket
  // Graph order: f2's weight gradient before its data gradient, as autograd emits them (the
  // critical-path priority runs f2.dgrad first, which delays bucket 0 by 100 us here).
  const execution::SchedulerOptions graph_order{execution::Policy::topological};
  const DataParallelStep with = data_parallel(tiny_training_step(), d, graph_order, t, o);
  ASSERT_EQ(with.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(with.buckets[0].allreduce.us, 402);
  EXPECT_DOUBLE_EQ(with.single_us, 5 * 100 + 2 * 10);  // the updates after the backward pass
  // f1, f2, f2.wgrad (300); bucket 0 from 300 to 702 beside f2.dgrad and f1.wgrad (to 500);
  // bucket 1 from 702 to 1104; f1.update 1104..1114.
  EXPECT_DOUBLE_EQ(with.step_us, 1114);
  EXPECT_DOUBLE_EQ(with.timeline.runs[3].start_us, 300);
  EXPECT_EQ(with.graph.nodes()[3].name, "allreduce:bucket0");
  o.overlap = false;  // both buckets after f1.wgrad: 500 + 804 + 10
  const DataParallelStep without = data_parallel(tiny_training_step(), d, graph_order, t, o);
  EXPECT_DOUBLE_EQ(without.step_us, 1314);
  EXPECT_DOUBLE_EQ(without.exposed_comm_us(), 1314 - 520);
  EXPECT_LT(with.exposed_comm_us(), without.exposed_comm_us());
  o.devices = 1;  // nothing to reduce with
  EXPECT_DOUBLE_EQ(data_parallel(tiny_training_step(), d, graph_order, t, o).step_us, 520);
}

TEST(DataParallel, OverlapNeverMakesAStepSlower) {
  const frontend::TaskSet model = frontend::zoo_model("bert-base-train");
  // Each node's time from the bytes it moves: enough to give the step a real shape.
  const auto step = execution::ExecGraph::from_graph(model.graph(), [&](int i) {
    const auto& n = model.graph().nodes()[i];
    return execution::NodeCost{5 + n.bytes / 1e6, 2, 8, execution::Unit::vector};
  });
  ASSERT_GT(gradient_buffers(step).size(), 50u);
  for (const char* topo : {"ascend910b-server8", "ascend910-server8-x2"}) {
    const Topology t = topology_preset(topo);
    for (int devices : {2, 8, t.devices()}) {
      for (std::int64_t bucket : {std::int64_t(1) << 20, std::int64_t(25) << 20, std::int64_t(1) << 30}) {
        DataParallelOptions o;
        o.devices = devices;
        o.bucket_bytes = bucket;
        for (auto policy : {execution::Policy::critical_path, execution::Policy::topological}) {
          o.overlap = true;
          const double with = data_parallel(step, {8, 8, false}, {policy}, t, o).step_us;
          o.overlap = false;
          const double without = data_parallel(step, {8, 8, false}, {policy}, t, o).step_us;
          EXPECT_LE(with, without + 1e-6) << topo << " " << devices << " " << bucket;
        }
      }
    }
  }
}

TEST(DataParallel, AGraphWithoutGradientsOrTooManyDevicesIsRefused) {
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 1), y = g.add_buffer("y", 1, true);
  g.add_node("f", "Conv", {1, 0, 1, execution::Unit::cube}, {x}, {y}, {Role::forward, 0});
  const Topology t = topology_preset("ascend910b-server8");
  EXPECT_NE(message_of([&] { data_parallel(g, {8, 8, false}, {}, t, {}); }).find("no gradient"), std::string::npos);
  DataParallelOptions o;
  o.devices = 9;
  EXPECT_NE(message_of([&] {
              data_parallel(tiny_training_step(), {8, 8, false}, {}, t, o);
            }).find("field 'devices' must be in 1..8"),
            std::string::npos);
}

// Two layers of equal weight: f1 (100) with its weight gradient (100), f2 (100) with its data
// gradient (100), on 8 cores each; the update takes no time.
execution::ExecGraph two_layer_step() {
  using execution::NodeCost;
  using execution::Unit;
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 8000), a1 = g.add_buffer("a1", 8000), y = g.add_buffer("y", 8000);
  const int da1 = g.add_buffer("grad:a1", 8000), g1 = g.add_buffer("grad:w1", 4000), w1 = g.add_buffer("w1'", 1, true);
  const NodeCost k{100, 0, 8, Unit::cube};
  g.add_node("f1", "Conv", k, {x}, {a1}, {Role::forward, 0});
  g.add_node("f2", "Conv", k, {a1}, {y}, {Role::forward, 1});
  g.add_node("f2.dgrad", "ConvGrad", k, {y}, {da1}, {Role::data_grad, 1});
  g.add_node("f1.wgrad", "ConvWeightGrad", k, {da1, x}, {g1}, {Role::weight_grad, 0});
  g.add_node("f1.update", "OptimizerUpdate", {0, 0, 8, Unit::vector}, {g1}, {w1}, {Role::update, 0});
  return g;
}

Topology instant_links(int devices) {
  return Topology::from_json(
      Json{{"devices_per_server", devices}, {"shape", "full_mesh"}, {"link", {{"gb_per_s", 1e6}, {"latency_us", 0}}}});
}

// A model's node may be named like a backward kernel: roles come from the tags the training
// step gives its kernels, never from names. Here a forward matmul is called "fc.update" after
// a layer "fc" (a name reader took it for fc's weight update), and h is read twice, so its
// gradients are summed.
TEST(TrainingRoles, ComeFromTheStepsTagsNotFromNodeNames) {
  frontend::Graph g;
  for (const char* t : {"x", "h", "y", "z"}) g.add_tensor(t, {16, 32}, 1024);
  const Workload mm =
      Workload::from_json(parse_json(R"({"op":"matmul","dtype":"float16","dims":{"M":16,"N":32,"K":32}})", "w"));
  g.node(g.add_node("fc", "MatMul", {"x"}, {"h"})).kernel = mm;
  g.node(g.add_node("fc.update", "MatMul", {"h"}, {"y"})).kernel = mm;
  g.node(g.add_node("head", "MatMul", {"h"}, {"z"})).kernel = mm;
  g.mark_output("y");
  g.mark_output("z");
  const execution::ExecGraph step = execution::ExecGraph::from_graph(frontend::training_graph(g), [](int) {
    return execution::NodeCost{1, 0, 1, execution::Unit::cube};
  });
  const TrainingRoles r = training_roles(step);
  auto at = [&](const std::string& name) {
    for (int i = 0; i < int(step.nodes().size()); ++i)
      if (step.nodes()[i].name == name) return i;
    ADD_FAILURE() << "no node " << name;
    return 0;
  };
  EXPECT_EQ(r.role[at("fc.update")], Role::forward);
  EXPECT_EQ(r.forward[at("fc.update")], at("fc.update"));
  EXPECT_EQ(r.role[at("fc.update.update")], Role::update);
  EXPECT_EQ(r.forward[at("fc.update.update")], at("fc.update"));
  EXPECT_EQ(r.role[at("fc.update.dgrad")], Role::data_grad);
  EXPECT_EQ(r.role[at("fc.wgrad")], Role::weight_grad);
  EXPECT_EQ(r.forward[at("fc.wgrad")], at("fc"));
  EXPECT_EQ(r.role[at("grad_sum:h")], Role::backward);
  EXPECT_EQ(r.forward[at("grad_sum:h")], at("fc")) << "a sum of gradients belongs to the tensor's producer";
  EXPECT_EQ(forward_layers(step), 3);
}

TEST(PipelineParallel, TwoStagesHaveTheBubbleOfGPipe) {
  const execution::ExecGraph g = two_layer_step();
  const StagePlacement p = place_stages(g, 2);
  EXPECT_EQ(p.stage_of_node, (std::vector<int>{0, 1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(p.imbalance(), 1.0);
  EXPECT_DOUBLE_EQ(p.crossing_bytes, 8000);  // a1
  for (PipelineOrder order : {PipelineOrder::gpipe, PipelineOrder::one_f_one_b}) {
    for (int m : {1, 2, 4, 8}) {
      const PipelineStep s = pipeline_parallel(g, {8, 8, false}, {}, instant_links(2), {2, m, order});
      // (m + S - 1) / m of a stage's 200 us: S - 1 = 1 micro-batch of bubble.
      EXPECT_NEAR(s.step_us, 200.0 * (m + 1) / m, 1e-3) << to_string(order) << " m=" << m;
      EXPECT_NEAR(s.bubble(), 1.0 / (m + 1), 1e-5);
      EXPECT_DOUBLE_EQ(s.single_us, 400);
    }
  }
}

TEST(PipelineParallel, OneFOneBHoldsFewerMicroBatchesOfActivationsThanGPipe) {
  const execution::ExecGraph g = two_layer_step();
  auto peak = [&](PipelineOrder o) {
    const PipelineStep s = pipeline_parallel(g, {8, 8, false}, {}, instant_links(2), {2, 8, o});
    return execution::plan_memory(s.graph, s.timeline).peak_bytes;
  };
  EXPECT_LT(peak(PipelineOrder::one_f_one_b), peak(PipelineOrder::gpipe));
  // Per device: each device's plan is sound and at least its liveness bound; the last stage
  // holds every micro-batch's output y (1000 B each) for its backward under GPipe, and one or
  // two under 1F1B.
  auto last_stage = [&](PipelineOrder o) {
    const PipelineStep s = pipeline_parallel(g, {8, 8, false}, {}, instant_links(2), {2, 8, o});
    const auto per = memory_per_device(s.graph, s.timeline);
    EXPECT_EQ(per.size(), 2u);
    for (const auto& p : per) {
      EXPECT_TRUE(execution::check_plan(p).empty());
      EXPECT_GE(p.peak_bytes, p.lower_bound_bytes);
    }
    return per.back().lower_bound_bytes;
  };
  EXPECT_GE(last_stage(PipelineOrder::gpipe), 8 * 1000);
  EXPECT_LE(last_stage(PipelineOrder::one_f_one_b), 3 * 1000);
}

TEST(PipelineParallel, StagesOfATrainingStepAreBalancedAndItsBackwardFollowsItsForward) {
  const frontend::TaskSet model = frontend::zoo_model("bert-base-train");
  const auto step = execution::ExecGraph::from_graph(model.graph(), [&](int i) {
    const auto& n = model.graph().nodes()[i];
    return execution::NodeCost{5 + n.bytes / 1e6, 2, 8, execution::Unit::vector};
  });
  const StagePlacement p = place_stages(step, 4);
  EXPECT_LT(p.imbalance(), 1.1);
  for (int i = 0; i < int(step.nodes().size()); ++i) {
    const std::string& name = step.nodes()[i].name;
    const auto dot = name.rfind(".wgrad");
    if (dot == std::string::npos || dot + 6 != name.size()) continue;
    for (int j = 0; j < int(step.nodes().size()); ++j) {
      if (step.nodes()[j].name == name.substr(0, dot)) EXPECT_EQ(p.stage_of_node[i], p.stage_of_node[j]) << name;
    }
  }
  EXPECT_NE(message_of([&] { place_stages(step, 100000); }).find("field 'stages' must be in 1.."), std::string::npos);
}

// One fully connected layer with a 400 MB weight: its gradient dwarfs its compute.
execution::ExecGraph big_fc_step() {
  using execution::NodeCost;
  using execution::Unit;
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 100'000), y = g.add_buffer("y", 100'000), dy = g.add_buffer("grad:y", 100'000);
  const int dx = g.add_buffer("grad:x", 100'000, true), gw = g.add_buffer("grad:w", 400'000'000);
  const int w = g.add_buffer("w'", 1, true);
  const NodeCost k{1000, 0, 8, Unit::cube};
  g.add_node("fc", "matmul", k, {x}, {y}, {Role::forward, 0});
  g.add_node("loss", "elementwise", {10, 0, 8, Unit::vector}, {y}, {dy}, {Role::forward, 1});
  g.add_node("fc.dgrad", "matmulGrad", k, {dy}, {dx}, {Role::data_grad, 0});
  g.add_node("fc.wgrad", "matmulWeightGrad", k, {dy, x}, {gw}, {Role::weight_grad, 0});
  g.add_node("fc.update", "OptimizerUpdate", {100, 0, 8, Unit::vector}, {gw}, {w}, {Role::update, 0});
  return g;
}

TEST(TensorParallel, ASplitMatmulTakesItsShareWithItsCollectives) {
  const execution::ExecGraph g = big_fc_step();
  EXPECT_EQ(splittable_matmuls(g), std::vector<int>{0});
  const Topology t = two_devices_one_link();
  const execution::ExecGraph split = tensor_parallel(g, t, {0, 1});
  ASSERT_EQ(split.nodes().size(), 7u);  // + an AllGather of y and an AllReduce of grad:x
  EXPECT_EQ(split.nodes()[1].name, "fc@all_gather");
  EXPECT_DOUBLE_EQ(split.nodes()[0].cost.time_us, 500);
  EXPECT_DOUBLE_EQ(split.nodes()[1].cost.time_us, 1 + 50'000 / 1e4);  // one step of half of y
  EXPECT_EQ(split.buffers()[4].bytes, 200'000'000);                   // each rank holds half the weight gradient
  EXPECT_DOUBLE_EQ(split.nodes()[2].cost.time_us, 10);                // the loss is not split
}

TEST(TensorParallel, AFusedMatmulSendsItsFirstTilesWhileTheRestCompute) {
  const Topology t = two_devices_one_link();
  auto loss_start = [&](int chunks) {
    const execution::ExecGraph g = tensor_parallel(big_fc_step(), t, {0, 1}, chunks);
    const execution::Timeline run = execution::simulate(g, {8, 8, true});
    for (std::size_t i = 0; i < g.nodes().size(); ++i) {
      if (g.nodes()[i].name == "loss") return run.runs[i].start_us;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(loss_start(1), 500 + 6);  // the whole gather after the whole matmul
  // 4 chunks of 125 us, each gathered in 1 + 12500 / 1e4 us while the next computes.
  EXPECT_DOUBLE_EQ(loss_start(4), 500 + 2.25);
}

TEST(ParallelPlan, TheSearchSplitsALargeLayerWhereDataParallelismIsWeakAndIsNeverSlower) {
  const Topology t = two_devices_one_link();
  const PlanSearch s = search_plan(big_fc_step(), {8, 8, true}, t, {2, "evolutionary", 32, 1});
  EXPECT_EQ(s.best.plan.tp, 2);
  EXPECT_GT(s.data_parallel.us_per_batch() / s.best.us_per_batch(), 1.3);
  EXPECT_LE(s.best.us_per_batch(), s.data_parallel.us_per_batch());
  // A device that cannot hold the split plan's memory: nothing but data parallelism is run.
  PlanSearchOptions small{2, "evolutionary", 32, 1};
  small.weight_bytes = 1e9;
  small.capacity_bytes = 1e9;  // 1e9 B of weights need 8e9 with Adam's state: tp 2 needs 4e9
  EXPECT_EQ(search_plan(big_fc_step(), {8, 8, true}, t, small).best.plan.tp, 1);
  small.capacity_bytes = 5e9;  // tp 2 fits (4e9 of weights and state, plus its plan)
  EXPECT_EQ(search_plan(big_fc_step(), {8, 8, true}, t, small).best.plan.tp, 2);
  EXPECT_NE(message_of([&] {
              run_plan(big_fc_step(), {8, 8, true}, t, plan(4, 1, 1));
            }).find("field 'tp'"),
            std::string::npos);
  const Topology server = topology_preset("ascend910b-server8");
  const auto bert = frontend::zoo_model("bert-base-train");
  const auto step = execution::ExecGraph::from_graph(bert.graph(), [&](int i) {
    return execution::NodeCost{5 + bert.graph().nodes()[i].bytes / 1e6, 2, 8, execution::Unit::vector};
  });
  const PlanSearch b = search_plan(step, {8, 8, false}, server, {8, "evolutionary", 24, 1});
  EXPECT_LE(b.best.us_per_batch(), b.data_parallel.us_per_batch());
  const PlanRun mixed = run_plan(step, {8, 8, false}, server, plan(2, 2, 2, 4));
  EXPECT_EQ(mixed.timeline.devices, 2);  // one replica's two stages, tp rank 0
  EXPECT_GT(mixed.step_us, 0);
}

// Two matmuls: A computes long on a small output, B briefly on a 100 MB one. Splitting A
// halves its time for a cheap gather; splitting B would gather 100 MB for 5 us saved.
execution::ExecGraph split_one_not_the_other() {
  using execution::NodeCost;
  using execution::Unit;
  execution::ExecGraph g;
  const int x = g.add_buffer("x", 100'000), ya = g.add_buffer("ya", 100'000), yb = g.add_buffer("yb", 100'000'000);
  const int dyb = g.add_buffer("grad:yb", 100'000'000), dya = g.add_buffer("grad:ya", 100'000);
  const int dx = g.add_buffer("grad:x", 100'000, true);
  const int gb = g.add_buffer("grad:wb", 4'000), ga = g.add_buffer("grad:wa", 4'000'000);
  const int wb = g.add_buffer("wb'", 1, true), wa = g.add_buffer("wa'", 1, true);
  const NodeCost heavy{1000, 0, 8, Unit::cube}, light{10, 0, 8, Unit::cube};
  g.add_node("A", "matmul", heavy, {x}, {ya}, {Role::forward, 0});
  g.add_node("B", "matmul", light, {ya}, {yb}, {Role::forward, 1});
  g.add_node("loss", "elementwise", light, {yb}, {dyb}, {Role::forward, 2});
  g.add_node("B.dgrad", "matmulGrad", light, {dyb}, {dya}, {Role::data_grad, 1});
  g.add_node("B.wgrad", "matmulWeightGrad", light, {dyb, ya}, {gb}, {Role::weight_grad, 1});
  g.add_node("B.update", "OptimizerUpdate", light, {gb}, {wb}, {Role::update, 1});
  g.add_node("A.dgrad", "matmulGrad", heavy, {dya}, {dx}, {Role::data_grad, 0});
  g.add_node("A.wgrad", "matmulWeightGrad", heavy, {dya, x}, {ga}, {Role::weight_grad, 0});
  g.add_node("A.update", "OptimizerUpdate", light, {ga}, {wa}, {Role::update, 0});
  return g;
}

TEST(ParallelPlan, PerOpChoicesSplitTheMatmulThatGainsAndKeepTheOneThatWouldNot) {
  const Topology t = two_devices_one_link();
  const execution::Device d{8, 8, true};
  const execution::ExecGraph g = split_one_not_the_other();
  ASSERT_EQ(splittable_matmuls(g), (std::vector<int>{0, 1}));
  ParallelPlan both = plan(2, 1, 1);
  ParallelPlan only_a = both;
  only_a.split = std::vector<int>{0};
  const double mixed = run_plan(g, d, t, only_a).us_per_batch();
  EXPECT_LT(mixed, run_plan(g, d, t, both).us_per_batch());           // B's gather costs 5 ms
  EXPECT_LT(mixed, run_plan(g, d, t, plan(1, 1, 2)).us_per_batch());  // data parallel: A at full time
  const PlanSearch s = search_plan(g, d, t, {2, "evolutionary", 48, 1});
  EXPECT_EQ(s.best.plan.tp, 2);
  ASSERT_TRUE(s.best.plan.split);
  EXPECT_EQ(*s.best.plan.split, std::vector<int>{0});
  EXPECT_EQ(s.best.plan.to_json()["split"], Json::array({0}));
}

TEST(ParallelPlan, APlanOverTheDeviceRecomputesActivationsToFit) {
  const auto bert = frontend::zoo_model("bert-base-train");
  const auto step = execution::ExecGraph::from_graph(bert.graph(), [&](int i) {
    return execution::NodeCost{5 + bert.graph().nodes()[i].bytes / 1e6, 2, 8, execution::Unit::vector};
  });
  const Topology t = topology_preset("ascend910b-server8");
  const execution::Device d{8, 8, false};
  PlanRun run = run_plan(step, d, t, plan(1, 1, 1));  // one device: the activations make the peak
  const double peak = double(run.device_peak_bytes()), before_us = run.step_us;
  ASSERT_TRUE(fit_by_recompute(run, d, 0, 2 * peak));  // fits: unchanged
  EXPECT_TRUE(run.recomputed.empty());
  ASSERT_TRUE(fit_by_recompute(run, d, 0, 0.95 * peak));
  EXPECT_FALSE(run.recomputed.empty());
  EXPECT_LE(run.device_need_bytes(0), 0.95 * peak);
  EXPECT_GE(run.step_us, before_us);
  PlanRun tight = run_plan(step, d, t, plan(1, 1, 1));
  EXPECT_FALSE(fit_by_recompute(tight, d, 0, 0.01 * peak));
  PlanRun staged = run_plan(step, d, t, plan(1, 2, 1));
  EXPECT_FALSE(fit_by_recompute(staged, d, 0, 0.5 * double(staged.device_peak_bytes())));  // one device only
}

TEST(LoadBalance, UnitsGoWhereTheyFinishFirst) {
  EXPECT_EQ(deal_units({1, 0.5}, 3), (std::vector<int>{4, 2}));
  EXPECT_EQ(deal_units({1, 1, 1}, 5), (std::vector<int>{5, 5, 5}));
}

TEST(LoadBalance, AStragglerCostsOneSlowStepWhenWorkMovesAway) {
  const Topology t = topology_preset("ascend910b-server8");
  DataParallelOptions o;
  o.devices = 4;
  const std::vector<SpeedChange> straggler{{2, 1, 0.5}};  // replica 1 at half speed from step 2
  const execution::Device d{8, 8, true};
  const BalancedRun fixed = run_balanced(tiny_training_step(), d, t, o, 6, 8, straggler, false);
  const BalancedRun moved = run_balanced(tiny_training_step(), d, t, o, 6, 8, straggler, true);
  EXPECT_DOUBLE_EQ(moved.step_us[1], fixed.step_us[1]);
  EXPECT_DOUBLE_EQ(moved.step_us[2], fixed.step_us[2]);  // the step that shows the straggler
  EXPECT_GT(fixed.step_us[3], fixed.step_us[1]);
  EXPECT_LT(moved.step_us[3], fixed.step_us[3]);
  EXPECT_EQ(moved.units[3], (std::vector<int>{10, 4, 9, 9}));  // the slowest: 10 units, not 16 at half speed
  EXPECT_LT(moved.total_us, fixed.total_us);
  EXPECT_NE(message_of([&] {
              run_balanced(tiny_training_step(), d, t, o, 2, 8, {{0, 4, 0.5}}, true);
            }).find("field 'device'"),
            std::string::npos);
}

}  // namespace
}  // namespace atvoss::distributed
