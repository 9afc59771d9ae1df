#include "tuner/farm_measurer.hpp"

#include "lowering/fusion_rules.hpp"
#include "rpc/auth.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::tuner {

namespace {

rpc::FarmClientOptions client_options(const FarmMeasurerOptions& o) {
  rpc::FarmClientOptions c;
  c.farm = o.farm;
  c.token = o.token;
  c.reconnect_for = o.reconnect_for;
  return c;
}

}  // namespace

FarmMeasurer::FarmMeasurer(FarmMeasurerOptions options)
    : options_(std::move(options)), client_(client_options(options_)) {}

std::vector<Measurement> FarmMeasurer::measure(const std::vector<MeasureRequest>& batch) {
  std::vector<rpc::FarmRequest> requests;
  requests.reserve(batch.size());
  // The job's own rules are in force on this thread (tuner/job_context.hpp); the workers
  // lower each item under them.
  const Json rules = lowering::declared_fusion_rules_in_force();
  for (const MeasureRequest& item : batch) {
    requests.push_back(rpc::FarmRequest{rpc::farm_target_key(item.target), item.workload.to_json(),
                                        item.schedule.to_json(), item.repeat, item.seed, rules});
  }
  return client_.measure(requests);
}

std::string FarmMeasurer::name() const { return "farm:" + options_.farm.to_string(); }

std::unique_ptr<Measurer> make_farm_measurer(const std::string& address) {
  FarmMeasurerOptions o;
  o.farm = rpc::parse_endpoint(address, "--farm");
  o.token = rpc::load_token("");  // ATVOSS_TOKEN; never a flag, so never in argv
  return std::make_unique<FarmMeasurer>(std::move(o));
}

}  // namespace atvoss::tuner
