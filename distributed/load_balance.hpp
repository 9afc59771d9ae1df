// Load balancing for data parallelism: devices of uneven speed (a card at 0.8x, or a straggler
// that appears mid-run) hold every synchronous step back to the slowest one, since each
// bucket's AllReduce waits for the last replica's gradients. The runtime measures each
// device's step and moves work to the fast ones: the global batch is cut into units (micro-
// batches of equal size), and each step's units are dealt to the devices so as to minimise
// the slowest device's units over its speed (greedy, which is optimal for this objective:
// one unit at a time to the device that would finish it first).
// A step's time: the data-parallel step (data_parallel.hpp) of the slowest replica, whose
// kernels take units / units_per_device / speed of their time at full batch (kernels scale
// with their share of the batch; the figure is optimistic where a smaller batch leaves cores
// idle). Online: the speeds used to deal step k are those measured at step k - 1, so a
// straggler costs one slow step before the balance follows it.
// Pure functions.
#pragma once

#include <vector>

#include "distributed/data_parallel.hpp"

namespace atvoss::distributed {

struct SpeedChange {
  int step = 0;      // from this step on (0-based)
  int device = 0;    // replica index
  double speed = 1;  // relative to the others' 1.0
};

struct BalancedRun {
  std::vector<double> step_us;          // per step
  std::vector<std::vector<int>> units;  // per step, units per replica
  double total_us = 0;
};

// Units dealt to replicas of the given speeds: sum = units_per_device x speeds.size().
std::vector<int> deal_units(const std::vector<double>& speeds, int units_per_device);

// `steps` steps of data parallelism over options.devices replicas, each holding
// units_per_device units at the start; speeds change as `changes` say. balance: deal each
// step by the speeds measured at the step before; otherwise every replica keeps its units.
// bad_input for a speed <= 0, a device outside the replicas, or units_per_device < 1.
BalancedRun run_balanced(const execution::ExecGraph& step, const execution::Device& device, const Topology& topology,
                         const DataParallelOptions& options, int steps, int units_per_device,
                         const std::vector<SpeedChange>& changes, bool balance);

}  // namespace atvoss::distributed
