#include "host/pinning.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include <sched.h>

namespace atvoss::host {
namespace {

// "package:core" of a CPU, or "cpuN" when sysfs does not say.
std::string core_key(const std::string& cpu_sys, int cpu) {
  const std::string dir = cpu_sys + "/cpu" + std::to_string(cpu) + "/topology/";
  std::ifstream package(dir + "physical_package_id"), core(dir + "core_id");
  std::string p, c;
  if (!(package >> p) || !(core >> c)) return "cpu" + std::to_string(cpu);
  return p + ":" + c;
}

// allowed, in the order choose_cpus tries them.
std::vector<int> preference_order(std::vector<int> allowed, int first) {
  std::sort(allowed.begin(), allowed.end());
  if (first < 0) {
    std::reverse(allowed.begin(), allowed.end());
    return allowed;
  }
  const auto from = std::lower_bound(allowed.begin(), allowed.end(), first);
  std::rotate(allowed.begin(), from, allowed.end());
  return allowed;
}

}  // namespace

std::vector<int> distinct_cores(const std::vector<int>& cpus, const std::string& cpu_sys) {
  std::vector<int> out;
  std::set<std::string> cores;
  for (int cpu : cpus) {
    if (cores.insert(core_key(cpu_sys, cpu)).second) out.push_back(cpu);
  }
  return out;
}

std::vector<int> choose_cpus(const std::vector<int>& allowed, int threads, int first, const std::string& cpu_sys) {
  const std::vector<int> order = preference_order(allowed, first);
  const std::size_t want = std::min<std::size_t>(std::size_t(std::max(threads, 1)), order.size());
  std::vector<int> chosen = distinct_cores(order, cpu_sys);  // one CPU per physical core
  if (chosen.size() > want) chosen.resize(want);
  for (int cpu : order) {  // then siblings, if the cores ran out
    if (chosen.size() < want && std::find(chosen.begin(), chosen.end(), cpu) == chosen.end()) chosen.push_back(cpu);
  }
  return chosen;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

bool pin_to(const std::vector<int>& cpus) {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace atvoss::host
