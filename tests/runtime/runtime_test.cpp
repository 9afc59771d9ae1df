// The runtime runs the tuned kernel for an exact shape, the nearest entry's schedule for a
// nearby shape, and the default otherwise, says which, and computes the reference result;
// another CPU's table and a damaged table are clear errors.
#include "runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "../host/host_test_util.hpp"
#include "../simulator/bad_input_message.hpp"
#include "core/error.hpp"
#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/kernel_timing.hpp"
#include "host/operands.hpp"
#include "runtime/choice.hpp"
#include "runtime_test_util.hpp"

namespace atvoss::runtime {
namespace {

using host::testing::TempDir;
using testing::workload;

const host::MachineInfo& machine() { return host::this_machine(); }

// A runtime over the fixture table, sharing the tests' compile cache in the build tree.
class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = dir_.str() + "/table.json";
    testing::write_table(table_, machine().target_name());
  }
  RuntimeOptions options() const {
    RuntimeOptions o;
    o.table = table_;
    return o;
  }
  // Runs w through rt on seeded operands; the max relative error against the reference.
  static double run_error(Runtime& rt, const Workload& w, std::uint64_t seed = 3) {
    host::Operands ops = host::make_operands(w, seed);
    rt.run(w, ops.args());
    return host::max_relative_error(w, ops, seed);
  }
  static std::string so_name_of(const Workload& w, const Schedule& s) {
    return host::build_key(host::generate_source(w, s, machine()), {}) + ".so";
  }
  TempDir dir_;
  std::string table_;
};

TEST_F(RuntimeTest, ExactShapeRunsTheTunedKernel) {
  Runtime rt(options());
  const Workload w = workload(testing::kTunedWorkload);
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::exact) << c.reason;
  EXPECT_EQ(c.schedule, testing::tuned_schedule(machine()));
  EXPECT_NE(c.schedule, host::default_schedule(w, machine()));
  EXPECT_DOUBLE_EQ(c.table_time_us, 12.5);
  // The kernel loaded is the one generated from the tuned schedule.
  EXPECT_EQ(std::filesystem::path(rt.kernel(w).so_path()).filename(), so_name_of(w, c.schedule));
  EXPECT_LE(run_error(rt, w), host::kMaxRelativeError);
}

TEST_F(RuntimeTest, NearbyShapeRunsTheNearestEntrysSchedule) {
  Runtime rt(options());
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":40,"N":40,"K":64}})");
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::nearest) << c.reason;
  EXPECT_EQ(c.schedule, testing::tuned_schedule(machine()));
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_EQ(c.entry->key(), workload(testing::kTunedWorkload).key());
  EXPECT_GT(c.distance, 0);
  EXPECT_EQ(std::filesystem::path(rt.kernel(w).so_path()).filename(), so_name_of(w, c.schedule));
  EXPECT_LE(run_error(rt, w), host::kMaxRelativeError);
}

TEST_F(RuntimeTest, NoComparableEntryRunsTheDefault) {
  Runtime rt(options());
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":33,"N":41,"K":30},
                                  "epilogue":["bias","gelu","add"]})");
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::fallback);
  EXPECT_EQ(to_string(c.kind), "default");
  EXPECT_NE(c.reason.find("no matmul entry"), std::string::npos) << c.reason;
  EXPECT_EQ(c.schedule, host::default_schedule(w, machine()));
  EXPECT_FALSE(c.entry.has_value());
  EXPECT_LE(run_error(rt, w), host::kMaxRelativeError);
}

TEST_F(RuntimeTest, NearestScheduleIsMovedOntoTheCalledShapesSpace) {
  Runtime rt(options());
  // The only relu entry has tile_k 512, which K = 64 does not offer: the closest value is 64.
  // It predates the threads knob: the default's thread count fills it in.
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":20,"N":24,"K":64},"epilogue":["relu"]})");
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::nearest) << c.reason;
  Schedule want = testing::large_relu_schedule(machine());
  want.set("tile_k", 64);
  want.set("threads", host::default_schedule(w, machine()).at("threads"));
  EXPECT_EQ(c.schedule, want);
  EXPECT_NE(c.reason.find("tile_k 512 -> 64"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("threads absent -> 1"), std::string::npos) << c.reason;
  EXPECT_LE(run_error(rt, w), host::kMaxRelativeError);
}

// A hand-edited table or model plan may hold any int64: the extremes move to the space's ends
// (their distance to a listed value overflowed int64 once, and INT64_MIN landed on the largest).
TEST_F(RuntimeTest, ExtremeKnobValuesMoveToTheNearestEndOfTheSpace) {
  const Workload w = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":256,"N":256,"K":512}})");
  const ScheduleSpace space = host::space_for(w, machine());
  const auto values = [&](const std::string& name) {
    for (const Knob& k : space.knobs())
      if (k.name == name) return k.values;
    ADD_FAILURE() << "no knob " << name;
    return std::vector<std::int64_t>{0};
  };
  Schedule edited = testing::tuned_schedule(machine());
  edited.set("tile_k", std::numeric_limits<std::int64_t>::min());
  edited.set("tile_n", std::numeric_limits<std::int64_t>::max());
  const table::ScheduleTable t(table::TableHeader{}, {{w, edited, 1.0}});
  const Choice c = choose_schedule(&t, "", w, machine());
  EXPECT_EQ(c.kind, ChoiceKind::exact) << c.reason;
  ASSERT_GT(values("tile_k").size(), 1u);
  EXPECT_EQ(c.schedule.at("tile_k"), std::ranges::min(values("tile_k"))) << c.reason;
  EXPECT_EQ(c.schedule.at("tile_n"), std::ranges::max(values("tile_n"))) << c.reason;
}

TEST_F(RuntimeTest, EntryScheduleTheSpaceRejectsRunsTheDefaultAndSaysWhy) {
  Runtime rt(options());
  const Workload w =
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":30,"N":64,"K":512},"epilogue":["gelu"]})");
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::fallback);
  const std::string why = host::space_for(w, machine()).check(testing::rejected_schedule(machine())).reason;
  ASSERT_FALSE(why.empty());
  EXPECT_NE(c.reason.find(why), std::string::npos) << c.reason;
  EXPECT_EQ(c.schedule, host::default_schedule(w, machine()));
  EXPECT_LE(run_error(rt, w), host::kMaxRelativeError);
}

TEST_F(RuntimeTest, TypedWrappersComputeTheReference) {
  Runtime rt(options());
  const Workload mm = workload(R"({"op":"matmul","dtype":"float32","dims":{"M":48,"N":40,"K":64},
                                   "epilogue":["batchnorm","relu"]})");
  host::Operands o = host::make_operands(mm, 5);
  const Choice& c = rt.matmul(o.a.data(), o.b.data(), o.c.data(), 48, 40, 64,
                              {{"batchnorm", "relu"}, nullptr, o.scale.data(), o.shift.data(), nullptr});
  EXPECT_EQ(c.kind, ChoiceKind::fallback) << "batchnorm+relu has no entry";
  EXPECT_LE(host::max_relative_error(mm, o, 5), host::kMaxRelativeError);

  const Workload bmm = workload(R"({"op":"batch_matmul","dtype":"float32","dims":{"B":3,"M":9,"N":20,"K":17},
                                    "epilogue":["add"]})");
  host::Operands ob = host::make_operands(bmm, 6);
  rt.batch_matmul(ob.a.data(), ob.b.data(), ob.c.data(), 3, 9, 20, 17,
                  {{"add"}, nullptr, nullptr, nullptr, ob.residual.data()});
  EXPECT_LE(host::max_relative_error(bmm, ob, 6), host::kMaxRelativeError);
}

// int8 and bf16 (host/low_precision.hpp's operands): the wrappers compute the reference, and a
// missing compensation is refused by name. Skipped, saying so, on a CPU without the flags.
TEST_F(RuntimeTest, LowPrecisionWrappersComputeTheReference) {
  if (!machine().has_flag("avx512_vnni") || !machine().has_flag("avx512_bf16")) {
    GTEST_SKIP() << "this CPU (" << machine().model << ") lacks avx512_vnni or avx512_bf16";
  }
  Runtime rt(options());
  const Workload q =
      workload(R"({"op":"matmul","dtype":"int8","dims":{"M":37,"N":40,"K":70},"epilogue":["bias","gelu"]})");
  host::Operands o = host::make_operands(q, 5);
  const auto* b8 = reinterpret_cast<const std::int8_t*>(o.qb.data());
  const EpilogueArgs bias_gelu{{"bias", "gelu"}, o.bias.data(), nullptr, nullptr, nullptr};
  rt.matmul_int8(o.qa.data(), b8, o.c.data(), o.qscale.data(), o.qcomp.data(), 37, 40, 70, bias_gelu);
  EXPECT_LE(host::max_relative_error(q, o, 5), host::kMaxRelativeError);
  const double right = host::max_relative_error(q, o, 5);
  o.qcomp.assign(o.qcomp.size(), 0);  // the zero point now goes uncompensated: a visible error
  rt.matmul_int8(o.qa.data(), b8, o.c.data(), o.qscale.data(), o.qcomp.data(), 37, 40, 70, bias_gelu);
  EXPECT_GT(host::max_relative_error(q, o, 5), 100 * std::max(right, 1e-7));

  const Workload h = workload(R"({"op":"matmul","dtype":"bfloat16","dims":{"M":9,"N":33,"K":31}})");
  host::Operands ob = host::make_operands(h, 6);
  const auto* a16 = reinterpret_cast<const std::uint16_t*>(ob.qa.data());
  const auto* b16 = reinterpret_cast<const std::uint16_t*>(ob.qb.data());
  rt.matmul_bf16(a16, b16, ob.c.data(), 9, 33, 31);
  EXPECT_LE(host::max_relative_error(h, ob, 6), host::kMaxRelativeError);
  try {
    rt.matmul_int8(o.qa.data(), b8, o.c.data(), o.qscale.data(), nullptr, 37, 40, 70, bias_gelu);
    FAIL() << "a null compensation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'comp'"), std::string::npos) << e.what();
  }
}

// u8 outputs (EpilogueArgs::codes): an int8 matmul and conv2d ending in requantize give the u8
// codes of the values the same call gives without codes, with c null (the runtime keeps the
// partial sums: K spans several k blocks), and a call whose epilogue does not quantize is refused
// naming 'codes'.
TEST_F(RuntimeTest, Int8LayersWriteU8CodesForTheNextLayer) {
  if (!machine().has_flag("avx512_vnni")) GTEST_SKIP() << "this CPU (" << machine().model << ") lacks avx512_vnni";
  Runtime rt(options());
  const Workload q =
      workload(R"({"op":"matmul","dtype":"int8","dims":{"M":37,"N":40,"K":1100},"epilogue":["bias","requantize"]})");
  host::Operands o = host::make_operands(q, 5);
  const auto* b8 = reinterpret_cast<const std::int8_t*>(o.qb.data());
  EpilogueArgs e{{"bias", "requantize"}, o.bias.data(), nullptr, nullptr, nullptr, o.qout.data()};
  rt.matmul_int8(o.qa.data(), b8, o.c.data(), o.qscale.data(), o.qcomp.data(), 37, 40, 1100, e);
  ASSERT_LE(host::max_relative_error(q, o, 5), host::kMaxRelativeError);
  std::vector<std::uint8_t> codes(o.c.size());
  e.codes = codes.data();
  rt.matmul_int8(o.qa.data(), b8, nullptr, o.qscale.data(), o.qcomp.data(), 37, 40, 1100, e);
  EXPECT_EQ(host::wrong_codes(o.c, codes.data(), o.qout), 0u);
  EXPECT_GT(std::set<std::uint8_t>(codes.begin(), codes.end()).size(), 20u);

  const Conv2dShape shape{1, 13, 9, 8, 20, 3, 3, 1, 1};
  const Workload cq = conv2d_workload(shape, {"requantize"}, DType::int8);
  host::Operands oc = host::make_operands(cq, 6);
  const auto* f8 = reinterpret_cast<const std::int8_t*>(oc.qb.data());
  EpilogueArgs ce{{"requantize"}, nullptr, nullptr, nullptr, nullptr, oc.qout.data()};
  rt.conv2d_int8(oc.qa.data(), oc.qzero, f8, oc.c.data(), oc.qscale.data(), oc.qcomp.data(), shape, ce);
  ASSERT_LE(host::max_relative_error(cq, oc, 6), host::kMaxRelativeError);
  std::vector<std::uint8_t> conv_codes(oc.c.size());
  ce.codes = conv_codes.data();
  rt.conv2d_int8(oc.qa.data(), oc.qzero, f8, nullptr, oc.qscale.data(), oc.qcomp.data(), shape, ce);
  EXPECT_EQ(host::wrong_codes(oc.c, conv_codes.data(), oc.qout), 0u);

  const float bad_grid[2] = {0.0f, 128.0f};  // a zero scale: refused naming 'qout', for every caller
  EpilogueArgs bad = e;
  bad.qout = bad_grid;
  EXPECT_NE(simulator::bad_input_message([&] {
              rt.matmul_int8(o.qa.data(), b8, nullptr, o.qscale.data(), o.qcomp.data(), 37, 40, 1100, bad);
            }).find("'qout'"),
            std::string::npos);

  EpilogueArgs no_quantize{{"bias"}, o.bias.data(), nullptr, nullptr, nullptr};
  no_quantize.codes = codes.data();
  EXPECT_NE(simulator::bad_input_message([&] {
              rt.matmul_int8(o.qa.data(), b8, nullptr, o.qscale.data(), o.qcomp.data(), 37, 40, 1100, no_quantize);
            }).find("'codes'"),
            std::string::npos);
}

// int8 and bf16 conv2d through the wrappers compute the reference; an int8 call whose zero
// point is not the one the compensation was built with pads wrongly (a visible error), and a
// zero point outside [0, 255] is refused by name.
TEST_F(RuntimeTest, LowPrecisionConvWrappersComputeTheReference) {
  if (!machine().has_flag("avx512_vnni") || !machine().has_flag("avx512_bf16")) {
    GTEST_SKIP() << "this CPU (" << machine().model << ") lacks avx512_vnni or avx512_bf16";
  }
  Runtime rt(options());
  const Conv2dShape shape{1, 13, 9, 8, 20, 3, 3, 2, 1};
  const Workload q = conv2d_workload(shape, {"bias", "relu"}, DType::int8);
  host::Operands o = host::make_operands(q, 5);
  const auto* b8 = reinterpret_cast<const std::int8_t*>(o.qb.data());
  const EpilogueArgs bias_relu{{"bias", "relu"}, o.bias.data(), nullptr, nullptr, nullptr};
  ASSERT_GT(o.qzero, 0);
  rt.conv2d_int8(o.qa.data(), o.qzero, b8, o.c.data(), o.qscale.data(), o.qcomp.data(), shape, bias_relu);
  const double right = host::max_relative_error(q, o, 5);
  EXPECT_LE(right, host::kMaxRelativeError);
  rt.conv2d_int8(o.qa.data(), 0, b8, o.c.data(), o.qscale.data(), o.qcomp.data(), shape, bias_relu);
  EXPECT_GT(host::max_relative_error(q, o, 5), 100 * std::max(right, 1e-7));
  try {
    rt.conv2d_int8(o.qa.data(), 256, b8, o.c.data(), o.qscale.data(), o.qcomp.data(), shape, bias_relu);
    FAIL() << "a zero point of 256 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("'zero_point'"), std::string::npos) << e.what();
  }

  const Workload h = conv2d_workload(shape, {}, DType::bfloat16);
  host::Operands ob = host::make_operands(h, 6);
  rt.conv2d_bf16(reinterpret_cast<const std::uint16_t*>(ob.qa.data()),
                 reinterpret_cast<const std::uint16_t*>(ob.qb.data()), ob.c.data(), shape);
  EXPECT_LE(host::max_relative_error(h, ob, 6), host::kMaxRelativeError);
}

// Weights packed once give the output of the per-call conv bit for bit, and the calls do not
// read the filter (here overwritten after packing); weights packed for another conv (another
// shape, or the bf16 one) and a null filter are refused naming 'filter'.
TEST_F(RuntimeTest, ConvWeightsPackedOnceGiveThePerCallOutput) {
  if (!machine().has_flag("avx512_vnni") || !machine().has_flag("avx512_bf16")) {
    GTEST_SKIP() << "this CPU (" << machine().model << ") lacks avx512_vnni or avx512_bf16";
  }
  Runtime rt(options());
  const Conv2dShape shape{2, 19, 9, 8, 24, 3, 3, 1, 1};
  const Workload q = conv2d_workload(shape, {"bias"}, DType::int8);
  host::Operands o = host::make_operands(q, 7);
  auto* b8 = reinterpret_cast<std::int8_t*>(o.qb.data());
  const EpilogueArgs bias{{"bias"}, o.bias.data(), nullptr, nullptr, nullptr};
  rt.conv2d_int8(o.qa.data(), o.qzero, b8, o.c.data(), o.qscale.data(), o.qcomp.data(), shape, bias);
  const std::vector<float> per_call = o.c;
  const PreparedWeights packed = rt.pack_conv2d_int8_weights(b8, shape, bias);
  EXPECT_GE(packed.bytes(), o.qb.size());
  std::fill(o.qb.begin(), o.qb.end(), std::uint8_t(0x7f));
  std::fill(o.c.begin(), o.c.end(), 0.0f);
  rt.conv2d_int8(o.qa.data(), o.qzero, packed, o.c.data(), o.qscale.data(), o.qcomp.data(), shape, bias);
  EXPECT_EQ(std::memcmp(o.c.data(), per_call.data(), per_call.size() * 4), 0);

  const Workload h = conv2d_workload(shape, {}, DType::bfloat16);
  host::Operands ob = host::make_operands(h, 8);
  const auto* a16 = reinterpret_cast<const std::uint16_t*>(ob.qa.data());
  const auto* b16 = reinterpret_cast<const std::uint16_t*>(ob.qb.data());
  rt.conv2d_bf16(a16, b16, ob.c.data(), shape);
  const std::vector<float> bf16_per_call = ob.c;
  const PreparedWeights packed16 = rt.pack_conv2d_bf16_weights(b16, shape);
  std::fill(ob.c.begin(), ob.c.end(), 0.0f);
  rt.conv2d_bf16(a16, packed16, ob.c.data(), shape);
  EXPECT_EQ(std::memcmp(ob.c.data(), bf16_per_call.data(), bf16_per_call.size() * 4), 0);

  const Conv2dShape other{2, 19, 9, 8, 24, 3, 3, 2, 1};
  auto expect_filter_refused = [](const std::function<void()>& call) {
    try {
      call();
      ADD_FAILURE() << "weights packed for another conv were accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("'filter'"), std::string::npos) << e.what();
    }
  };
  expect_filter_refused(
      [&] { rt.conv2d_int8(o.qa.data(), o.qzero, packed, o.c.data(), o.qscale.data(), o.qcomp.data(), other, bias); });
  expect_filter_refused([&] { rt.conv2d_bf16(a16, packed, ob.c.data(), shape); });
  expect_filter_refused([&] { (void)rt.pack_conv2d_int8_weights(nullptr, shape, bias); });
}

// fp32: weights prepared once give the per-call output bit for bit whether the schedule packs
// them (a table entry with async_copy_depth 2: packed once) or reads them in place (1: then
// they are a copy, and the caller's filter is not read either).
TEST_F(RuntimeTest, Fp32ConvWeightsPreparedOnceGiveThePerCallOutput) {
  const Conv2dShape packs{1, 16, 8, 8, 32, 3, 3, 1, 1}, in_place{1, 16, 8, 8, 48, 3, 3, 1, 1};
  auto with_depth = [](const Conv2dShape& shape, int depth) {
    Schedule s = host::default_schedule(conv2d_workload(shape), machine());
    s.set("async_copy_depth", depth);
    return table::TableEntry{conv2d_workload(shape), s, 10.0};
  };
  testing::write_table(table_, machine().target_name(), {with_depth(packs, 2), with_depth(in_place, 1)});
  Runtime rt(options());
  for (const Conv2dShape& shape : {packs, in_place}) {
    const Workload w = conv2d_workload(shape);
    host::Operands o = host::make_operands(w, 4);
    rt.conv2d(o.a.data(), o.b.data(), o.c.data(), shape);
    const std::vector<float> per_call = o.c;
    const PreparedWeights prepared = rt.pack_conv2d_weights(o.b.data(), shape);
    EXPECT_EQ(prepared.packed(), shape.k == packs.k);
    EXPECT_GE(prepared.bytes(), o.b.size() * 4);
    std::fill(o.b.begin(), o.b.end(), 0.25f);
    std::fill(o.c.begin(), o.c.end(), 0.0f);
    rt.conv2d(o.a.data(), prepared, o.c.data(), shape);
    EXPECT_EQ(std::memcmp(o.c.data(), per_call.data(), per_call.size() * 4), 0) << "K " << shape.k;
  }
}

// fp32 matmul and batch_matmul: B prepared once (the model engine's constant weights) gives
// the per-call output bit for bit, on shapes whose k blocks and panels are ragged (K 200 in
// blocks of 64, N 300 in two column blocks of 256), in both loop orders, on one and two
// threads; the caller's B is not read again; an in-place schedule packs nothing.
TEST_F(RuntimeTest, MatmulWeightsPreparedOnceGiveThePerCallOutput) {
  const Workload mm = Workload::from_json(parse_json(
      R"({"op":"matmul","dtype":"float32","dims":{"M":10,"N":300,"K":200},"epilogue":["bias","relu"]})", "workload"));
  const Workload bmm = Workload::from_json(
      parse_json(R"({"op":"batch_matmul","dtype":"float32","dims":{"B":2,"M":9,"N":40,"K":70}})", "workload"));
  struct Case {
    Workload w;
    int order, threads, depth;
  };
  for (const Case& c : {Case{mm, 1, 1, 1}, Case{mm, 2, 2, 2}, Case{bmm, 0, 1, 1}, Case{mm, 1, 1, 0}}) {
    Schedule s = host::default_schedule(c.w, machine());
    s.set("tile_k", 64);
    s.set("tile_n", 256);
    s.set("tile_order", c.order);
    s.set("threads", c.threads);
    s.set("async_copy_depth", c.depth);
    ASSERT_TRUE(host::space_for(c.w, machine()).check(s).ok) << s.to_json().dump();
    testing::write_table(table_, machine().target_name(), {table::TableEntry{c.w, s, 10.0}});
    Runtime rt(options());
    host::Operands o = host::make_operands(c.w, 5);
    host::AtvossArgs args = o.args();
    rt.run(c.w, args);
    const std::vector<float> per_call = o.c;
    const PreparedWeights prepared = rt.prepare_weights(c.w, o.b.data());
    ASSERT_EQ(prepared.packed(), c.depth > 0) << s.to_json().dump();
    if (!prepared.packed()) continue;
    std::fill(o.b.begin(), o.b.end(), 0.25f);
    std::fill(o.c.begin(), o.c.end(), 0.0f);
    Runtime::use_prepared(c.w, prepared, args);
    rt.run(c.w, args);
    EXPECT_EQ(std::memcmp(o.c.data(), per_call.data(), per_call.size() * 4), 0) << s.to_json().dump();
  }
}

// An fp32 conv2d given C's row stride (c_ld) writes each pixel's K channels into a wider tensor,
// as a model's channel concat lays them out, bit for bit the dense output, and leaves every
// float between them as it was: ragged pixel blocks of two images, partial sums over input
// channel blocks, the epilogue in its own pass, weights in place, one and two threads, each
// loop order, prepared weights; at an odd stride and an unaligned start.
TEST_F(RuntimeTest, AConvGivenARowStrideWritesItsChannelsIntoAWiderTensor) {
  const Workload w = Workload::from_json(parse_json(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":40,"H":9,"W":9,"K":48,"R":3,"S":3,"stride":1,"pad":1},
          "epilogue":["bias","relu"]})",
      "workload"));
  const std::int64_t k = 48, pixels = 2 * 9 * 9, ld = k + 13, at = 5;
  struct Case {
    std::map<std::string, std::int64_t> knobs;
    bool prepared;
  };
  const std::vector<Case> cases = {{{}, false},
                                   {{{"tile_k", 16}, {"fusion_level", 0}}, false},
                                   {{{"threads", 2}, {"tile_order", 1}, {"tile_h", 4}}, true},
                                   {{{"threads", 2}, {"tile_order", 0}, {"async_copy_depth", 1}}, false},
                                   {{{"tile_order", 2}, {"tile_k", 16}}, true}};
  for (const Case& c : cases) {
    Schedule s = host::default_schedule(w, machine());
    for (const auto& [knob, value] : c.knobs) s.set(knob, value);
    ASSERT_TRUE(host::space_for(w, machine()).check(s).ok) << s.to_json().dump();
    testing::write_table(table_, machine().target_name(), {table::TableEntry{w, s, 10.0}});
    Runtime rt(options());
    host::Operands o = host::make_operands(w, 7);
    host::AtvossArgs args = o.args();
    rt.run(w, args);
    const std::vector<float> dense = o.c;
    const PreparedWeights prepared = rt.prepare_weights(w, o.b.data());
    if (c.prepared) Runtime::use_prepared(w, prepared, args);
    std::vector<float> wide(std::size_t(at + pixels * ld), -7.0f);
    args.c = wide.data() + at;
    args.c_ld = ld;
    rt.run(w, args);
    for (std::int64_t p = 0; p < pixels; ++p) {
      ASSERT_EQ(std::memcmp(&wide[std::size_t(at + p * ld)], &dense[std::size_t(p * k)], std::size_t(k) * 4), 0)
          << "pixel " << p << ", " << s.to_json().dump();
      for (std::int64_t j = k; j < ld && at + p * ld + j < std::int64_t(wide.size()); ++j)
        ASSERT_EQ(wide[std::size_t(at + p * ld + j)], -7.0f) << "pixel " << p << " wrote past its channels";
    }
    for (std::int64_t j = 0; j < at; ++j) ASSERT_EQ(wide[std::size_t(j)], -7.0f);
  }
}

TEST_F(RuntimeTest, ARowStrideIsRefusedWhereTheKernelCannotTakeIt) {
  Runtime rt(options());
  const Workload conv = workload(
      R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":4,"W":4,"K":16,"R":1,"S":1,"stride":1,"pad":0}})");
  const Workload mm = workload(testing::kTunedWorkload);
  for (const auto& [w, ld] : {std::pair{conv, 15L}, std::pair{mm, 64L}}) {
    host::Operands o = host::make_operands(w, 1);
    host::AtvossArgs args = o.args();
    args.c_ld = ld;
    try {
      rt.run(w, args);
      FAIL() << "c_ld " << ld << " was accepted for " << w.label();
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("'c_ld'"), std::string::npos) << e.what();
    }
  }
}

TEST_F(RuntimeTest, MissingEpilogueOperandIsRefusedNamingIt) {
  Runtime rt(options());
  std::vector<float> a(4 * 8), b(8 * 8), c(4 * 8);
  try {
    rt.matmul(a.data(), b.data(), c.data(), 4, 8, 8, {{"bias"}});
    FAIL() << "a null bias was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("'bias'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt.matmul(a.data(), nullptr, c.data(), 4, 8, 8), Error);
  EXPECT_THROW(rt.matmul(a.data(), b.data(), c.data(), 0, 8, 8), Error);  // M must be > 0
}

TEST_F(RuntimeTest, TableOfAnotherCpuIsRefusedOrIgnoredOnRequest) {
  testing::write_table(table_, "host-000000000000");
  try {
    Runtime rt(options());
    FAIL() << "another CPU's table was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    const std::string what = e.what();
    EXPECT_NE(what.find("host-000000000000"), std::string::npos) << what;
    EXPECT_NE(what.find(machine().target_name()), std::string::npos) << what;
  }
  RuntimeOptions o = options();
  o.foreign_table = ForeignTable::use_defaults;
  Runtime rt(o);
  EXPECT_EQ(rt.table(), nullptr);
  const Workload w = workload(testing::kTunedWorkload);
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::fallback);
  EXPECT_NE(c.reason.find("host-000000000000"), std::string::npos) << c.reason;
  EXPECT_EQ(c.schedule, host::default_schedule(w, machine()));
}

TEST_F(RuntimeTest, DamagedOrMissingTableIsAClearError) {
  auto kind_of_load = [&](const std::string& path) {
    RuntimeOptions o;
    o.table = path;
    try {
      Runtime rt(o);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      return e.kind();
    }
    ADD_FAILURE() << path << " loaded";
    return ErrorKind::internal;
  };
  EXPECT_EQ(kind_of_load(dir_.str() + "/absent.json"), ErrorKind::io);
  std::ofstream(dir_.str() + "/garbage.json") << "{ not json";
  EXPECT_EQ(kind_of_load(dir_.str() + "/garbage.json"), ErrorKind::bad_input);
  // One knob value changed after export: the checksum no longer matches.
  std::string text;
  {
    std::ifstream f(table_);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  text.replace(text.find("\"tile_k\":64"), 11, "\"tile_k\":32");
  std::ofstream(table_) << text;
  EXPECT_EQ(kind_of_load(table_), ErrorKind::corrupt);
}

TEST_F(RuntimeTest, KernelsComeFromTheCompileCacheAfterTheFirstBuild) {
  TempDir cache;
  RuntimeOptions o = options();
  o.build.cache_dir = cache.str();
  const Workload w = workload(testing::kTunedWorkload);
  {
    Runtime first(o);
    EXPECT_GT(first.kernel(w).compile_us(), 0) << "an empty cache compiles";
    EXPECT_EQ(&first.kernel(w), &first.kernel(w)) << "one load per (workload, schedule)";
    EXPECT_EQ(first.kernels(), 1);
  }
  Runtime second(o);
  EXPECT_EQ(second.kernel(w).compile_us(), 0) << "the cached build is loaded, not recompiled";
  EXPECT_LE(run_error(second, w), host::kMaxRelativeError);
}

TEST_F(RuntimeTest, ManyThreadsShareOneRuntime) {
  Runtime rt(options());
  const std::vector<Workload> ws = {workload(testing::kTunedWorkload),
                                    workload(R"({"op":"matmul","dtype":"float32","dims":{"M":40,"N":40,"K":64}})")};
  for (const auto& w : ws) rt.kernel(w);  // compile outside the timed threads
  std::vector<double> errors(8, 1.0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < errors.size(); ++t) {
    threads.emplace_back([&, t] {
      double worst = 0;
      for (int i = 0; i < 20; ++i) worst = std::max(worst, run_error(rt, ws[t % ws.size()], t * 100 + i));
      errors[t] = worst;
    });
  }
  for (auto& th : threads) th.join();
  for (double e : errors) EXPECT_LE(e, host::kMaxRelativeError);
  EXPECT_EQ(rt.kernels(), 2);
}

// Calls of one kernel are not serialised: many threads run the same matmul and the same
// padded conv2d with packed weights at once, each on its own operands, many times; every
// call's result is the same and right (a kernel whose packing or padding buffer two calls
// shared would mix their inputs while they overlap).
TEST_F(RuntimeTest, ManyThreadsRunOneKernelAtOnce) {
  Runtime rt(options());
  const std::vector<Workload> ws = {
      workload(R"({"op":"matmul","dtype":"float32","dims":{"M":96,"N":128,"K":256}})"),
      conv2d_workload(Conv2dShape{1, 32, 24, 24, 32, 3, 3, 1, 1}, {"bias"}),
  };
  for (const auto& w : ws) rt.kernel(w);  // compile before the threads start
  for (const auto& w : ws) {
    std::vector<int> mismatched(6, -1);
    std::vector<double> errors(mismatched.size(), 1.0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < mismatched.size(); ++t) {
      threads.emplace_back([&, t] {
        host::Operands ops = host::make_operands(w, 100 + t);
        std::vector<float> first;
        mismatched[t] = 0;
        for (int i = 0; i < 40; ++i) {
          std::fill(ops.c.begin(), ops.c.end(), -1.0f);
          rt.run(w, ops.args());
          if (i == 0) first = ops.c;
          mismatched[t] += ops.c != first;
        }
        errors[t] = host::max_relative_error(w, ops, 100 + t);
      });
    }
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < mismatched.size(); ++t) {
      EXPECT_EQ(mismatched[t], 0) << w.label() << ": calls of thread " << t << " that differ from its first";
      EXPECT_LE(errors[t], host::kMaxRelativeError) << w.label() << ", thread " << t;
    }
  }
}

// conv2d dispatches by workload like matmul: it runs where the host code generator serves it
// and is refused, naming the op, where it does not.
TEST_F(RuntimeTest, Conv2dRunsOrIsRefusedByTheCodeGenerator) {
  Runtime rt(options());
  const Conv2dShape shape{1, 3, 6, 6, 4, 3, 3, 1, 1};
  const Workload w = conv2d_workload(shape, {"bias"});
  const OperandSizes n = operand_sizes(w);
  EXPECT_EQ(n.a, 1 * 3 * 6 * 6);
  EXPECT_EQ(n.b, 4 * 3 * 3 * 3);
  EXPECT_EQ(n.c, 1 * 4 * 6 * 6);
  std::vector<float> in(n.a), filter(n.b), out(n.c, 0.0f), bias(n.channel);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = float(i % 7) - 3.0f;
  for (std::size_t i = 0; i < filter.size(); ++i) filter[i] = float(i % 5) * 0.25f - 0.5f;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = float(i);
  if (!host::supports(w)) {
    try {
      rt.conv2d(in.data(), filter.data(), out.data(), shape, {{"bias"}, bias.data()});
      FAIL() << "conv2d ran without host code generation";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
    }
    return;
  }
  rt.conv2d(in.data(), filter.data(), out.data(), shape, {{"bias"}, bias.data()});
  for (std::int64_t k = 0; k < shape.k; ++k) {  // NHWC activations, HWIO weights (docs/host-backend.md)
    for (std::int64_t y = 0; y < 6; ++y) {
      for (std::int64_t x = 0; x < 6; ++x) {
        double ref = bias[k];
        for (std::int64_t c = 0; c < shape.c; ++c)
          for (std::int64_t r = 0; r < 3; ++r)
            for (std::int64_t s = 0; s < 3; ++s) {
              const std::int64_t iy = y + r - 1, ix = x + s - 1;
              if (iy < 0 || iy >= 6 || ix < 0 || ix >= 6) continue;
              ref += double(in[(iy * 6 + ix) * shape.c + c]) * filter[((r * 3 + s) * shape.c + c) * shape.k + k];
            }
        EXPECT_NEAR(out[(y * 6 + x) * shape.k + k], ref, 1e-4 * std::max(1.0, std::abs(ref)));
      }
    }
  }
}

TEST(RuntimeWithoutTable, RunsDefaultsAndSaysSo) {
  Runtime rt;
  const Workload w = workload(testing::kTunedWorkload);
  const Choice& c = rt.choose(w);
  EXPECT_EQ(c.kind, ChoiceKind::fallback);
  EXPECT_EQ(c.reason, "no table loaded");
  EXPECT_THROW(rt.choose(workload(R"({"op":"matmul","dtype":"float16","dims":{"M":4,"N":8,"K":8}})")), Error);
}

}  // namespace
}  // namespace atvoss::runtime
