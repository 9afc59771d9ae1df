#include "backend/targets.hpp"

#include "host/machine.hpp"
#include "simulator/presets.hpp"

namespace atvoss::backend {

Target load_target(const std::string& arg) {
  if (arg == "host") return host::describe_machine();
  return simulator::load_target(arg);
}

Target target_from_json(const Json& j) { return simulator::target_from_json(j); }

const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = simulator::preset_names();
    n.push_back("host");
    return n;
  }();
  return names;
}

}  // namespace atvoss::backend
