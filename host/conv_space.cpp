#include "host/conv_space.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "host/codegen_conv.hpp"
#include "host/host_space.hpp"
#include "host/knob_values.hpp"
#include "host/vector_code.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

constexpr std::int64_t kSmallestTileK = 16;

// Values up to the first that covers the whole dim (later ones only repeat the clamped
// block); so a block of the whole dim, and a block larger than it, stay expressible.
std::vector<std::int64_t> upto_covering(std::int64_t dim, std::vector<std::int64_t> values) {
  std::vector<std::int64_t> out;
  for (auto v : values) {
    if (!out.empty() && out.back() >= dim) break;
    out.push_back(v);
  }
  return out;
}

std::int64_t at(const Schedule& s, std::string_view k) { return s.at(std::string(k)); }

Verdict registers(const Schedule& s, const MachineInfo& m) {
  const std::int64_t mr = at(s, knobs::micro_m), nv = at(s, knobs::micro_n) / m.lanes();
  if (mr * nv + nv + 1 > m.vector_registers) {
    return Verdict::invalid("registers: " + std::to_string(mr) + "x" + std::to_string(nv * m.lanes()) + " needs " +
                            std::to_string(mr * nv + nv + 1) + " vectors > " + std::to_string(m.vector_registers));
  }
  return Verdict::valid();
}

// Input rows x columns of a tile_h x tile_w output block (its halo).
std::int64_t halo_pixels(const Workload& w, const Schedule& s) {
  const std::int64_t th = std::min(at(s, knobs::tile_h), w.out_h());
  const std::int64_t tw = std::min(at(s, knobs::tile_w), w.out_w());
  const std::int64_t st = w.dim("stride");
  return ((th - 1) * st + w.dim("R")) * ((tw - 1) * st + w.dim("S"));
}

Verdict check_conv(const Workload& w, const Schedule& s, const MachineInfo& m) {
  if (Verdict v = registers(s, m); !v.ok) return v;
  const std::int64_t eb = kernel_element_bytes(w.dtype());
  const std::int64_t nr = at(s, knobs::micro_n), kc = std::min(at(s, knobs::tile_k), w.dim("C"));
  const std::int64_t rs = w.dim("R") * w.dim("S");
  const std::int64_t panel = rs * kc * nr * eb;
  // The panel streams from L2 beside the input block (docs/decisions/host-conv-panel-l2.md):
  // a deeper channel block loads and stores each output micro-tile fewer times.
  if (panel > m.l2_bytes / 2 && at(s, knobs::tile_k) > kSmallestTileK) {
    return Verdict::invalid("L2: weight panel " + std::to_string(panel) + " B > half of L2, " +
                            std::to_string(m.l2_bytes / 2) + " B");
  }
  const std::int64_t input = halo_pixels(w, s) * kc * eb;
  if (input > m.l2_bytes) {
    return Verdict::invalid("L2: input block " + std::to_string(input) + " B > " + std::to_string(m.l2_bytes) + " B");
  }
  const std::int64_t nc = std::min(at(s, knobs::tile_n), w.dim("K"));
  const std::int64_t llc = std::max(m.l3_bytes, m.l2_bytes);
  if (rs * kc * nc * eb > llc) {
    return Verdict::invalid("L3: weight block " + std::to_string(rs * kc * nc * eb) + " B > " + std::to_string(llc) +
                            " B");
  }
  return Verdict::valid();
}

Verdict check_depthwise(const Workload& w, const Schedule& s, const MachineInfo& m) {
  if (Verdict v = registers(s, m); !v.ok) return v;
  const std::int64_t input = halo_pixels(w, s) * std::min(at(s, knobs::tile_c), w.dim("C")) * 4;
  if (input > m.l2_bytes) {
    return Verdict::invalid("L2: input block " + std::to_string(input) + " B > " + std::to_string(m.l2_bytes) + " B");
  }
  return Verdict::valid();
}

}  // namespace

bool conv_supports(const Workload& w, std::string* why) {
  std::string reason;
  if (w.op() != "conv2d" && w.op() != "depthwise_conv2d") {
    reason = "op '" + w.op() + "': the host backend generates conv2d and depthwise_conv2d of the conv ops";
  } else if (w.dtype() != DType::float32 &&
             (w.op() != "conv2d" || (w.dtype() != DType::int8 && w.dtype() != DType::bfloat16))) {
    reason = w.op() == "conv2d"
                 ? "field 'dtype': the host backend computes conv2d in \"float32\", \"int8\" or \"bfloat16\""
                 : "field 'dtype': the host backend computes " + w.op() + " in \"float32\" only";
  } else {
    // The transcendental and sloped activations (EfficientNet's, YOLO's and MobileNetV3's convs)
    // on fp32 convs: their epilogue is the matmul's (host/vector_code.cpp); the int8 and bf16
    // convs' write-back is not measured with them.
    const bool fp32 = w.dtype() == DType::float32;
    static const std::set<std::string> any_dtype = {"bias", "batchnorm", "relu",     "relu6",
                                                    "gelu", "add",       "quantize", "requantize"};
    for (const auto& op : w.epilogue()) {
      if (!any_dtype.count(op) && !(fp32 && op != "dequantize" && generates_epilogue_op(op))) {
        reason = "field 'epilogue': " + op +
                 " is not generated on the host for convolutions (bias, batchnorm, relu, relu6, gelu, add, "
                 "quantize, requantize are; gelu_erf, sigmoid, silu, leaky_relu, tanh, hardswish and mish on float32)";
        break;
      }
    }
  }
  if (why) *why = reason;
  return reason.empty();
}

ScheduleSpace conv_space_for(const Workload& w, const MachineInfo& m) {
  std::string why;
  if (!conv_supports(w, &why)) throw_bad_input("host: " + why);
  require_low_precision_instructions(w, m);
  const std::int64_t lanes = m.lanes();
  const std::int64_t oh = w.out_h(), ow = w.out_w();
  if (w.op() == "depthwise_conv2d") {
    std::vector<Knob> ks = {
        knob(knobs::micro_m, {1, 2, 4, 6}),
        knob(knobs::micro_n, {lanes, 2 * lanes, 4 * lanes}),
        knob(knobs::tile_h, upto_covering(oh, {1, 4, 16, 64})),
        knob(knobs::tile_w, upto_covering(ow, {8, 16, 64})),
        knob(knobs::tile_c, upto_covering(w.dim("C"), {32, 128, 512})),
        knob(knobs::k_steps, {1, 4}),
        knob(knobs::async_copy_depth, {1, 2}),
        knob(knobs::tile_order, {0, 1, 2}),
        knob(knobs::fusion_level, fusion_values(w)),
        knob(knobs::threads, thread_values(m)),
    };
    return ScheduleSpace(std::move(ks), [w, m](const Schedule& s) { return check_depthwise(w, s, m); });
  }
  std::vector<Knob> ks = {
      knob(knobs::micro_m, {4, 5, 6, 7, 8}),
      knob(knobs::micro_n, {lanes, 2 * lanes, 3 * lanes}),
      knob(knobs::tile_h, upto_covering(oh, {1, 4, 16, 64})),
      knob(knobs::tile_w, upto_covering(ow, {8, 16, 64})),
      knob(knobs::tile_n, upto_covering(w.dim("K"), {32, 128, 512})),
      knob(knobs::tile_k, upto_covering(w.dim("C"), {kSmallestTileK, 32, 64, 128, 256})),
      knob(knobs::k_steps, {1, 4}),
      // int8 and bf16 weights are always packed (k groups interleaved): 1 and 2 are 2 and 3 of fp32.
      knob(knobs::async_copy_depth,
           w.dtype() == DType::float32 ? std::vector<std::int64_t>{1, 2, 3} : std::vector<std::int64_t>{1, 2}),
      knob(knobs::tile_order, {0, 1, 2}),
      knob(knobs::fusion_level, fusion_values(w)),
      knob(knobs::threads, thread_values(m)),
  };
  return ScheduleSpace(std::move(ks), [w, m](const Schedule& s) { return check_conv(w, s, m); });
}

namespace {

// The largest of 8, 7, 6, 5 pixels that divides the width of every pixel block of tile_w
// columns (OW's blocks and the last, narrower one), so that every micro-tile is a run of one
// output row and skips the border's taps (docs/decisions/host-conv-default-rows.md); 0 if none.
std::int64_t row_run_pixels(std::int64_t ow, std::int64_t tw) {
  const std::int64_t width = std::min(tw, ow), rest = ow > tw ? ow % tw : 0;
  for (std::int64_t mr : {8, 7, 6, 5}) {
    if (width % mr == 0 && rest % mr == 0) return mr;
  }
  return 0;
}

// An fp32 conv2d whose output has at least 28 x 28 pixels takes order 2: it writes each
// pixel's output channels in a row, and its weight blocks stay in cache across the many pixel
// tiles; on fewer pixels each micro-tile re-reads a large weight block for a few pixels, and
// order 0 keeps panels outer (docs/decisions/host-conv-default-order-two.md).
bool walks_pixels_first(const Workload& w) {
  return w.op() == "conv2d" && w.dtype() == DType::float32 && w.out_h() * w.out_w() >= 28 * 28;
}

// Order 2 reads a weight block (the filter taps of tile_k input channels for the block's
// output channels) again for every row of pixels: from L2 where it fits, else from L3, where
// order 2 took 1.4-2x order 0's time on VGG-16's convs of 256 and 512 channels
// (docs/decisions/host-conv-default-order-two.md).
bool weight_block_fits_l2(const Workload& w, const Schedule& s, const MachineInfo& m) {
  const std::int64_t channels = std::min<std::int64_t>(at(s, knobs::tile_k), w.dim("C"));
  const std::int64_t outputs = std::min<std::int64_t>(at(s, knobs::tile_n), w.dim("K"));
  return w.dim("R") * w.dim("S") * channels * outputs * std::int64_t(sizeof(float)) <= m.l2_bytes;
}

}  // namespace

Schedule conv_default_schedule(const Workload& w, const MachineInfo& m) {
  // Conv: pixel runs of whole output rows x 2 vectors where a register block of them fits
  // (row_run_pixels), else 6 pixels x 2 vectors (as the matmul default); blocks of 16 output
  // rows of up to 64 pixels, every output channel in one block, the deepest channel block whose
  // weight panel fits half of L2, weights packed without prefetch; the register block no wider
  // than K; order 2 on large outputs (walks_pixels_first) whose weight block fits L2
  // (weight_block_fits_l2), else 0. Depthwise: 4 pixels x 2 vectors, blocks of 4 rows of up to
  // 64 pixels, 128 channels, no prefetch, order 0. One thread, as for matmul.
  const ScheduleSpace space = conv_space_for(w, m);
  const bool dw = w.op() == "depthwise_conv2d";
  std::vector<std::pair<std::int64_t, std::int64_t>> micro =
      dw ? std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 2}, {2, 2}, {1, 1}}
         : std::vector<std::pair<std::int64_t, std::int64_t>>{{6, 2}, {4, 3}, {4, 2}, {8, 1}, {4, 1}};
  const auto& knobs_of = space.knobs();
  const auto tile_w =
      std::find_if(knobs_of.begin(), knobs_of.end(), [](const Knob& k) { return k.name == knobs::tile_w; });
  const std::int64_t block_columns = closest(tile_w->values, 64);  // the default's pixel blocks
  if (const std::int64_t run = dw ? 0 : row_run_pixels(w.out_w(), block_columns)) micro.insert(micro.begin(), {run, 2});
  // No wider a register block than the output channels: a 16-channel conv's block of two vectors
  // computed and stored a vector of padding per pixel (docs/decisions/host-conv-default-narrow.md).
  const std::int64_t output_vectors = dw ? 0 : (w.dim("K") + m.lanes() - 1) / m.lanes();
  for (const auto& [mr, nv] : micro) {
    Schedule s;
    for (const auto& k : space.knobs()) {
      if (k.name == knobs::micro_m)
        s.set(k.name, mr);
      else if (k.name == knobs::micro_n)
        s.set(k.name, std::min(nv, dw ? nv : output_vectors) * m.lanes());
      else if (k.name == knobs::tile_h)
        s.set(k.name, closest(k.values, dw ? 4 : 16));
      else if (k.name == knobs::tile_w)
        s.set(k.name, block_columns);
      else if (k.name == knobs::tile_n)
        s.set(k.name, k.values.back());
      else if (k.name == knobs::tile_c)
        s.set(k.name, closest(k.values, 128));
      else if (k.name == knobs::k_steps)
        s.set(k.name, 4);
      else if (k.name == knobs::async_copy_depth)
        s.set(k.name, dw || w.dtype() != DType::float32 ? 1 : 2);
      else if (k.name == knobs::tile_order)
        s.set(k.name, walks_pixels_first(w) ? 2 : 0);
      else if (k.name == knobs::threads)
        s.set(k.name, 1);
      else
        s.set(k.name, k.values.back());  // tile_k: the deepest, lowered below until it fits
    }
    if (!space.check(s).ok && !shrink_until_valid(space, s, {knobs::tile_k})) continue;
    if (s.at(std::string(knobs::tile_order)) == 2 && !weight_block_fits_l2(w, s, m)) {
      Schedule panels_outer = s;
      panels_outer.set(std::string(knobs::tile_order), 0);
      if (space.check(panels_outer).ok) return panels_outer;
    }
    return s;
  }
  throw_bad_input("host: no valid default schedule for " + w.label());
}

namespace {

// The busiest thread's micro-tiles times output-channel panels under c: the pixel blocks
// (tile_h x tile_w, the last ones narrower) shared out as the kernel shares them, each block's
// panels sliced among the threads where conv_slices says (codegen_conv.cpp, run_share). A
// block of 13 pixels in tiles of 6 counts 3 tiles, as the kernel computes them.
double busiest_share(const Workload& w, const Schedule& c, int threads) {
  const long oh = w.out_h(), ow = w.out_w(), th = at(c, knobs::tile_h), tw = at(c, knobs::tile_w);
  const long mr = at(c, knobs::micro_m), panels = conv_panels(w, c);
  const long cols = (ow + tw - 1) / tw, blocks = (oh + th - 1) / th * cols;
  const long slices = conv_slices(oh, ow, th, tw, threads, panels), items = blocks * slices;
  double most = 0;
  for (long t = 0; t < threads; ++t) {
    double work = 0;
    for (long item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      const long b = item % blocks, slice = item / blocks;
      const long pixels = std::min(th, oh - b / cols * th) * std::min(tw, ow - b % cols * tw);
      const long share = panels * (slice + 1) / slices - panels * slice / slices;
      work += double((pixels + mr - 1) / mr) * double(share);
    }
    most = std::max(most, work);
  }
  return most;
}

}  // namespace

Schedule conv_on_threads(const Workload& w, Schedule s, const MachineInfo& m, int threads) {
  const std::string th(knobs::tile_h), tw(knobs::tile_w);
  s.set(std::string(knobs::threads), threads);
  if (w.op() != "conv2d" || threads <= 1) return s;
  const auto even = [&](const Schedule& c) {
    return conv_slices(w.out_h(), w.out_w(), c.at(th), c.at(tw), threads, threads) == 1;
  };
  if (even(s)) return s;
  // Lower blocks read more of the input again (R - 1 halo rows each): no more than half their
  // rows again, unless the channels cannot be sliced either.
  const long panels = conv_panels(w, s);
  const std::int64_t lowest = panels < threads ? 1 : 2 * (w.dim("R") - 1);
  const ScheduleSpace space = conv_space_for(w, m);
  for (const auto& k : space.knobs()) {
    if (k.name != th) continue;
    for (auto v = k.values.rbegin(); v != k.values.rend(); ++v) {
      Schedule c = s;
      c.set(th, *v);
      if (*v < s.at(th) && *v >= lowest && even(c) && space.check(c).ok) {
        // Unless the blocks as they are, sliced by channels, leave the busiest thread a tenth
        // less work: rows of 13 pixels left a third of SqueezeNet's last conv's tiles empty
        // (docs/decisions/host-conv-thread-blocks.md).
        return busiest_share(w, s, threads) < 0.9 * busiest_share(w, c, threads) ? s : c;
      }
    }
  }
  return s;
}

}  // namespace atvoss::host
