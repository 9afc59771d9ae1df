// Hardware description: the chip format of the ATVOSS articles — "architecture"
// (core_type, cores, clock), "memory.hierarchy" (levels with size, bandwidth,
// latency) and "intrinsics" (matrix and vector instructions with throughput and
// operand types) — mapped onto the simulator's Target. docs/hardware-facts.md
// section 4 gives the format, which field becomes which Target field, and which the
// simulator ignores; the loaded Target lists the ignored ones in source["ignored"].
#pragma once

#include "core/target.hpp"

namespace atvoss::simulator {

// A JSON object in this format: it has "architecture", "memory" or "intrinsics".
bool is_hardware_description(const Json& j);

// bad_input naming the field by its dotted path (e.g. 'memory.hierarchy[2].size')
// and what was expected when the description cannot be mapped.
Target target_from_description(const Json& j);

}  // namespace atvoss::simulator
