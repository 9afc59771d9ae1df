// Target presets from docs/hardware-facts.md section 1 (ascend910, ascend910b,
// ascend310, mlu370), and loading a target from a preset name, a JSON file, or inline
// JSON — including {"preset": "ascend910b", ...overrides} and the seed-format
// descriptions of simulator/hardware_description.hpp.
#pragma once

#include <string>
#include <vector>

#include "core/target.hpp"

namespace atvoss::simulator {

const std::vector<std::string>& preset_names();
// bad_input listing the presets if name is unknown.
Target preset(const std::string& name);
// arg: a preset name, a file path, or inline JSON. A JSON object with "preset"
// starts from that preset and overrides the fields it gives.
Target load_target(const std::string& arg);
Target target_from_json(const Json& j);

}  // namespace atvoss::simulator
