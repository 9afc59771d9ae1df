// Hardware description: the chip format of the ATVOSS articles — "architecture"
// (core_type, cores, clock), "memory.hierarchy" (levels with size, bandwidth,
// latency) and "intrinsics" (matrix and vector instructions with throughput and
// operand types) — mapped onto the simulator's Target. Two forms are read: the full
// one (levels as objects, every figure stated) and the articles' short one (levels
// as names with a parallel latency list, memory possibly under architecture, operand
// types like "float32x8", core_type "simd_vector" for a core without a matrix unit).
// docs/hardware-facts.md section 4 gives both, which field becomes which Target field,
// which figures take a stated default (noted "est." in source and listed in
// source["defaults"]) and which the simulator ignores (source["ignored"]).
#pragma once

#include "core/target.hpp"

namespace atvoss::simulator {

// A JSON object in this format: it has "architecture", "memory" or "intrinsics".
bool is_hardware_description(const Json& j);

// bad_input naming the field by its dotted path (e.g. 'memory.hierarchy[2].size')
// and what was expected when the description cannot be mapped. Required fields that
// are absent are named all together in one message, not one at a time.
Target target_from_description(const Json& j);

}  // namespace atvoss::simulator
