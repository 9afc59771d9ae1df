// int8 and bf16 matmul and conv2d kernels (codegen_lowp.hpp, codegen_conv.hpp): over a table
// of schedules (ragged edges, several k or channel blocks, channels not a whole k group,
// padding, strides, every tile_order, two threads, batches, epilogues) each computes the
// reference; int8 is exact bit for bit, with s32 partial sums past 2^24, and pads with the
// input's zero point; the operands quantise as low_precision.hpp says; a CPU without the
// instructions is refused by name.
// A test whose instructions this CPU lacks is skipped with a message naming the flag.
#include "host/low_precision.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "core/error.hpp"
#include "host/builder.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "host/kernel_abi.hpp"
#include "host/kernel_timing.hpp"
#include "host/measure.hpp"
#include "host/packed_weights.hpp"
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
const std::vector<ScheduleCase> kLowpCases = {
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
  std::vector<ScheduleCase> out = kLowpCases;
  for (auto& c : out) c.workload = with_dtype(c.workload, dtype);
  return out;
}

// conv2d cases: every channel count but one is no whole k group (4 int8, 2 bf16 channels).
const std::vector<ScheduleCase> kLowpConvCases = {
    // One pixel block and two threads: three output-channel panels cut into slices of one and two.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1}})",
     {{"micro_m", 7}, {"micro_n", 16}, {"tile_k", 16}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":24,"H":7,"W":7,"K":40,"R":3,"S":3,"stride":1,"pad":1}})",
     {{"micro_m", 7}, {"micro_n", 16}, {"tile_k", 16}, {"tile_order", 1}, {"threads", 2}}},
    // C = 3 (the first layer), K < micro_n, 3x3 pad 1, blocks larger than the dims.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":3,"H":5,"W":9,"K":5,"R":3,"S":3,"stride":1,"pad":1}})",
     {{"micro_m", 6}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 16}, {"tile_order", 0}}},
    // Stride 2, two images, pixel blocks of 1 x 8, pixel blocks outer, two threads.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":13,"H":10,"W":11,"K":20,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["bias","relu"]})",
     {{"micro_m", 4},
      {"micro_n", 24},
      {"tile_h", 1},
      {"tile_w", 8},
      {"tile_n", 32},
      {"tile_k", 16},
      {"tile_order", 1},
      {"fusion_level", 1},
      {"k_steps", 1},
      {"async_copy_depth", 2},
      {"threads", 2}}},
    // Three channel blocks (16, 16, 4 of the padded 36), two output-channel blocks, gelu fused.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":35,"H":9,"W":9,"K":33,"R":3,"S":3,"pad":1},"epilogue":["bias","gelu"]})",
     {{"micro_m", 5},
      {"micro_n", 16},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_n", 32},
      {"tile_k", 16},
      {"tile_order", 0},
      {"fusion_level", 1},
      {"threads", 2}}},
    // 1x1 with the whole epilogue as separate passes, micro-tiles walked pixel-major.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":6,"W":6,"K":17,"R":1,"S":1},"epilogue":["batchnorm","relu","add"]})",
     {{"micro_m", 8},
      {"micro_n", 16},
      {"tile_h", 4},
      {"tile_w", 8},
      {"tile_k", 16},
      {"tile_order", 2},
      {"fusion_level", 0},
      {"threads", 2}}},
    // A 5x3 window with pad 2, a residual fused, prefetching.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":6,"H":12,"W":10,"K":16,"R":5,"S":3,"pad":2},"epilogue":["batchnorm","add"]})",
     {{"micro_m", 4}, {"micro_n", 16}, {"tile_h", 16}, {"tile_w", 16}, {"fusion_level", 2}, {"async_copy_depth", 2}}},
    // Stride 2 without padding (the image is read in place); micro-tiles wrap across rows.
    {R"({"op":"conv2d","dtype":"float32","dims":{"N":2,"C":8,"H":9,"W":9,"K":8,"R":3,"S":3,"stride":2}})",
     {{"micro_m", 5}, {"micro_n", 16}, {"tile_h", 4}, {"tile_w", 8}, {"tile_order", 2}, {"threads", 2}}},
};

std::vector<ScheduleCase> conv_cases_of(const std::string& dtype) {
  std::vector<ScheduleCase> out = kLowpConvCases;
  for (auto& c : out) c.workload = with_dtype(c.workload, dtype);
  return out;
}

TEST(LowPrecisionTest, Int8ConvKernelsComputeTheReferenceOverTheTable) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  testing::expect_every_case_computes_the_reference(conv_cases_of("int8"), 7);
}

TEST(LowPrecisionTest, Bf16ConvKernelsComputeTheReferenceOverTheTable) {
  ATVOSS_REQUIRE_FLAG("avx512_bf16");
  testing::expect_every_case_computes_the_reference(conv_cases_of("bfloat16"), 7);
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

// An int8 conv2d over four channel blocks (32, 32, 32, 4 of C = 99 padded to 100) with
// padding, with large codes (u8 in [200, 255], s8 in [100, 127]): sums of 891 products pass 2^24, and
// each output is qscale[j] * (sum over the taps inside the image of (qa - z) * qb), exactly.
TEST(LowPrecisionTest, Int8ConvIsExactBitForBitWithTheZeroPointAsPadding) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"int8","dims":{"N":2,"C":99,"H":7,"W":6,"K":20,"R":3,"S":3,"pad":1}})");
  const MatmulShape g = conv_gemm_shape(w);
  for (int order : {0, 1}) {
    Schedule s = default_schedule(w, this_machine());
    s.set("tile_k", 32);
    s.set("tile_order", order);
    s.set("threads", 2);
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
    o.qzero = 31;
    for (std::int64_t j = 0; j < g.n; ++j) {
      std::int64_t sum = 0;
      for (std::int64_t kk = 0; kk < g.k; ++kk) sum += std::int8_t(o.qb[std::size_t(kk * g.n + j)]);
      o.qcomp[std::size_t(j)] = std::int32_t(o.qzero * sum);
    }
    AtvossArgs args = o.args();
    k.fn(&args);
    const std::int64_t C = 99, H = 7, W = 6;
    int wrong = 0;
    std::int64_t largest = 0;
    for (std::int64_t p = 0; p < g.m; ++p) {
      const std::int64_t n = p / (H * W), oh = p / W % H, ow = p % W;
      for (std::int64_t j = 0; j < g.n; ++j) {
        std::int64_t acc = 0, raw = 0;
        for (std::int64_t r = 0; r < 3; ++r)
          for (std::int64_t q = 0; q < 3; ++q)
            for (std::int64_t c = 0; c < C; ++c) {
              const std::int64_t ih = oh - 1 + r, iw = ow - 1 + q;
              const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
              const std::int64_t a = inside ? o.qa[std::size_t(((n * H + ih) * W + iw) * C + c)] : o.qzero;
              const std::int64_t b = std::int8_t(o.qb[std::size_t(((r * 3 + q) * C + c) * g.n + j)]);
              acc += (a - o.qzero) * b;
              raw += a * b;
            }
        largest = std::max(largest, raw);
        const float want = o.qscale[std::size_t(j)] * float(std::int32_t(acc));
        const float got = o.c[std::size_t(p * g.n + j)];
        if (std::memcmp(&want, &got, 4) != 0 && ++wrong <= 3)
          ADD_FAILURE() << "order " << order << " pixel " << p << " channel " << j << " = " << got << ", want " << want;
      }
    }
    EXPECT_EQ(wrong, 0) << "tile_order " << order;
    EXPECT_GT(largest, std::int64_t(1) << 24);
  }
}

// Weights packed once outside the call (packed_weights.hpp) give the output the per-call
// packing gives, bit for bit, without the kernel reading its weights argument: here it points
// at other weights. One image and two (fp32 packs one block at a time into a ring for one).
void expect_prepacked_weights_give_the_same_output(const std::string& dtype) {
  for (const char* images : {"1", "2"}) {
    std::string text =
        R"({"op":"conv2d","dtype":"float32","dims":{"N":IMAGES,"C":35,"H":9,"W":7,"K":40,"R":3,"S":3,"pad":1},"epilogue":["bias","relu"]})";
    text.replace(text.find("IMAGES"), 6, images);
    const Workload w = workload(with_dtype(text, dtype));
    for (int order : {0, 1, 2}) {
      SCOPED_TRACE(dtype + " N=" + images + " order " + std::to_string(order));
      Schedule s = default_schedule(w, this_machine());
      s.set("tile_order", order);
      s.set("threads", 2);
      s.set("async_copy_depth", 2);  // fp32: packed (1 reads the weights in place)
      TempDir cache;
      Loaded k;
      load(w, s, cache, k);
      Operands o = make_operands(w, 3);
      AtvossArgs args = o.args();
      k.fn(&args);
      const std::vector<float> per_call = o.c;
      const PackedWeights packed = PackedWeights::pack(k.handle, args);
      ASSERT_TRUE(packed) << "the kernel exports no weight packing";
      std::vector<std::uint8_t> other(o.qb.size(), 0x11);
      std::vector<float> other_fp32(o.b.size(), 0.5f);
      if (dtype == "float32")
        args.b = other_fp32.data();
      else
        args.qb = other.data();
      args.qb_packed = packed.data();
      std::fill(o.c.begin(), o.c.end(), 0.0f);
      k.fn(&args);
      EXPECT_EQ(std::memcmp(o.c.data(), per_call.data(), per_call.size() * 4), 0);
      args.qb_packed = nullptr;  // the other weights do change the output when packed per call
      k.fn(&args);
      EXPECT_NE(std::memcmp(o.c.data(), per_call.data(), per_call.size() * 4), 0);
    }
  }
}

TEST(LowPrecisionTest, Fp32ConvWeightsPackedOnceGiveTheSameOutput) {
  expect_prepacked_weights_give_the_same_output("float32");
  // A schedule that reads its weights in place packs none.
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":8,"H":6,"W":6,"K":16,"R":3,"S":3,"pad":1}})");
  Schedule s = default_schedule(w, this_machine());
  s.set("async_copy_depth", 1);
  TempDir cache;
  Loaded k;
  load(w, s, cache, k);
  Operands o = make_operands(w, 3);
  EXPECT_FALSE(PackedWeights::pack(k.handle, o.args()));
}

TEST(LowPrecisionTest, Int8ConvWeightsPackedOnceGiveTheSameOutput) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  expect_prepacked_weights_give_the_same_output("int8");
}

TEST(LowPrecisionTest, Bf16ConvWeightsPackedOnceGiveTheSameOutput) {
  ATVOSS_REQUIRE_FLAG("avx512_bf16");
  expect_prepacked_weights_give_the_same_output("bfloat16");
}

// The runner times an int8 conv with its weights packed once, and checks that path too: a
// packing function that leaves the buffer unpacked is a wrong answer.
TEST(LowPrecisionTest, TheRunnerChecksThePrepackedPath) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":16,"H":6,"W":6,"K":32,"R":3,"S":3,"pad":1}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  EXPECT_EQ(testing::measure_source(w, src).status, Status::ok);
  const std::string pack = "for_weight_blocks([&](const WeightBlock& b) { pack_block(static_cast";
  ASSERT_NE(src.find(pack), std::string::npos);
  src.replace(src.find(pack), pack.size(),
              "if (false) for_weight_blocks([&](const WeightBlock& b) { pack_block(static_cast");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
  EXPECT_NE(m.message.find("prepacked"), std::string::npos) << m.message;
}

// Padding with a zero code is not padding with zero: the compensation counts every tap.
TEST(LowPrecisionTest, AnInt8ConvPaddedWithCodeZeroIsAWrongAnswer) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w =
      workload(R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":8,"H":6,"W":6,"K":16,"R":3,"S":3,"pad":1}})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string sub = "TA(g->qzero)";
  ASSERT_NE(src.find(sub), std::string::npos);
  src.replace(src.find(sub), sub.size(), "TA(0)");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
}

TEST(LowPrecisionTest, EveryKnobChangesTheInt8ConvSource) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  testing::expect_every_knob_changes_the_source(workload(
      R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":256,"H":14,"W":14,"K":256,"R":3,"S":3,"pad":1},"epilogue":["bias"]})"));
}

// An AVX-512 CPU with VNNI, BF16 and AMX: the device this file cannot run AMX on describes.
MachineInfo amx_machine() {
  MachineInfo m = testing::avx512_machine();
  m.simd_flags = {"amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f"};
  return m;
}

// AMX cases: 1 and 2 tiles each way, ragged edges, k padded to a tile row, several k blocks,
// every tile_order, two threads.
const std::vector<ScheduleCase> kAmxCases = {
    {R"({"op":"matmul","dtype":"float32","dims":{"M":13,"N":37,"K":29}})",
     {{"amx_tiles", 1}, {"micro_m", 16}, {"micro_n", 8}, {"tile_order", 0}, {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":70,"N":50,"K":1200},"epilogue":["bias","gelu"]})",
     {{"amx_tiles", 1},
      {"micro_m", 32},
      {"micro_n", 8},
      {"tile_m", 48},
      {"tile_k", 256},
      {"tile_order", 1},
      {"fusion_level", 1},
      {"threads", 2}}},
    {R"({"op":"matmul","dtype":"float32","dims":{"M":97,"N":130,"K":200},"epilogue":["add"]})",
     {{"amx_tiles", 1}, {"micro_m", 32}, {"micro_n", 16}, {"tile_k", 64}, {"tile_order", 2}, {"fusion_level", 2}}},
};

// micro_n in the table is in 8-lane units (ScheduleCase): 8 -> 16 columns on AVX-512, one tile.
TEST(LowPrecisionTest, AmxKernelsComputeTheReferenceOverTheTable) {
  ATVOSS_REQUIRE_FLAG("amx_int8");
  testing::expect_every_case_computes_the_reference(
      [] {
        std::vector<ScheduleCase> out;
        for (const char* d : {"int8", "bfloat16"})
          for (auto c : kAmxCases) out.push_back({with_dtype(c.workload, d), c.knobs});
        return out;
      }(),
      7);
}

// Where the CPU has AMX the space offers tiles (micro_m 16 and 32, amx_tiles), checks their
// rules, and the tile source compiles here too (its intrinsics are enabled in the source);
// without AMX the knob is absent and 16 rows are refused.
TEST(LowPrecisionTest, AmxTilesAreOfferedOnlyWhereTheCpuHasThem) {
  const Workload w = workload(R"({"op":"matmul","dtype":"int8","dims":{"M":256,"N":256,"K":256}})");
  const MachineInfo amx = amx_machine();
  const ScheduleSpace space = space_for(w, amx);
  Schedule s = default_schedule(w, amx);
  ASSERT_TRUE(s.has("amx_tiles"));
  EXPECT_EQ(s.at("amx_tiles"), 1) << "tiles by default where the CPU has them";
  EXPECT_EQ(s.at("micro_m"), 16) << "one tile of rows (docs/decisions/host-amx-default.md)";
  EXPECT_EQ(s.at("micro_n"), 32);
  EXPECT_EQ(s.at("tile_k"), 256) << "512 bytes of a row, clamped to K";
  s.set("micro_m", 6);
  EXPECT_FALSE(space.check(s).ok) << "a 6-row block is no tile block";
  s.set("micro_m", 32);
  s.set("micro_n", 32);
  EXPECT_TRUE(space.check(s).ok) << space.check(s).reason;
  s.set("async_copy_depth", 2);
  EXPECT_FALSE(space.check(s).ok);
  s.set("async_copy_depth", 1);
  Schedule vnni = s;
  vnni.set("amx_tiles", 0);
  EXPECT_FALSE(space.check(vnni).ok) << "32 rows of dot-product accumulators";
  const std::string src = generate_source(w, s, amx);
  EXPECT_NE(src.find("_tile_dpbusd"), std::string::npos);
  EXPECT_EQ(generate_source(w, vnni, amx).find("_tile_"), std::string::npos);
  TempDir cache;
  BuildOptions options;
  options.cache_dir = cache.str();
  const auto built = build_all({src}, options);
  EXPECT_EQ(built[0].status, Status::ok) << built[0].message;

  Workload bf16 = workload(R"({"op":"matmul","dtype":"bfloat16","dims":{"M":64,"N":64,"K":64}})");
  s.set("tile_k", 64);
  EXPECT_NE(generate_source(bf16, s, amx).find("_tile_dpbf16ps"), std::string::npos);
  MachineInfo no_amx = amx;
  no_amx.simd_flags = {"avx512_bf16", "avx512_vnni", "avx512f"};
  EXPECT_FALSE(default_schedule(w, no_amx).has("amx_tiles"));
  const Workload deep = workload(R"({"op":"matmul","dtype":"int8","dims":{"M":64,"N":64,"K":4096}})");
  auto tile_k_values = [&](const MachineInfo& m) {
    const ScheduleSpace sp = space_for(deep, m);
    for (const auto& k : sp.knobs())
      if (k.name == "tile_k") return k.values;
    return std::vector<std::int64_t>{};
  };
  EXPECT_EQ(tile_k_values(amx).back(), 1024) << "AMX takes kc 1024";
  EXPECT_EQ(tile_k_values(no_amx).back(), 512) << "the dot products' space is unchanged";
  EXPECT_EQ(default_schedule(w, no_amx).at("micro_m"), 6) << "the dot-product default is unchanged";
  MachineInfo int8_only = amx;
  int8_only.simd_flags = {"amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f"};
  EXPECT_FALSE(default_schedule(bf16, int8_only).has("amx_tiles")) << "bf16 tiles need amx_bf16";
}

// quantize (fp32 or bf16 before an int8 layer) and requantize (int8 before int8) leave every
// output on the u8 grid of qout and still compute the reference (which forgives one grid step,
// so the grid is checked here on its own). With qc set (kernel_abi.hpp's u8 output) the kernel
// writes the codes of exactly the values it writes without it. In every dtype and op, with the
// quantize fused into the write-back and as a separate pass, over several k blocks (c holds
// the partial sums) and on two threads; with the quantize fused and one k block it does not
// write c at all; with qc_with_c it writes both. Two grids (a QDQ model's conv, its residual
// Add and the sum's quantize: the values on the last grid, the codes of it) in an int8 matmul,
// on AMX tiles where the CPU has them, and in int8 and fp32 convs.
TEST(LowPrecisionTest, AQuantizeEpilogueWritesGridValuesOrTheirU8Codes) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  ATVOSS_REQUIRE_FLAG("avx512_bf16");
  std::vector<ScheduleCase> cases = {
      {R"({"op":"matmul","dtype":"int8","dims":{"M":19,"N":40,"K":300},"epilogue":["bias","requantize","add","requantize"]})",
       {{"tile_k", 64}}},
      {R"({"op":"conv2d","dtype":"int8","dims":{"N":2,"C":40,"H":9,"W":9,"K":24,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["bias","requantize","add","relu","requantize"]})",
       {{"tile_k", 16}}},
      {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":9,"W":9,"K":24,"R":1,"S":1,"stride":1,"pad":0},"epilogue":["bias","requantize","add","requantize"]})",
       {}},
      {R"({"op":"matmul","dtype":"float32","dims":{"M":19,"N":40,"K":300},"epilogue":["bias","quantize"]})",
       {{"tile_k", 64}, {"threads", 2}}},
      {R"({"op":"matmul","dtype":"float32","dims":{"M":19,"N":40,"K":60},"epilogue":["quantize"]})", {}},
      {R"({"op":"matmul","dtype":"int8","dims":{"M":19,"N":40,"K":300},"epilogue":["bias","relu","requantize"]})",
       {{"tile_k", 64}}},
      {R"({"op":"batch_matmul","dtype":"int8","dims":{"B":2,"M":9,"N":24,"K":70},"epilogue":["requantize"]})", {}},
      {R"({"op":"matmul","dtype":"bfloat16","dims":{"M":19,"N":40,"K":70},"epilogue":["quantize"]})", {}},
      {R"({"op":"conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":9,"W":9,"K":24,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["bias","quantize"]})",
       {{"tile_k", 16}, {"threads", 2}}},
      {R"({"op":"conv2d","dtype":"int8","dims":{"N":2,"C":40,"H":9,"W":9,"K":24,"R":3,"S":3,"stride":2,"pad":1},"epilogue":["requantize"]})",
       {{"tile_k", 16}}},
      {R"({"op":"conv2d","dtype":"bfloat16","dims":{"N":1,"C":16,"H":8,"W":8,"K":24,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["quantize"]})",
       {}},
      {R"({"op":"depthwise_conv2d","dtype":"float32","dims":{"N":1,"C":40,"H":9,"W":9,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["quantize"]})",
       {}},
  };
  if (this_machine().has_flag("amx_int8") && this_machine().has_flag("amx_tile")) {
    cases.push_back(
        {R"({"op":"matmul","dtype":"int8","dims":{"M":40,"N":40,"K":128},"epilogue":["bias","requantize","add","requantize"]})",
         {{"amx_tiles", 1}, {"micro_m", 32}, {"micro_n", 16}, {"tile_k", 64}, {"threads", 2}}});
  }
  for (const auto& c : cases) {
    const Workload w = workload(c.workload);
    const ScheduleSpace space = space_for(w, this_machine());
    std::int64_t full = 0;
    for (const auto& k : space.knobs())
      if (k.name == "fusion_level") full = k.values.back();
    ASSERT_GT(full, 0) << c.workload << ": the quantize op can be fused";
    for (std::int64_t level : {std::int64_t(0), full}) {
      Schedule s = testing::case_schedule(w, c);
      s.set("fusion_level", level);
      ASSERT_TRUE(space.check(s).ok) << c.workload << ": " << space.check(s).reason;
      TempDir cache;
      Loaded k;
      load(w, s, cache, k);
      ASSERT_NE(k.fn, nullptr);
      Operands o = make_operands(w, 5);
      AtvossArgs args = o.args();
      k.fn(&args);
      const std::string what = std::string(c.workload) + " fusion_level " + std::to_string(level);
      ASSERT_LE(max_relative_error(w, o, 5), kMaxRelativeError) << what;
      const std::vector<float> values = o.c, grid = last_grid(o.qout);
      EXPECT_EQ(std::count_if(values.begin(), values.end(),
                              [&](float v) {
                                const double q = double(v) / grid[0] + grid[1];
                                return std::abs(q - std::round(q)) > 1e-3 || q < -1e-3 || q > 255.001;
                              }),
                0)
          << what << ": outputs off the grid";
      std::vector<std::uint8_t> codes(values.size(), 0);
      std::fill(o.c.begin(), o.c.end(), 7.0f);
      args.qc = codes.data();
      k.fn(&args);
      EXPECT_EQ(wrong_codes(values, codes.data(), grid), 0u) << what;
      EXPECT_GT(std::set<std::uint8_t>(codes.begin(), codes.end()).size(), 20u) << what;
      // qc_with_c: the same codes, and the values as well.
      std::vector<std::uint8_t> both(values.size(), 0);
      std::fill(o.c.begin(), o.c.end(), 7.0f);
      args.qc = both.data();
      args.qc_with_c = 1;
      k.fn(&args);
      EXPECT_EQ(both, codes) << what;
      EXPECT_EQ(o.c, values) << what << ": the values beside the codes";
      args.qc_with_c = 0;
      args.qc = codes.data();
      std::fill(o.c.begin(), o.c.end(), 7.0f);
      k.fn(&args);
      if (level == full && c.knobs.empty()) {  // one k block: no partial sums
        EXPECT_EQ(std::count(o.c.begin(), o.c.end(), 7.0f), std::ptrdiff_t(o.c.size())) << what << ": c written";
      }
    }
  }
}

// The runner checks the u8 output too: codes one step off are a wrong answer naming it.
TEST(LowPrecisionTest, TheRunnerChecksTheU8Output) {
  ATVOSS_REQUIRE_FLAG("avx512_vnni");
  const Workload w =
      workload(R"({"op":"matmul","dtype":"int8","dims":{"M":20,"N":40,"K":20},"epilogue":["requantize"]})");
  std::string src = generate_source(w, default_schedule(w, this_machine()), this_machine());
  const std::string sub = "(grid[1] + 0.5f)";
  ASSERT_NE(src.find(sub), std::string::npos);
  EXPECT_EQ(testing::measure_source(w, src).status, Status::ok);
  src.replace(src.find(sub), sub.size(), "(grid[1] + 1.5f)");
  const Measurement m = testing::measure_source(w, src);
  EXPECT_EQ(m.status, Status::wrong_answer) << m.message;
  EXPECT_NE(m.message.find("u8 output"), std::string::npos) << m.message;
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
  std::string why;
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
  // A conv's reduction is R x S x C: 3 x 3 x 7282 passes 65536.
  try {
    space_for(workload(R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":7282,"H":4,"W":4,"K":16,"R":3,"S":3}})"), m);
    FAIL() << "an int8 conv whose reduction can overflow s32 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dims.R x dims.S x dims.C"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(
      supports(workload(R"({"op":"conv2d","dtype":"int8","dims":{"N":1,"C":8,"H":4,"W":4,"K":16,"R":3,"S":3}})"), &why))
      << why;
  EXPECT_FALSE(supports(
      workload(R"({"op":"depthwise_conv2d","dtype":"int8","dims":{"N":1,"C":8,"H":4,"W":4,"R":3,"S":3}})"), &why));
  EXPECT_NE(why.find("dtype"), std::string::npos) << why;
  EXPECT_TRUE(supports(w, &why)) << why;
  EXPECT_FALSE(supports(workload(R"({"op":"softmax","dtype":"int8","dims":{"M":8,"N":8}})"), &why));
  EXPECT_NE(why.find("dtype"), std::string::npos) << why;
  EXPECT_FALSE(supports(workload(R"({"op":"matmul","dtype":"float16","dims":{"M":8,"N":8,"K":8}})"), &why));
  EXPECT_NE(why.find("bfloat16"), std::string::npos) << why;
}

}  // namespace
}  // namespace atvoss::host
