#include "distributed/load_balance.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace atvoss::distributed {
namespace {

// step with every kernel's device time scaled by factor (launches unchanged).
execution::ExecGraph scaled(const execution::ExecGraph& g, double factor) {
  execution::ExecGraph out;
  for (const auto& b : g.buffers()) out.add_buffer(b.name, b.bytes, b.output);
  for (const auto& n : g.nodes()) {
    execution::NodeCost c = n.cost;
    c.time_us = c.device_us() * factor + c.launch_us;
    out.add_node(n.name, n.op, c, n.reads, n.writes);
  }
  return out;
}

void check(const DataParallelOptions& o, int units, const std::vector<SpeedChange>& changes) {
  if (units < 1) throw_bad_input("load balance: field 'units_per_device' must be >= 1");
  for (const auto& c : changes) {
    if (!(c.speed > 0)) throw_bad_input("load balance: field 'speed' must be > 0");
    if (c.device < 0 || c.device >= o.devices) {
      throw_bad_input("load balance: field 'device' must be in 0.." + std::to_string(o.devices - 1));
    }
  }
}

}  // namespace

std::vector<int> deal_units(const std::vector<double>& speeds, int units_per_device) {
  std::vector<int> units(speeds.size(), 0);
  const int total = units_per_device * int(speeds.size());
  for (int u = 0; u < total; ++u) {
    int best = 0;
    for (int d = 1; d < int(speeds.size()); ++d) {
      if ((units[d] + 1) / speeds[d] < (units[best] + 1) / speeds[best]) best = d;
    }
    ++units[best];
  }
  return units;
}

BalancedRun run_balanced(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                         const DataParallelOptions& options, int steps, int units_per_device,
                         const std::vector<SpeedChange>& changes, bool balance) {
  check(options, units_per_device, changes);
  std::vector<double> speeds(options.devices, 1.0), measured = speeds;
  std::map<double, double> cache;  // slowest factor -> step time (the factor repeats)
  BalancedRun out;
  for (int k = 0; k < steps; ++k) {
    for (const auto& c : changes) {
      if (c.step == k) speeds[c.device] = c.speed;
    }
    const std::vector<int> units =
        balance ? deal_units(measured, units_per_device) : std::vector<int>(options.devices, units_per_device);
    double slowest = 0;
    for (int d = 0; d < options.devices; ++d) {
      slowest = std::max(slowest, double(units[d]) / units_per_device / speeds[d]);
    }
    if (!cache.count(slowest)) {
      cache[slowest] = data_parallel(scaled(step, slowest), device, {}, topology, options).step_us;
    }
    out.step_us.push_back(cache[slowest]);
    out.units.push_back(units);
    out.total_us += cache[slowest];
    measured = speeds;  // what this step's timings show the runtime
  }
  return out;
}

}  // namespace atvoss::distributed
