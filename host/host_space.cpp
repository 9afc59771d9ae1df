#include "host/host_space.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "host/conv_space.hpp"
#include "host/knob_values.hpp"
#include "host/rowops_space.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

// AMX tiles (amx_tiles 1): the micro-tile is 1 or 2 tiles of 16 rows by 1 or 2 tiles of 16
// columns (4 accumulator tiles, 2 of A and 2 of B fill the 8), loaded whole: no prefetch
// distance. The dot-product micro-kernel's blocks stop at 8 rows.
Verdict check_amx(const Schedule& s, bool tiles, std::int64_t mr, std::int64_t nr) {
  if (!tiles) {
    if (mr > 8) return Verdict::invalid("micro_m " + std::to_string(mr) + " is a block of AMX tiles (amx_tiles 1)");
    return Verdict::valid();
  }
  if ((mr != 16 && mr != 32) || (nr != 16 && nr != 32)) {
    return Verdict::invalid("amx_tiles: the micro-tile " + std::to_string(mr) + "x" + std::to_string(nr) +
                            " is not 16 or 32 rows by 16 or 32 columns of tiles");
  }
  if (s.get_or(std::string(knobs::async_copy_depth), 1) != 1) {
    return Verdict::invalid("amx_tiles: tiles load whole; async_copy_depth must be 1");
  }
  return Verdict::valid();
}

// In place (async_copy_depth 0) nothing is packed: B's kc x micro_n panel, rows N apart, is
// read again by every row tile and A's micro_m rows of kc by every panel, so both stay in L2
// together; there is no A block (docs/decisions/host-matmul-in-place.md).
Verdict check_in_place(std::int64_t kc, std::int64_t mr, std::int64_t nr, std::int64_t eb, const MachineInfo& m) {
  if (kc * (nr + mr) * eb > m.l2_bytes) {
    return Verdict::invalid("L2: B panel and A rows in place " + std::to_string(kc * (nr + mr) * eb) + " B > " +
                            std::to_string(m.l2_bytes) + " B");
  }
  return Verdict::valid();
}

Verdict check(const Schedule& s, const MachineInfo& m, std::int64_t eb, std::int64_t k_dim) {
  const std::int64_t mr = s.at(std::string(knobs::micro_m)), nr = s.at(std::string(knobs::micro_n));
  const std::int64_t kc = std::min(s.at(std::string(knobs::tile_k)), k_dim), mc = s.at(std::string(knobs::tile_m));
  const std::int64_t nc = s.at(std::string(knobs::tile_n));
  const std::int64_t nv = nr / m.lanes();
  const bool tiles = s.get_or(std::string(knobs::amx_tiles), 0) == 1;
  if (Verdict v = check_amx(s, tiles, mr, nr); !v.ok) return v;
  if (!tiles && mr * nv + nv + 1 > m.vector_registers) {
    return Verdict::invalid("registers: " + std::to_string(mr) + "x" + std::to_string(nr) + " needs " +
                            std::to_string(mr * nv + nv + 1) + " vectors > " + std::to_string(m.vector_registers));
  }
  if (s.get_or(std::string(knobs::async_copy_depth), 1) == 0) {
    if (Verdict v = check_in_place(kc, mr, nr, eb, m); !v.ok) return v;
  } else {
    if (kc * nr * eb > m.l1d_bytes) {
      return Verdict::invalid("L1d: B panel " + std::to_string(kc * nr * eb) + " B > " + std::to_string(m.l1d_bytes) +
                              " B");
    }
    if (mc * kc * eb > m.l2_bytes) {
      return Verdict::invalid("L2: A block " + std::to_string(mc * kc * eb) + " B > " + std::to_string(m.l2_bytes) +
                              " B");
    }
  }
  const std::int64_t llc = std::max(m.l3_bytes, m.l2_bytes);
  if (kc * nc * eb > llc) {
    return Verdict::invalid("L3: B block " + std::to_string(kc * nc * eb) + " B > " + std::to_string(llc) + " B");
  }
  return Verdict::valid();
}

// kc values. AMX: 1024 as well, which halves the accumulators' trips through memory per k.
// fp32: 1024 and 4096 as well, which only operands in place can take (their B panel is bound by
// L2, not L1d): the accumulators stay in registers over all of a K up to 4096.
std::vector<std::int64_t> k_blocks(const Workload& w, bool amx) {
  if (amx) return {64, 128, 256, 512, 1024};
  if (w.dtype() == DType::float32) return {64, 128, 256, 512, 1024, 4096};
  return {64, 128, 256, 512};
}

}  // namespace

bool has_amx(const Workload& w, const MachineInfo& m) {
  if (!m.has_flag("amx_tile") || m.simd_bytes != 64) return false;
  if (w.dtype() == DType::int8) return m.has_flag("amx_int8");
  return w.dtype() == DType::bfloat16 && m.has_flag("amx_bf16");
}

std::int64_t kernel_element_bytes(DType d) { return d == DType::float32 ? 4 : dtype_bytes(d); }

bool supports(const Workload& w, std::string* why) {
  if (w.is_conv()) return conv_supports(w, why);
  std::string reason;
  if (!w.is_matmul_like() && !is_row_op(w)) {
    reason = "op '" + w.op() +
             "': the host backend generates matmul, batch_matmul, conv2d, depthwise_conv2d, elementwise, map, softmax "
             "and layernorm";
  } else if (w.dtype() != DType::float32 && (!w.is_matmul_like() || w.dtype() == DType::float16)) {
    reason = w.is_matmul_like()
                 ? "field 'dtype': the host backend computes matmuls in \"float32\", \"int8\" or \"bfloat16\""
                 : "field 'dtype': the host backend computes " + w.op() + " in \"float32\" only";
  } else if (const std::string op = first_unsupported_epilogue(w.epilogue()); !op.empty()) {
    reason = "field 'epilogue': '" + op +
             "' is not generated on the host (expected bias, batchnorm, relu, relu6, gelu, gelu_erf, sigmoid, silu, "
             "leaky_relu, tanh, hardswish, mish, add; quantize, requantize, dequantize on matmuls)";
  } else if (!w.is_matmul_like() &&
             (w.has_epilogue("quantize") || w.has_epilogue("requantize") || w.has_epilogue("dequantize"))) {
    // The row ops' reference does not forgive a rounding step (operands.hpp).
    reason = "field 'epilogue': quantize, requantize and dequantize are generated on the host for matmuls only";
  }
  if (why) *why = reason;
  return reason.empty();
}

ScheduleSpace space_for(const Workload& w, const MachineInfo& m) {
  if (w.is_conv()) return conv_space_for(w, m);
  std::string why;
  if (!supports(w, &why)) throw_bad_input("host: " + why);
  if (is_row_op(w)) return rowops_space_for(w, m);
  require_low_precision_instructions(w, m);
  const std::int64_t lanes = m.lanes();
  const bool amx = has_amx(w, m);
  std::vector<Knob> ks = {
      knob(knobs::micro_m, amx ? std::vector<std::int64_t>{4, 6, 8, 16, 32} : std::vector<std::int64_t>{4, 6, 8}),
      knob(knobs::micro_n, {lanes, 2 * lanes, 3 * lanes}),
      knob(knobs::tile_m, upto(w.dim("M"), {48, 96, 192})),
      knob(knobs::tile_n, upto(w.dim("N"), {256, 1024, 4096})),
      knob(knobs::tile_k, upto(w.dim("K"), k_blocks(w, amx))),
      knob(knobs::k_steps, {1, 4}),
      // 0: A and B read in place, no packing copy (fp32; docs/decisions/host-matmul-in-place.md).
      knob(knobs::async_copy_depth,
           w.dtype() == DType::float32 ? std::vector<std::int64_t>{0, 1, 2} : std::vector<std::int64_t>{1, 2}),
      knob(knobs::tile_order, {0, 1, 2}),
      knob(knobs::fusion_level, fusion_values(w)),
      knob(knobs::threads, thread_values(m)),
  };
  if (amx) ks.push_back(knob(knobs::amx_tiles, {0, 1}));
  const std::int64_t eb = kernel_element_bytes(w.dtype());
  return ScheduleSpace(std::move(ks), [m, eb, k = w.dim("K")](const Schedule& s) { return check(s, m, eb, k); });
}

namespace {

// The default's knob values: a register block of mr x nv vectors (or, with tiles, 32 x 32 of
// AMX tiles), then the blocking; the caller shrinks kc and nc until the caches hold them.
// An fp32 matmul of at most 256 columns reads A and B in place: each A element packed feeds
// too few columns to pay for its copy (im2col matmuls of 64 to 256 output channels, attention's
// batched products), 0.66x to 0.93x the packed kernel's time on this project's CPU
// (docs/decisions/host-default-in-place.md).
void read_narrow_operands_in_place(const Workload& w, const ScheduleSpace& space, Schedule& s) {
  if (w.dtype() != DType::float32 || w.dim("N") > 256 || !s.has(std::string(knobs::async_copy_depth))) return;
  Schedule in_place = s;
  in_place.set(std::string(knobs::async_copy_depth), 0);
  if (space.check(in_place).ok) s = in_place;
}

Schedule default_of(const ScheduleSpace& space, const MachineInfo& m, std::int64_t mr, std::int64_t nv, bool tiles,
                    std::int64_t eb) {
  Schedule s;
  for (const auto& k : space.knobs()) {
    const auto closest = [&](std::int64_t want) { return host::closest(k.values, want); };
    if (k.name == knobs::micro_m)
      s.set(k.name, tiles ? 16 : mr);  // one tile of rows (docs/decisions/host-amx-default.md)
    else if (k.name == knobs::micro_n)
      s.set(k.name, tiles ? 32 : nv * m.lanes());
    else if (k.name == knobs::tile_m)
      s.set(k.name, closest(tiles ? 192 : 96));
    else if (k.name == knobs::tile_n)
      s.set(k.name, closest(tiles ? 1024 : 4096));
    else if (k.name == knobs::tile_k)
      s.set(k.name, closest(tiles ? 512 / eb : 256));  // tiles: 512 bytes of an A row
    else if (k.name == knobs::k_steps)
      s.set(k.name, 4);
    else if (k.name == knobs::async_copy_depth)
      s.set(k.name, 1);
    else if (k.name == knobs::tile_order)
      s.set(k.name, tiles ? 0 : 2);  // micro-tiles along C's rows (docs/decisions/host-default-order.md)
    else if (k.name == knobs::threads)
      s.set(k.name, 1);
    else if (k.name == knobs::amx_tiles)
      s.set(k.name, tiles ? 1 : 0);
    else
      s.set(k.name, k.values.back());
  }
  return s;
}

// Walked along C's rows (tile_order 2), every micro_m rows of A read the whole kc x nc block of
// B again: it has to stay in L2, or each row of micro-tiles streams it from L3 (half the speed
// on a Sapphire Rapids core, docs/decisions/host-default-b-block-in-l2.md). The widest nc whose
// block L2 holds; the narrowest where none does.
void keep_b_block_in_l2(const ScheduleSpace& space, Schedule& s, const MachineInfo& m, std::int64_t eb,
                        std::int64_t k_dim) {
  const std::int64_t kc = std::min(s.at(std::string(knobs::tile_k)), k_dim);
  for (const auto& k : space.knobs()) {
    if (k.name != knobs::tile_n) continue;
    std::int64_t nc = k.values.front();
    for (std::int64_t v : k.values) {
      if (v <= s.at(k.name) && kc * v * eb <= m.l2_bytes) nc = std::max(nc, v);
    }
    s.set(k.name, nc);
  }
}

}  // namespace

Schedule default_schedule(const Workload& w, const MachineInfo& m) {
  if (w.is_conv()) return conv_default_schedule(w, m);
  if (is_row_op(w)) return rowops_default_schedule(w, m);
  // BLIS-like: the widest register block that fits, mc 96, kc 256, nc as large as allowed;
  // each block's micro-tiles walked row by row (tile_order 2); one thread (the benchmark goals
  // compare with one-thread libraries). Where the CPU has AMX
  // for the dtype, 16 x 32 tiles, mc 192, nc 1024, kc of 512 bytes first
  // (docs/decisions/host-amx-default.md).
  const ScheduleSpace space = space_for(w, m);
  const std::int64_t eb = kernel_element_bytes(w.dtype());
  std::vector<Schedule> candidates;
  if (has_amx(w, m)) candidates.push_back(default_of(space, m, 0, 0, true, eb));
  for (std::int64_t mr : {6, 4, 8}) {
    for (std::int64_t nv : {2, 3, 1}) candidates.push_back(default_of(space, m, mr, nv, false, eb));
  }
  for (Schedule& s : candidates) {
    // Caches smaller than the defaults assume: the deepest kc, then the widest nc, that fit.
    if (space.check(s).ok || shrink_until_valid(space, s, {knobs::tile_k, knobs::tile_n})) {
      if (s.get_or(std::string(knobs::amx_tiles), 0) == 0) keep_b_block_in_l2(space, s, m, eb, w.dim("K"));
      read_narrow_operands_in_place(w, space, s);
      return s;
    }
  }
  throw_bad_input("host: no valid default schedule for " + w.label());
}

Schedule on_threads(const Workload& w, Schedule s, const MachineInfo& m, int threads) {
  if (w.is_conv()) return conv_on_threads(w, std::move(s), m, threads);
  s.set(std::string(knobs::threads), threads);
  return s;
}

// int8 and bf16 kernels are generated for AVX-512 VNNI and AVX-512 BF16 only
// (codegen_lowp.hpp); another CPU is told which flag it lacks.
namespace {

// What require_low_precision_instructions refuses, empty where w runs on m.
std::string low_precision_gap(const Workload& w, const MachineInfo& m) {
  const char* flag = w.dtype() == DType::int8 ? "avx512_vnni" : w.dtype() == DType::bfloat16 ? "avx512_bf16" : nullptr;
  if (flag && !(m.has_flag(flag) && m.simd_bytes == 64)) {
    return "host: field 'dtype': " + std::string(to_string(w.dtype())) + " kernels need a CPU with " + flag +
           "; this one (" + m.model + ") has none; use \"float32\"";
  }
  // vpdpbusd adds into s32 without saturating: 255 * 128 * K must stay below 2^31.
  // A conv's reduction is R x S x C.
  const std::int64_t k = w.is_conv() ? w.dim("R") * w.dim("S") * w.dim("C") : w.dim("K");
  if (w.dtype() == DType::int8 && k > 65536) {
    const std::string field = w.is_conv() ? "dims.R x dims.S x dims.C" : "dims.K";
    return "host: field '" + field + "' = " + std::to_string(k) +
           ": int8 kernels accumulate in s32 and take a reduction <= 65536";
  }
  return "";
}

}  // namespace

void require_low_precision_instructions(const Workload& w, const MachineInfo& m) {
  if (const std::string gap = low_precision_gap(w, m); !gap.empty()) throw_bad_input(gap);
}

bool runs_low_precision(const Workload& w, const MachineInfo& m) { return low_precision_gap(w, m).empty(); }

}  // namespace atvoss::host
