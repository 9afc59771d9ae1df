// Target: the hardware description of one NPU that the simulator models and the cost
// model featurises: cores with a matrix ("cube") unit of cube_m x cube_n x cube_k and
// vector units, fed through an Ascend-style buffer hierarchy. Loaded from JSON and
// validated field by field; the built-in presets (ascend910, ascend910b, ascend310,
// mlu370) live in simulator/presets.hpp, which also resolves "a preset plus overrides"
// and the seed-format descriptions (simulator/hardware_description.hpp).
// Units: bytes, cycles, GHz, microseconds. "Chip-wide" figures are shared by all cores.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/workload.hpp"

namespace atvoss {

struct Target {
  std::string name;
  std::string organisation = "coupled";  // "coupled" (cube+vector per core), "split" (AIC + AIV),
                                         // or "cpu" (the host backend's CPU, host/machine.hpp)
  int ai_cores = 1;                      // cores with a cube unit (AIC on split parts)
  int vector_cores = 1;                  // cores with a vector unit (AIV on split parts)
  double clock_ghz = 1.0;
  int cube_m = 16, cube_n = 16, cube_k = 16;  // fp16 MACs per cycle: one fractal m x n x k
  double int8_rate = 2.0;                     // int8 MACs per cycle relative to fp16 (16x32x16 -> 2)
  double fp32_rate = 0.25;                    // fp32 relative to fp16
  double vector_bytes_per_cycle = 256;        // per vector core
  std::int64_t l0a_bytes = 0, l0b_bytes = 0, l0c_bytes = 0;
  std::int64_t l1_bytes = 0, ub_bytes = 0, l2_bytes = 0;
  double hbm_bytes_per_cycle = 0;      // chip-wide DRAM bandwidth
  double l2_bytes_per_cycle = 0;       // chip-wide L2 bandwidth
  double mte2_bytes_per_cycle = 0;     // per core, GM -> L1/UB
  double mte2_copy_start_cycles = 0;   // fixed cost per GM copy
  double mte1_a_bytes_per_cycle = 0;   // per core, L1 -> L0A
  double mte1_b_bytes_per_cycle = 0;   // per core, L1 -> L0B
  double mte1_start_cycles = 0;        // fixed cost per L1 -> L0 load
  double fixpipe_bytes_per_cycle = 0;  // per core, L0C -> GM/UB
  double mte3_bytes_per_cycle = 0;     // per core, UB -> GM
  double hbm_latency_cycles = 0;
  double l2_latency_cycles = 0;
  double launch_us = 0;           // per kernel launch, issued by the host
  int max_buffers_per_queue = 4;  // async_copy_depth limit per queue
  // CPU only, optional (0 = not given): independent FMA chains one core needs to reach its
  // peak (FMA pipes x latency), measured on the host (host/machine.hpp). Part of key() only
  // when given, so the keys of targets that leave it out are as before it existed.
  int fma_chains = 0;
  // Per kernel of a graph sunk to the device (core/launch_mode.hpp): the device issues each
  // kernel itself. Optional, 0 = not given: the part runs no sunk graph. A job in that mode
  // runs with launch_us set to it, so it is not part of key() itself.
  double sunk_launch_us = 0;
  // Who issues the kernels: "host" (default) or "sunk", in which case launch_us is
  // sunk_launch_us (launched() makes such a target; from_json checks it). Part of key() only
  // when "sunk", so the keys of host targets are as before it existed.
  std::string launch = "host";
  // Device DRAM (HBM, LPDDR) capacity. Optional, 0 = not given; only the job's fit
  // check reads it (frontend/device_memory.hpp), so it is not part of key().
  std::int64_t device_memory_bytes = 0;
  // The dtypes the matrix unit runs (docs/hardware-facts.md section 1). Optional, empty =
  // not stated: every dtype is accepted. Only a job's precision check reads it
  // (frontend/precision.hpp: a dtype the chip lacks falls back by name, with a warning), so
  // it is not part of key().
  std::vector<DType> matrix_dtypes;
  Json source = Json::object();  // field -> note on where the figure comes from (or "est.")

  // Every field above except source, fma_chains, sunk_launch_us, device_memory_bytes and
  // matrix_dtypes is required; bad_input
  // names the missing or mistyped field and the expected type/range. Unknown fields
  // are rejected too.
  static Target from_json(const Json& j);
  // bad_input "<shown_as> must be <the field's documented range>, got <given>" unless v
  // lies in the bounds of Target field `field`: how other description formats that map
  // onto a Target check a value under their own field name.
  static void check_bounds(std::string_view field, double v, const Json& given, const std::string& shown_as);
  Json to_json() const;
  std::string key() const;  // stable hash of to_json() without "source"

  // Peak MACs per cycle per core for dtype, and whole-chip FLOP/s (2 per MAC).
  double macs_per_cycle(DType d) const;
  // Whether the matrix unit runs d (true when matrix_dtypes is not stated).
  bool supports(DType d) const;
  double peak_flops(DType d) const;
  double hbm_bytes_per_second() const { return hbm_bytes_per_cycle * clock_ghz * 1e9; }
  // Whether vector work runs on cores of its own beside the cube cores (the split parts' AIV),
  // not on each cube core's own vector unit: the graph run's engines and a fused epilogue's
  // path (through a GM workspace) follow from it.
  bool separate_vector_cores() const { return organisation == "split"; }
  double cycles_to_us(double cycles) const { return cycles / (clock_ghz * 1e3); }
};

}  // namespace atvoss
