// Presets transcribe docs/hardware-facts.md section 1 (mlu370: section 1.1). Each figure carries a
// "source" note; figures the table gives as estimates, or does not give at all
// (a "—" cell we had to fill to make the model run), say "est." so a user knows
// which numbers to override with their own description.
#include "simulator/presets.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "simulator/hardware_description.hpp"

namespace atvoss::simulator {
namespace {

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;

Target ascend910() {
  Target t;
  t.name = "ascend910";
  t.organisation = "coupled";
  t.ai_cores = 32;
  t.vector_cores = 32;
  t.clock_ghz = 1.0;
  t.vector_bytes_per_cycle = 256;
  t.l0a_bytes = 64 * kKiB;
  t.l0b_bytes = 64 * kKiB;
  t.l0c_bytes = 256 * kKiB;
  t.l1_bytes = 1 * kMiB;
  t.ub_bytes = 256 * kKiB;
  t.l2_bytes = 32 * kMiB;
  t.hbm_bytes_per_cycle = 1200;
  t.l2_bytes_per_cycle = 2400;
  t.mte2_bytes_per_cycle = 32;
  t.mte2_copy_start_cycles = 210;
  t.mte1_a_bytes_per_cycle = 512;
  t.mte1_b_bytes_per_cycle = 256;
  t.mte1_start_cycles = 26;
  t.fixpipe_bytes_per_cycle = 0;
  t.mte3_bytes_per_cycle = 32;
  t.hbm_latency_cycles = 350;
  t.l2_latency_cycles = 240;
  t.launch_us = 5;
  t.sunk_launch_us = 1;
  t.max_buffers_per_queue = 4;
  t.device_memory_bytes = 32 * kGiB;
  t.matrix_dtypes = {DType::float16, DType::int8};
  t.source = {
      {"organisation", "hardware-facts 1: coupled AI core (cube+vector+scalar)"},
      {"ai_cores", "hardware-facts 1: 32 (30 on shipping SKUs)"},
      {"vector_cores", "coupled part: one vector unit per AI core"},
      {"clock_ghz", "hardware-facts 1: 1.0 GHz (est.)"},
      {"cube",
       "hardware-facts 1: 16x16x16 fp16 MAC per cycle, int8 16x32x16; peak 262 TFLOPS "
       "derived (256 published, 216 measured)"},
      {"fp32_rate", "est.: 1/4 of fp16 as on 910B"},
      {"vector_bytes_per_cycle", "hardware-facts 1: 256 B/cycle"},
      {"l0", "hardware-facts 1: L0A/L0B/L0C 64/64/256 KB"},
      {"l1_bytes", "hardware-facts 1: 1 MB"},
      {"ub_bytes", "hardware-facts 1: 256 KB"},
      {"l2_bytes", "hardware-facts 1: 32 MB (est.)"},
      {"hbm_bytes_per_cycle", "hardware-facts 1: ~1.2 TB/s HBM2 (est.) at 1.0 GHz"},
      {"l2_bytes_per_cycle", "est.: not published; 2x HBM as on 910B (3x there)"},
      {"mte2_bytes_per_cycle", "hardware-facts 1: 32 B/cycle per core"},
      {"mte2_copy_start_cycles", "est.: 910B figure (210 cycles per ND->NZ copy)"},
      {"mte1", "hardware-facts 1: L1->L0A 512, L1->L0B 256 B/cycle"},
      {"mte1_start_cycles", "est.: 910B figure (26 cycles per load)"},
      {"fixpipe_bytes_per_cycle", "hardware-facts 1: L0C out via UB (no fixpipe): 0"},
      {"mte3_bytes_per_cycle", "est.: same as MTE2"},
      {"latency", "est.: 910B figures (L2 236, HBM 347 cycles)"},
      {"launch_us", "hardware-facts 1: ~5 us (est.)"},
      {"sunk_launch_us", "hardware-facts 1: ~1 us per kernel the device issues from a sunk graph (est.)"},
      {"max_buffers_per_queue", "hardware-facts 1: 4 buffers per queue on 910"},
      {"device_memory_bytes", "hardware-facts 1: 32 GB HBM2"},
      {"matrix_dtypes", "hardware-facts 1: the 910 cube runs fp16 and int8, no bf16"},
  };
  return t;
}

Target ascend910b() {
  Target t;
  t.name = "ascend910b";
  t.organisation = "split";
  t.ai_cores = 24;
  t.vector_cores = 48;
  t.clock_ghz = 1.8;
  t.vector_bytes_per_cycle = 256;
  t.l0a_bytes = 64 * kKiB;
  t.l0b_bytes = 64 * kKiB;
  t.l0c_bytes = 128 * kKiB;
  t.l1_bytes = 512 * kKiB;
  t.ub_bytes = 192 * kKiB;
  t.l2_bytes = 192 * kMiB;
  t.hbm_bytes_per_cycle = 850;
  t.l2_bytes_per_cycle = 2550;
  t.mte2_bytes_per_cycle = 64;
  t.mte2_copy_start_cycles = 210;
  t.mte1_a_bytes_per_cycle = 256;
  t.mte1_b_bytes_per_cycle = 128;
  t.mte1_start_cycles = 26;
  t.fixpipe_bytes_per_cycle = 128;
  t.mte3_bytes_per_cycle = 64;
  t.hbm_latency_cycles = 347;
  t.l2_latency_cycles = 236;
  t.launch_us = 5;
  t.sunk_launch_us = 1;
  t.max_buffers_per_queue = 8;
  t.device_memory_bytes = 64 * kGiB;
  t.matrix_dtypes = {DType::float16, DType::bfloat16, DType::int8};
  t.source = {
      {"organisation", "hardware-facts 1: split, 24 AIC (cube) + 48 AIV (vector)"},
      {"ai_cores", "hardware-facts 1: 24 AIC (910B2)"},
      {"vector_cores", "hardware-facts 1: 48 AIV"},
      {"clock_ghz", "hardware-facts 1: 1.8 GHz (1.85 in Ascend C examples)"},
      {"cube", "hardware-facts 1: 16x16x16 fp16 MAC per cycle; 353.9 TFLOPS derived"},
      {"fp32_rate", "hardware-facts 1: fp32 at 1/4 of fp16 rate"},
      {"vector_bytes_per_cycle", "hardware-facts 1: 256 B/cycle per AIV"},
      {"l0", "hardware-facts 1: L0A/L0B/L0C 64/64/128 KB"},
      {"l1_bytes", "hardware-facts 1: 512 KB"},
      {"ub_bytes", "hardware-facts 1: 192 KB per AIV"},
      {"l2_bytes", "hardware-facts 1: 192 MB, 512 B lines"},
      {"hbm_bytes_per_cycle", "hardware-facts 1: ~1.6 TB/s (850 B/cycle chip-wide)"},
      {"l2_bytes_per_cycle", "hardware-facts 1: ~2550 B/cycle chip-wide"},
      {"mte2_bytes_per_cycle", "hardware-facts 1: 64 B/cycle (8 cycles per 512 B packet)"},
      {"mte2_copy_start_cycles", "hardware-facts 1: +210 cycles per ND->NZ copy"},
      {"mte1", "hardware-facts 1: L1->L0A 256, L1->L0B 128 B/cycle"},
      {"mte1_start_cycles", "hardware-facts 1: +26 cycles per load"},
      {"fixpipe_bytes_per_cycle", "hardware-facts 1: 128 B/cycle out"},
      {"mte3_bytes_per_cycle", "est.: same as MTE2"},
      {"latency", "hardware-facts 1: L2 read 236 / HBM read 347 cycles"},
      {"launch_us", "hardware-facts 1: 3-10 us measured range; 5 us chosen (est.)"},
      {"sunk_launch_us", "hardware-facts 1: ~1 us per kernel the device issues from a sunk graph (est.)"},
      {"max_buffers_per_queue", "hardware-facts 1: Ascend C allows 8 buffers per queue"},
      {"device_memory_bytes", "hardware-facts 1: 64 GB HBM2e (910B2)"},
      {"matrix_dtypes", "hardware-facts 1: the 910B cube adds bf16"},
  };
  return t;
}

Target ascend310() {
  Target t;
  t.name = "ascend310";
  t.organisation = "coupled";
  t.ai_cores = 2;
  t.vector_cores = 2;
  t.clock_ghz = 0.68;
  t.vector_bytes_per_cycle = 256;
  t.l0a_bytes = 64 * kKiB;
  t.l0b_bytes = 64 * kKiB;
  t.l0c_bytes = 256 * kKiB;
  t.l1_bytes = 1 * kMiB;
  t.ub_bytes = 256 * kKiB;
  t.l2_bytes = 8 * kMiB;
  t.hbm_bytes_per_cycle = 134;
  t.l2_bytes_per_cycle = 256;
  t.mte2_bytes_per_cycle = 64;
  t.mte2_copy_start_cycles = 210;
  t.mte1_a_bytes_per_cycle = 512;
  t.mte1_b_bytes_per_cycle = 256;
  t.mte1_start_cycles = 26;
  t.fixpipe_bytes_per_cycle = 0;
  t.mte3_bytes_per_cycle = 64;
  t.hbm_latency_cycles = 350;
  t.l2_latency_cycles = 240;
  t.launch_us = 5;
  t.sunk_launch_us = 1;
  t.max_buffers_per_queue = 4;
  t.source = {
      {"organisation", "hardware-facts 1: coupled"},
      {"ai_cores", "hardware-facts 1: 2"},
      {"vector_cores", "coupled part: one vector unit per AI core"},
      {"clock_ghz", "hardware-facts 1: 0.68 GHz (est.)"},
      {"cube",
       "hardware-facts 1: 16x16x16 fp16; 11.1 TFLOPS derived at 0.68 GHz vs 8 "
       "TFLOPS (est. config) published"},
      {"fp32_rate", "est.: 1/4 of fp16"},
      {"vector_bytes_per_cycle", "hardware-facts 1: 256 B/cycle (est.)"},
      {"l0", "hardware-facts 1: L0A/L0B/L0C 64/64/256 KB"},
      {"l1_bytes", "hardware-facts 1: 1 MB"},
      {"ub_bytes", "hardware-facts 1: 256 KB"},
      {"l2_bytes", "hardware-facts 1: 8 MB"},
      {"hbm_bytes_per_cycle", "hardware-facts 1: LPDDR4X ~67 B/cycle per core read (est.), x2 cores"},
      {"l2_bytes_per_cycle", "hardware-facts 1: 128 B/cycle per core read (est.), x2 cores"},
      {"mte2_bytes_per_cycle", "est.: not published; 64 B/cycle, DRAM limits it first"},
      {"mte2_copy_start_cycles", "est.: 910B figure"},
      {"mte1", "hardware-facts 1: L1->L0A 512, L1->L0B 256 B/cycle"},
      {"mte1_start_cycles", "est.: 910B figure"},
      {"fixpipe_bytes_per_cycle", "hardware-facts 1: not published; L0C out via UB (0)"},
      {"mte3_bytes_per_cycle", "est.: same as MTE2"},
      {"latency", "est.: 910B figures"},
      {"launch_us", "est.: 5 us as on 910"},
      {"sunk_launch_us", "est.: 1 us as on 910"},
      {"max_buffers_per_queue", "est.: 4 as on 910"},
      {"device_memory_bytes",
       "hardware-facts 1: Atlas 300I card, 32 GB LPDDR4X for 4 chips: 8 GB "
       "per chip (est.)"},
  };
  t.device_memory_bytes = 8 * kGiB;
  t.matrix_dtypes = {DType::float16, DType::int8};
  return t;
}

// One MLU370 (Siyuan 370) chip, as on the MLU370-X8 card (two chips per card): half of
// the card's published figures. The core structure is not published; those figures are
// estimates sized so that the derived peak matches the published one.
Target mlu370() {
  Target t;
  t.name = "mlu370";
  t.organisation = "coupled";
  t.ai_cores = 32;
  t.vector_cores = 32;
  t.clock_ghz = 1.465;
  t.cube_m = t.cube_n = t.cube_k = 8;
  t.int8_rate = 256.0 / 96.0;
  t.fp32_rate = 32.0 / 96.0;
  t.vector_bytes_per_cycle = 128;
  t.l0a_bytes = 256 * kKiB;
  t.l0b_bytes = 1024 * kKiB;
  t.l0c_bytes = 256 * kKiB;
  t.l1_bytes = 1024 * kKiB;
  t.ub_bytes = 256 * kKiB;
  t.l2_bytes = 0;
  t.hbm_bytes_per_cycle = 307.2 / 1.465;
  t.l2_bytes_per_cycle = 0;
  t.mte2_bytes_per_cycle = 64;
  t.mte2_copy_start_cycles = 210;
  t.mte1_a_bytes_per_cycle = 256;
  t.mte1_b_bytes_per_cycle = 256;
  t.mte1_start_cycles = 26;
  t.fixpipe_bytes_per_cycle = 0;
  t.mte3_bytes_per_cycle = 64;
  t.hbm_latency_cycles = 350;
  t.l2_latency_cycles = 0;
  t.launch_us = 5;
  t.max_buffers_per_queue = 4;
  t.device_memory_bytes = 24 * kGiB;
  t.matrix_dtypes = {DType::float16, DType::bfloat16, DType::int8};
  t.source = {
      {"organisation", "est.: each IPU core has its own matrix and vector units (coupled)"},
      {"ai_cores", "est.: 8 clusters x 4 IPU cores; not published per chip"},
      {"vector_cores", "coupled part: one vector unit per core"},
      {"clock_ghz", "est.: chosen so 32 cores x 8x8x8 MACs give the published 48 TFLOPS fp16 per chip"},
      {"cube",
       "hardware-facts 1.1: MLU370-X8 card 96 TFLOPS fp16 for 2 chips = 48 per chip; the "
       "8x8x8 shape is an estimate (not published)"},
      {"int8_rate", "hardware-facts 1.1: card 256 TOPS int8 / 96 TFLOPS fp16"},
      {"fp32_rate", "hardware-facts 1.1: card 32 TFLOPS fp32 / 96 TFLOPS fp16"},
      {"vector_bytes_per_cycle", "est.: not published"},
      {"l0",
       "est.: NRAM (768 KB) split in thirds for inputs, accumulators, vector work; WRAM "
       "1 MB holds the weights (L0B)"},
      {"l1_bytes", "est.: a core's share of the cluster's shared SRAM"},
      {"ub_bytes", "est.: a third of NRAM"},
      {"l2_bytes", "est.: no chip-level L2 modelled (none published)"},
      {"hbm_bytes_per_cycle",
       "hardware-facts 1.1: card 614.4 GB/s LPDDR5 for 2 chips = 307.2 GB/s "
       "per chip, at 1.465 GHz"},
      {"l2_bytes_per_cycle", "est.: no L2 modelled"},
      {"mte2_bytes_per_cycle", "est.: not published"},
      {"mte2_copy_start_cycles", "est.: Ascend 910B figure"},
      {"mte1", "est.: not published"},
      {"mte1_start_cycles", "est.: Ascend 910B figure"},
      {"fixpipe_bytes_per_cycle", "est.: accumulators leave through NRAM (0)"},
      {"mte3_bytes_per_cycle", "est.: same as MTE2"},
      {"latency", "est.: Ascend DRAM figure; no L2"},
      {"launch_us", "est.: 5 us as on Ascend"},
      {"max_buffers_per_queue", "est.: 4"},
      {"device_memory_bytes", "hardware-facts 1.1: card 48 GB LPDDR5 for 2 chips = 24 GB per chip"},
  };
  return t;
}

// Overrides start from the preset's JSON so Target::from_json validates the
// merged description exactly as it validates a full one.
Target preset_with_overrides(const Json& j) {
  const Json& name = j["preset"];
  if (!name.is_string()) throw_bad_input("target: field 'preset' must be a preset name string");
  Json merged = preset(name.get<std::string>()).to_json();
  bool renamed = false;
  for (const auto& [k, v] : j.items()) {
    if (k == "preset") continue;
    if (!merged.contains(k)) {
      throw_bad_input("target: unknown field '" + k + "' in overrides of preset '" + name.get<std::string>() + "'");
    }
    if (k == "source") {
      if (!v.is_object()) throw_bad_input("target: field 'source' must be an object");
      for (const auto& [sk, sv] : v.items()) merged["source"][sk] = sv;
      continue;
    }
    merged[k] = v;
    if (k == "name") {
      renamed = true;
    } else if (!(j.contains("source") && j["source"].contains(k))) {
      merged["source"][k] = "user override";
    }
  }
  // A preset made to run sunk graphs by default launches at its sunk cost (core/launch_mode.hpp).
  if (j.value("launch", Json("host")) == "sunk" && !j.contains("launch_us")) {
    merged["launch_us"] = merged["sunk_launch_us"];
  }
  // A changed description must not pass for the stock preset in reports.
  if (!renamed && j.size() > 1) merged["name"] = name.get<std::string>() + "+custom";
  return Target::from_json(merged);
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"ascend910", "ascend910b", "ascend310", "mlu370"};
  return names;
}

Target preset(const std::string& name) {
  if (name == "ascend910") return ascend910();
  if (name == "ascend910b") return ascend910b();
  if (name == "ascend310") return ascend310();
  if (name == "mlu370") return mlu370();
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw_bad_input("target: unknown preset '" + name + "'; expected one of " + list + ", a JSON file, or inline JSON");
}

Target target_from_json(const Json& j) {
  require_object(j, "target");
  if (is_hardware_description(j)) return target_from_description(j);
  if (j.contains("preset")) return preset_with_overrides(j);
  return Target::from_json(j);
}

Target load_target(const std::string& arg) {
  for (const auto& n : preset_names()) {
    if (arg == n) return preset(n);
  }
  const bool looks_inline = !arg.empty() && (arg.front() == '{' || arg.front() == '[');
  if (!looks_inline && !std::filesystem::exists(arg)) {
    preset(arg);  // throws the "unknown preset" message, which lists the choices
  }
  return target_from_json(json_from_arg(arg, "target"));
}

}  // namespace atvoss::simulator
