#include "costmodel/workload_groups.hpp"

#include <algorithm>
#include <random>

namespace atvoss::costmodel {

bool GroupBuilder::add(const Workload& w, const Target& t, Trial sample) {
  auto it = groups_.find(w.key());
  if (it == groups_.end()) it = groups_.emplace(w.key(), WorkloadGroup{w, t, {}}).first;
  auto& samples = it->second.samples;
  if (per_workload_ > 0 && static_cast<int>(samples.size()) >= per_workload_) return false;
  samples.push_back(std::move(sample));
  ++samples_;
  return true;
}

std::vector<WorkloadGroup> GroupBuilder::take() {
  std::vector<WorkloadGroup> out;
  out.reserve(groups_.size());
  for (auto& [key, g] : groups_) out.push_back(std::move(g));
  groups_.clear();
  samples_ = 0;
  return out;
}

std::size_t count_samples(const std::vector<WorkloadGroup>& groups) {
  std::size_t n = 0;
  for (const auto& g : groups) n += g.samples.size();
  return n;
}

void split_holdout(const std::vector<WorkloadGroup>& all, double holdout, std::uint64_t seed,
                   std::vector<WorkloadGroup>& train, std::vector<WorkloadGroup>& test) {
  std::mt19937_64 rng(seed);
  for (const auto& g : all) {
    WorkloadGroup a{g.workload, g.target, {}}, b{g.workload, g.target, {}};
    for (const auto& s : g.samples) {
      (double(rng() >> 11) * 0x1.0p-53 < holdout ? b : a).samples.push_back(s);
    }
    train.push_back(std::move(a));
    test.push_back(std::move(b));
  }
}

namespace {

// Knob names of the generic slots, in slot order: a measured table's schedule knobs
// sorted by name (the order features.hpp fills the slots in).
std::vector<std::string> generic_slot_names(const std::vector<WorkloadGroup>& groups) {
  std::vector<std::string> names;
  for (const auto& g : groups) {
    if (has_plan_features(g.workload) || g.samples.empty()) continue;
    for (const auto& [name, v] : g.samples.front().schedule.values()) names.push_back(name);
    break;
  }
  return names;
}

}  // namespace

std::vector<std::pair<std::string, double>> knob_importance(const std::vector<FeatureScore>& scores,
                                                            const std::vector<WorkloadGroup>& groups) {
  const std::vector<std::string> generic_names = generic_slot_names(groups);
  std::map<std::string, double> by_knob;
  for (const auto& s : scores) {
    for (const char* prefix : {"knob_", "log2_", "gen_knob_", "gen_log2_"}) {
      const std::string p = prefix;
      if (s.feature.rfind(p, 0) != 0) continue;
      std::string knob = s.feature.substr(p.size());
      if (p.rfind("gen_", 0) == 0) {
        const std::size_t i = std::stoul(knob);
        knob = i < generic_names.size() ? generic_names[i] : "generic#" + knob;
      }
      by_knob[knob] += s.score;
      break;
    }
  }
  std::vector<std::pair<std::string, double>> out(by_knob.begin(), by_knob.end());
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

}  // namespace atvoss::costmodel
