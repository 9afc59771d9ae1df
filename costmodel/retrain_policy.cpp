#include "costmodel/retrain_policy.hpp"

namespace atvoss::costmodel {

bool RetrainPolicy::should_retrain(std::size_t total_samples) const {
  if (total_samples < options_.min_samples) return false;
  if (!trained_) return true;
  if (total_samples <= last_trained_) return false;
  return double(total_samples - last_trained_) >= options_.growth * double(last_trained_);
}

}  // namespace atvoss::costmodel
