#include "backend/targets.hpp"

#include "simulator/presets.hpp"

namespace atvoss::backend {

Target load_target(const std::string& arg) { return simulator::load_target(arg); }
Target target_from_json(const Json& j) { return simulator::target_from_json(j); }
const std::vector<std::string>& target_names() { return simulator::preset_names(); }

}  // namespace atvoss::backend
