// Scheduler: runs an ExecGraph on one device and gives its timeline — per node its start,
// end, the cores it held and the stream it ran on — as a runtime with a ready queue does:
// each node keeps a counter of unfinished predecessors and becomes ready at zero; among the
// ready nodes the one of highest priority starts first, and a ready node that fits the free
// cores starts even when one of higher priority waits for more (so an op that leaves cores
// idle lets another branch use them). Priority (the articles' runtime scheduler):
//   rank_weight x upward rank (the node's time plus the longest path after it, the critical
//   path it heads) + time_weight x its own time, each over its largest in the graph, +
//   affinity_weight x the free share of the unit it runs on (on a split chip, a cube op while
//   the cube cores idle): three terms in [0, 1], so the weights compare.
// Policy topological is the baseline: graph order, no priority.
// Launches: the host issues kernel launches in priority order as soon as the launches of
// their predecessors are issued (streams with events, as CANN and CUDA runtimes do), each
// taking its launch cost of host time; a kernel starts once launched, ready and its cores
// are free. A launch is thus hidden behind running kernels whenever the host runs ahead.
// Engines: compute kernels run on cube or vector cores (one pool on a coupled chip, two on a
// split one); copies and collectives hold a copy or a communication engine instead (pools of
// their own, Device::copy_engines and comm_engines), so they run beside compute.
// HBM contention (Device::hbm_bytes_per_us > 0): kernels running at once on a device share its
// HBM bandwidth; while their standalone demands (NodeCost::hbm_bytes over device time) add up
// to more than it, each slows to bandwidth / demand of its speed (a fluid model), so two
// memory-bound kernels side by side take as long as one after the other. The bandwidth a copy
// or a collective's DMA takes is not counted.
// L2 contention (Device::l2_bytes > 0, with HBM contention on): kernels running at once share
// the L2 too. A kernel needs min(its reuse distance, L2) bytes for the re-reads it hits alone
// (NodeCost::l2_hit_bytes); while the running kernels need more than the L2 holds, each gets a
// share in proportion to its need, and the re-reads it now misses (core/cache_reuse.hpp at its
// share) add to its HBM demand above. Two kernels that each fit the L2 alone may thus slow each
// other down, where their HBM bytes alone would not. A kernel's share is taken as if it held
// it for the whole kernel, not re-computed along its loop.
// Many devices: a node placed on device d (NodeCost::device) takes cores and engines of d's
// own pools, and d's host issues its launches; otherwise the devices share the one timeline
// (distributed/ places nodes and adds the transfers between devices).
// Deterministic: ties go to the earlier node. Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/target.hpp"
#include "execution/exec_graph.hpp"

namespace atvoss::execution {

struct Device {
  int cube_cores = 1;
  int vector_cores = 1;
  bool split = false;    // separate pools; otherwise one pool of cube_cores cores
  int copy_engines = 1;  // host <-> device DMA queues
  int comm_engines = 1;  // collectives run one at a time, in launch order, as on one HCCL/NCCL stream
  // HBM bandwidth the kernels running at once share (NodeCost::hbm_bytes); 0: not shared,
  // each kernel runs at its standalone time whatever runs beside it.
  double hbm_bytes_per_us = 0;
  // The L2 the kernels running at once share (NodeCost::l2_hit_bytes); 0: each kernel keeps
  // its standalone hits.
  double l2_bytes = 0;
  // Who issues the kernels (core/launch_mode.hpp). The host (false) issues every launch in
  // priority order, each once its predecessors' are issued, ahead of the device. A sunk graph's
  // kernels are issued by the device itself, each once its predecessors are done, one at a time:
  // its launch cost lies on the path of every kernel and on the issuer's queue.
  bool sunk = false;
  static Device of(const Target& target);
};

enum class Policy { topological, critical_path };

// The scheduler's knobs: the priority weights are searchable (a schedule space over them).
struct SchedulerOptions {
  Policy policy = Policy::critical_path;
  double rank_weight = 1;
  double time_weight = 0;
  double affinity_weight = 0;
};

struct NodeRun {
  double launched_us = 0;  // when its launch was issued (host side)
  double start_us = 0, end_us = 0;
  std::vector<int> cores;  // core indices of its unit's pool
  int stream = 0;          // the lane it ran on: the lowest free one when it started
};

struct Timeline {
  std::vector<NodeRun> runs;  // per exec node
  double makespan_us = 0;
  double serial_us = 0;            // every kernel after the one before, launches paid (the sum)
  std::vector<int> critical_path;  // exec nodes, first to last: the chain that sets makespan_us
  double busy_core_us = 0;         // sum over compute nodes of cores x device time
  double busy_comm_us = 0;         // sum over communication nodes of their time
  int devices = 1;                 // devices the graph's nodes are placed on (NodeCost::device)
  // Busy compute core-time over the compute pools' core-time during span_us (0: makespan_us), 0..1.
  double utilisation(const Device& d, double span_us = 0) const;
  Json to_json(const ExecGraph& g) const;
};

Timeline simulate(const ExecGraph& g, const Device& device, const SchedulerOptions& options = {});

// A time no schedule of g on device can beat, whatever its order: the largest of
//   - the longest chain of device times, each node starting no earlier than its own launch;
//   - each pool's work (cores x device time, summed) over the pool's size;
//   - each device's host, issuing every launch one after another, then the kernel launched
//     last running at least the shortest device time.
// HBM and L2 contention only slow kernels down, so they are left out. A makespan equal to it
// is optimal: no priority can do better there.
double makespan_lower_bound(const ExecGraph& g, const Device& device);

std::string to_string(Unit u);  // "cube", "vector", "copy", "comm"

// "topological" / "critical_path", and back (bad_input naming the field otherwise).
std::string to_string(Policy p);
Policy parse_policy(const std::string& s);

}  // namespace atvoss::execution
