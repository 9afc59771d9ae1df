// Targets: resolving what a user names as a target — a preset name (ascend910,
// ascend910b, ascend310, mlu370), "host" (this machine's CPU, host/machine.hpp), a hardware
// description file, or inline JSON with {"preset": ..., overrides}. The presets belong to the npu-sim backend's
// simulator; tools and libraries above the backends resolve targets here.
#pragma once

#include <string>
#include <vector>

#include "core/target.hpp"

namespace atvoss::backend {

// bad_input naming the problem if arg is neither a preset, a readable file nor JSON.
Target load_target(const std::string& arg);
Target target_from_json(const Json& j);
// Names of the built-in targets ("host" last).
const std::vector<std::string>& target_names();

}  // namespace atvoss::backend
