#include "search/ensemble_config.hpp"

#include "search/internal/config_reader.hpp"
#include "search/internal/strategies.hpp"

namespace atvoss::search {

const std::vector<std::string>& ensemble_arm_names() {
  static const std::vector<std::string> names(kEnsembleArms.begin(), kEnsembleArms.end());
  return names;
}

EnsembleConfig EnsembleConfig::from_json(const Json& config) {
  ConfigReader r(config, "ensemble strategy_config");
  EnsembleConfig c;
  r.names("ensemble_arms", c.ensemble_arms, ensemble_arm_names());
  c.model.read(r);
  c.tpe.read(r);
  r.finish();
  return c;
}

Json EnsembleConfig::to_json() const {
  Json out = {{"ensemble_arms", ensemble_arms}};
  model.write(out);
  tpe.write(out);
  return out;
}

}  // namespace atvoss::search
