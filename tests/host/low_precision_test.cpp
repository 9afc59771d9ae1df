// int8 and bf16 matmul kernels (codegen_lowp.hpp): over a table of schedules (ragged edges,
// several k blocks, every tile_order, two threads, batches, epilogues) each computes the
// reference; int8 is exact bit for bit, with s32 partial sums past 2^24; the operands
// quantise as low_precision.hpp says; a CPU without the instructions is refused by name.
// A test whose instructions this CPU lacks is skipped with a message naming the flag.
#include "host/low_precision.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.hpp"
#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/kernel_abi.hpp"
#include "host/kernel_timing.hpp"
#include "host/measure.hpp"
#include "host_test_util.hpp"

namespace atvoss::host {
namespace {

using testing::ScheduleCase;
using testing::TempDir;
using testing::workload;

#define ATVOSS_REQUIRE_FLAG(flag)                                        \
  if (!this_machine().has_flag(flag) || this_machine().simd_bytes != 64) \
  GTEST_SKIP() << "this CPU (" << this_machine().model << ") has no " flag ": its kernels cannot run here"

std::string with_dtype(std::string text, const std::string& dtype) {
  const std::string mark = "\"float32\"";
  return text.replace(text.find(mark), mark.size(), "\"" + dtype + "\"");
}

// fp32 texts; the dtype is substituted per test.
const std::vector<ScheduleCase> kCases = {
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29}})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":130},"epilogue":["bias","gelu"]})",
     {{"micro_m", 4},
      {"micro_n", 24},
      {"tile_m", 48},
      {"tile_n", 256},
      {"tile_k", 64},
      {"tile_order", 1},
      {"fusion_level", 1},
      {"k_steps", 1},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":50,"N":70,"K":131},"epilogue":["bias","gelu"]})",
     {{"micro_m", 8},
      {"micro_n", 8},
      {"tile_m", 48},
      {"tile_k", 64},
      {"tile_order", 2},
      {"fusion_level", 0},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":33,"N":41,"K":300},"epilogue":["batchnorm","relu","add"]})",
     {{"micro_m", 4}, {"micro_n", 24}, {"tile_k", 128}, {"fusion_level", 2}, {"tile_order", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":197,"N":80,"K":256},"epilogue":["bias"]})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_m", 48}, {"tile_k", 256}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"batch_matmul","dtype":"float32","dims":{"B":3,"M":17,"N":24,"K":40},"epilogue":["add"]})",
     {{"micro_m", 6}, {"micro_n", 8}, {"fusion_level", 2}, {"async_copy_depth", 2}, {"k_steps", 1}, {"threads", 2}}},
};

std::vector<ScheduleCase> cases_of(const std::string& dtype) {
  std::vector<ScheduleCase> out = kCases;
  for (auto& c : out) c.workload = with_dtype(c.workload, dtype);
  return out;
}

TEST(LowPrecisionTest, Int8KernelsComputeTheReferenceOverTheTable) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  testing::expect_every_case_computes_the_reference(cases_of("int8"), 7);
}

TEST(LowPrecisionTest, Bf16KernelsComputeTheReferenceOverTheTable) {
  ATVOSS_REQUIRE_FLAG("avx512_bf16");
  testing::expect_every_case_computes_the_reference(cases_of("bfloat16"), 7);
}

// The kernel of (w, s), compiled and loaded into this process.
struct Loaded {
  void* handle = nullptr;
  KernelFn fn = nullptr;
  ~Loaded() {
    if (handle) ::dlclose(handle);
  }
};

void load(const Workload& w, const Schedule& s, const TempDir& cache, Loaded& out) {
  BuildOptions options;
  options.cache_dir = cache.str();
  const auto built = build_all({generate_source(w, s, this_machine())}, options);
  ASSERT_EQ(built[0].status, Status::ok) << built[0].message;
  out.handle = ::dlopen(built[0].so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(out.handle, nullptr) << ::dlerror();
  out.fn = reinterpret_cast<KernelFn>(::dlsym(out.handle, kKernelSymbol));
  ASSERT_NE(out.fn, nullptr);
}

// Large integers: every u8 of A in [200, 255] and s8 of B in [100, 127], so that the sums
// over K = 1200 reach 3.9e7, past the 2^24 where fp32 partial sums would round; five k
// blocks of 256 add them up.
TEST(LowPrecisionTest, Int8IsExactBitForBitPastTwoToTheTwentyFour) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w = workload(R"({"op":"batch_matmul","dtype":"int8","dims":{"B":2,"M":21,"N":45,"K":1200}})");
  for (int order : {0, 1, 2}) {
    Schedule s = default_schedule(w, this_machine());
    s.set("tile_k", 256);
    s.set("tile_order", order);
    s.set("threads", order == 1 ? 1 : 2);
    ASSERT_TRUE(space_for(w, this_machine()).check(s).ok) << space_for(w, this_machine()).check(s).reason;
    TempDir cache;
    Loaded k;
    load(w, s, cache, k);
    ASSERT_NE(k.fn, nullptr);
    Operands o = make_operands(w, 3);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> big_a(200, 255), big_b(100, 127);
    for (auto& q : o.qa) q = std::uint8_t(big_a(rng));
    for (auto& q : o.qb) q = std::uint8_t(std::int8_t(big_b(rng)));
    const MatmulShape shape = matmul_shape(w);
    std::int64_t largest = 0;
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t j = 0; j < shape.n; ++j) {
        std::int64_t sum = 0;
        for (std::int64_t kk = 0; kk < shape.k; ++kk)
          sum += std::int8_t(o.qb[std::size_t((b * shape.k + kk) * shape.n + j)]);
        o.qcomp[std::size_t(b * shape.n + j)] = std::int32_t(128 * sum);
      }
    AtvossArgs args = o.args();
    k.fn(&args);
    int wrong = 0;
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t i = 0; i < shape.m; ++i)
        for (std::int64_t j = 0; j < shape.n; ++j) {
          const std::int64_t acc = int8_accumulator(shape, o, b, i, j);
          largest = std::max(largest, acc + o.qcomp[std::size_t(b * shape.n + j)]);
          const float want = o.qscale[std::size_t(j)] * float(std::int32_t(acc));
          const float got = o.c[std::size_t((b * shape.m + i) * shape.n + j)];
          if (std::memcmp(&want, &got, 4) != 0 && ++wrong <= 3)
            ADD_FAILURE() << "order " << order << " C[" << b << "," << i << "," << j << "] = " << got << ", want "
                          << want;
        }
    EXPECT_EQ(wrong, 0) << "tile_order " << order;
    EXPECT_GT(largest, std::int64_t(1) << 24);
  }
}

// quantize (fp32 or bf16 before an int8 layer) and requantize (int8 before int8) leave every
// output on the u8 grid of qout, fused into the write-back and as a separate pass alike, and
// still compute the reference. The reference forgives one grid step, so the grid is checked
// here on its own.
TEST(LowPrecisionTest, AQuantizeEpilogueLeavesEveryOutputOnItsGrid) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  for (const char* text :
       {R"({"op":"matmul","dtype":"float32","dims":{"M":19,"N":40,"K":70},"epilogue":["bias","quantize"]})",
        R"({"op":"matmul","dtype":"int8","dims":{"M":19,"N":40,"K":70},"epilogue":["bias","relu","requantize"]})"}) {
    const Workload w = workload(text);
    std::int64_t full = 0;
    const ScheduleSpace space = space_for(w, this_machine());  // a temporary's knobs() would dangle
    for (const auto& k : space.knobs()) {
      if (k.name == "fusion_level") full = k.values.back();
    }
    ASSERT_GT(full, 0) << "the quantize op can be fused";
    for (std::int64_t level : {std::int64_t(0), full}) {
      Schedule s = default_schedule(w, this_machine());
      s.set("fusion_level", level);
      TempDir cache;
      Loaded k;
      load(w, s, cache, k);
      ASSERT_NE(k.fn, nullptr);
      Operands o = make_operands(w, 4);
      AtvossArgs args = o.args();
      k.fn(&args);
      EXPECT_LE(max_relative_error(w, o, 4), kMaxRelativeError) << text;
      int off = 0, levels_used = 0;
      std::vector<bool> used(256, false);
      for (float c : o.c) {
        const double q = double(c) / o.qout[0] + o.qout[1];
        if (std::abs(q - std::round(q)) > 1e-3 || q < -1e-3 || q > 255.001)
          ++off;
        else if (!used[std::size_t(std::lround(q))])
          used[std::size_t(std::lround(q))] = true, ++levels_used;
      }
      EXPECT_EQ(off, 0) << text << " fusion_level " << level << ": outputs off the grid";
      EXPECT_GT(levels_used, 20) << text;  // the data spans many levels, not one saturated end
    }
  }
}

TEST(LowPrecisionTest, AnInt8KernelWithoutTheCompensationIsAWrongAnswer) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w = workload(R"({"op":"matmul","dtype":"int8","dims":{"M":20,"N":20,"K":20}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string sub = "x - loadi(comp + col, n)";
  ASSERT_NE(src.find(sub), std::string::npos);
  src.replace(src.find(sub), sub.size(), "x");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
}

TEST(LowPrecisionTest, EveryKnobChangesTheInt8Source) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  testing::expect_every_knob_changes_the_source(
      workload(R"({"op":"matmul","dtype":"int8","dims":{"M":512,"N":512,"K":512},"epilogue":["bias"]})"));
}

TEST(LowPrecisionTest, QuantisationRepresentsTheOperands) {
  const AffineU8 p = affine_u8(-1.0f, 1.0f);
  EXPECT_NEAR(p.zero_point, 127.5, 0.5);
  EXPECT_FLOAT_EQ(p.scale, 2.0f / 255.0f);
  EXPECT_EQ(p.value(p.quantize(0.0f)), 0.0f);  // zero is exact (padding, ReLU outputs)
  EXPECT_EQ(p.quantize(-5.0f), 0);             // saturates
  EXPECT_EQ(p.quantize(5.0f), 255);
  EXPECT_EQ(affine_u8(0.0f, 2.0f).zero_point, 0);  // a non-negative range wastes no code
  // bf16 rounds to nearest, ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);

  const Workload w = workload(R"({"op":"matmul","dtype":"int8","dims":{"M":4,"N":3,"K":5}})");
  const Operands o = make_operands(w, 1);
  const Operands f = make_operands(workload(R"({"op":"matmul","dtype":"float32","dims":{"M":4,"N":3,"K":5}})"), 1);
  ASSERT_EQ(o.qb.size(), 15u);
  for (std::size_t j = 0; j < 3; ++j) {
    float largest = 0;
    for (std::size_t k = 0; k < 5; ++k) largest = std::max(largest, std::abs(f.b[k * 3 + j]));
    int widest = 0;
    for (std::size_t k = 0; k < 5; ++k) {
      widest = std::max(widest, std::abs(int(std::int8_t(o.qb[k * 3 + j]))));
      EXPECT_NEAR(o.b[k * 3 + j], f.b[k * 3 + j], largest / 127 / 2 + 1e-7);
    }
    EXPECT_EQ(widest, 127) << "column " << j << " uses the whole s8 range";
    EXPECT_FLOAT_EQ(o.qscale[j], p.scale * (largest / 127));
  }
  for (std::size_t i = 0; i < o.a.size(); ++i) EXPECT_NEAR(o.a[i], f.a[i], p.scale / 2 + 1e-7);
}

TEST(LowPrecisionTest, ACpuWithoutTheInstructionsIsRefusedByName) {
  const Workload w = workload(R"({"op":"matmul","dtype":"int8","dims":{"M":64,"N":64,"K":64}})");
  MachineInfo m = testing::avx512_machine();
  try {
    space_for(w, m);
    FAIL() << "an AVX-512 core without VNNI got an int8 space";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find("avx512_vnni"), std::string::npos) << e.what();
  }
  m.simd_flags = {"avx512_vnni", "avx512f"};
  EXPECT_NO_THROW(space_for(w, m));
  // Past K = 65536 the s32 accumulator could wrap: refused, naming the dim.
  try {
    space_for(workload(R"({"op":"matmul","dtype":"int8","dims":{"M":4,"N":16,"K":65537}})"), m);
    FAIL() << "an int8 K that can overflow s32 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dims.K"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(space_for(workload(R"({"op":"matmul","dtype":"int8","dims":{"M":4,"N":16,"K":65536}})"), m));
  std::string why;
  EXPECT_TRUE(supports(w, &why)) << why;
  EXPECT_FALSE(supports(workload(R"({"op":"softmax","dtype":"int8","dims":{"M":8,"N":8}})"), &why));
  EXPECT_NE(why.find("dtype"), std::string::npos) << why;
  EXPECT_FALSE(supports(workload(R"({"op":"matmul","dtype":"float16","dims":{"M":8,"N":8,"K":8}})"), &why));
  EXPECT_NE(why.find("bfloat16"), std::string::npos) << why;
}

}  // namespace
}  // namespace atvoss::host
