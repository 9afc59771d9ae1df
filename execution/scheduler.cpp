#include "execution/scheduler.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include "core/cache_reuse.hpp"
#include "core/error.hpp"
#include "core/launch_mode.hpp"

namespace atvoss::execution {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Upward rank: the node's device time plus the longest chain of device times after it.
std::vector<double> upward_ranks(const ExecGraph& g) {
  std::vector<double> rank(g.nodes().size(), 0);
  for (int i = int(g.nodes().size()) - 1; i >= 0; --i) {
    double after = 0;
    for (int s : g.nodes()[i].succs) after = std::max(after, rank[s]);
    rank[i] = g.nodes()[i].cost.device_us() + after;
  }
  return rank;
}

class Simulation {
 public:
  Simulation(const ExecGraph& g, const Device& d, const SchedulerOptions& o)
      : g_(g), device_(d), o_(o), n_(int(g.nodes().size())), rank_(upward_ranks(g)) {
    add_pool(Unit::cube, d.cube_cores);
    if (d.split)
      add_pool(Unit::vector, d.vector_cores);
    else
      pool_of_unit_[int(Unit::vector)] = pool_of_unit_[int(Unit::cube)];
    add_pool(Unit::copy, d.copy_engines);
    add_pool(Unit::comm, d.comm_engines);
    // Every device of the graph (NodeCost::device) has pools of its own.
    per_device_ = int(pools_.size());
    for (const auto& n : g.nodes()) devices_ = std::max(devices_, n.cost.device + 1);
    for (int dev = 1; dev < devices_; ++dev) {
      for (int p = 0; p < per_device_; ++p) pools_.push_back(pools_[p]);
    }
    out_.devices = devices_;
    free_.clear();
    for (const auto& p : pools_) free_.push_back(int(p.size()));
    out_.runs.resize(n_);
    for (int i = 0; i < n_; ++i) {
      max_rank_ = std::max(max_rank_, rank_[i]);
      max_time_ = std::max(max_time_, g.nodes()[i].cost.device_us());
    }
    for (int i = 0; i < n_; ++i) static_priority_.push_back(static_priority(i));
  }

  Timeline run() {
    if (!device_.sunk) issue_launches();
    std::vector<int> waiting(n_);
    std::vector<int> ready;
    for (int i = 0; i < n_; ++i) {
      waiting[i] = int(g_.nodes()[i].preds.size());
      if (waiting[i] == 0) ready.push_back(i);
    }
    issued_by_device_.assign(devices_, 0);
    if (device_.sunk) issue_on_device(ready, 0);
    speed_.assign(n_, 1.0);
    double t = 0;
    int done = 0;
    while (done < n_) {
      start_ready(ready, t);
      share_bandwidth(t);
      double next = kInf;
      for (int i : active_) next = std::min(next, out_.runs[i].end_us);
      for (int r : ready) {
        if (out_.runs[r].launched_us > t) next = std::min(next, out_.runs[r].launched_us);
      }
      if (next == kInf) throw_bad_input("exec graph: a node can never start (more cores needed than the device has?)");
      t = next;
      std::vector<int> fresh;
      for (int i : finished_by(t)) {
        release(i);
        ++done;
        for (int s : g_.nodes()[i].succs) {
          if (--waiting[s] == 0) fresh.push_back(s);
        }
      }
      if (device_.sunk) issue_on_device(fresh, t);
      ready.insert(ready.end(), fresh.begin(), fresh.end());
    }
    finish();
    return std::move(out_);
  }

 private:
  void add_pool(Unit u, int size) {
    pool_of_unit_[int(u)] = int(pools_.size());
    pools_.push_back(std::vector<bool>(std::max(1, size), false));
  }
  static bool computes(Unit u) { return u == Unit::cube || u == Unit::vector; }
  int pool_of(int i) const {
    const NodeCost& c = g_.nodes()[i].cost;
    return c.device * per_device_ + pool_of_unit_[int(c.unit)];
  }
  int need(int i) const { return std::clamp(g_.nodes()[i].cost.cores, 1, int(pools_[pool_of(i)].size())); }

  double static_priority(int i) const {
    if (o_.policy == Policy::topological) return -double(i);
    // Each term in [0, 1], so that the weights compare: rank and time over their largest.
    return o_.rank_weight * rank_[i] / max_rank_ + o_.time_weight * g_.nodes()[i].cost.device_us() / max_time_;
  }

  double priority(int i) const {
    if (o_.policy == Policy::topological) return static_priority_[i];
    const int p = pool_of(i);
    return static_priority_[i] + o_.affinity_weight * double(free_[p]) / double(pools_[p].size());
  }

  // The host issues launches in priority order, each once its predecessors' are issued.
  void issue_launches() {
    std::vector<int> unissued(n_);
    auto lower = [&](int a, int b) {
      return static_priority_[a] != static_priority_[b] ? static_priority_[a] < static_priority_[b] : a > b;
    };
    std::priority_queue<int, std::vector<int>, decltype(lower)> issuable(lower);
    for (int i = 0; i < n_; ++i) {
      unissued[i] = int(g_.nodes()[i].preds.size());
      if (unissued[i] == 0) issuable.push(i);
    }
    std::vector<double> host(devices_, 0);  // each device's host process issues its own launches
    while (!issuable.empty()) {
      const int i = issuable.top();
      issuable.pop();
      double& clock = host[g_.nodes()[i].cost.device];
      clock += g_.nodes()[i].cost.launch_us;
      out_.runs[i].launched_us = clock;
      for (int s : g_.nodes()[i].succs) {
        if (--unissued[s] == 0) issuable.push(s);
      }
    }
  }

  // A sunk graph: the device issues the nodes ready at t, in priority order, one at a time.
  void issue_on_device(std::vector<int> nodes, double t) {
    std::sort(nodes.begin(), nodes.end(), [&](int a, int b) {
      return static_priority_[a] != static_priority_[b] ? static_priority_[a] > static_priority_[b] : a < b;
    });
    for (int i : nodes) {
      double& clock = issued_by_device_[g_.nodes()[i].cost.device];
      clock = std::max(clock, t) + g_.nodes()[i].cost.launch_us;
      out_.runs[i].launched_us = clock;
    }
  }

  // The running nodes that end by t, in order of end (ties: the earlier node); off the list.
  std::vector<int> finished_by(double t) {
    std::vector<int> out;
    for (int i : active_) {
      if (out_.runs[i].end_us <= t) out.push_back(i);
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) {
      return out_.runs[a].end_us != out_.runs[b].end_us ? out_.runs[a].end_us < out_.runs[b].end_us : a < b;
    });
    std::erase_if(active_, [&](int i) { return out_.runs[i].end_us <= t; });
    return out;
  }

  // HBM shared by the kernels running on a device: while their standalone demands (bytes over
  // time) add up to more than the device's bandwidth, each kernel that moves HBM bytes
  // progresses at bandwidth / demand of its standalone speed (a fluid model: the bandwidth is
  // shared in proportion to demand). A node's end moves only when its speed changes.
  void share_bandwidth(double t) {
    if (!(device_.hbm_bytes_per_us > 0)) return;
    const std::vector<double> l2_need = l2_need_per_device();
    std::vector<double> demand(devices_, 0.0), own(n_, 0.0);
    for (int i : active_) {
      own[i] = demand_of(i, l2_need[g_.nodes()[i].cost.device]);
      demand[g_.nodes()[i].cost.device] += own[i];
    }
    for (int i : active_) {
      const double d = demand[g_.nodes()[i].cost.device];
      const double speed = own[i] > 0 && d > device_.hbm_bytes_per_us ? device_.hbm_bytes_per_us / d : 1.0;
      if (speed == speed_[i]) continue;
      NodeRun& r = out_.runs[i];
      r.end_us = t + (r.end_us - t) * speed_[i] / speed;
      speed_[i] = speed;
    }
  }

  // The L2 bytes a kernel needs for the re-reads it hits alone.
  double l2_need_of(int i) const {
    const NodeCost& c = g_.nodes()[i].cost;
    return c.l2_hit_bytes > 0 ? std::min(c.l2_distance_bytes, device_.l2_bytes) : 0;
  }

  std::vector<double> l2_need_per_device() const {
    std::vector<double> need(devices_, 0.0);
    for (int i : active_) need[g_.nodes()[i].cost.device] += l2_need_of(i);
    return need;
  }

  // Standalone HBM bytes per microsecond, plus the re-reads it misses at its share of an
  // L2 whose running kernels need l2_need in all.
  double demand_of(int i, double l2_need) const {
    const NodeCost& c = g_.nodes()[i].cost;
    if (!(c.device_us() > 0)) return 0;
    // Its standalone time already pays for its own bytes, so alone it never asks for more than
    // the whole bandwidth (a kernel timed above it, its input warm in L2, would otherwise slow
    // down by itself).
    double demand = std::min(device_.hbm_bytes_per_us, c.hbm_bytes / c.device_us());
    const double alone = cache_hit_fraction(device_.l2_bytes, c.l2_distance_bytes);
    if (l2_need > device_.l2_bytes && l2_need_of(i) > 0 && alone > 0) {
      const double share = device_.l2_bytes * l2_need_of(i) / l2_need;
      demand += c.l2_hit_bytes * (1 - cache_hit_fraction(share, c.l2_distance_bytes) / alone) / c.device_us();
    }
    return demand;
  }

  void start_ready(std::vector<int>& ready, double t) {
    std::vector<std::pair<double, int>> order;
    for (int r : ready) order.emplace_back(priority(r), r);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [prio, i] : order) {
      if (out_.runs[i].launched_us > t || free_[pool_of(i)] < need(i)) continue;
      start(i, t);
      active_.push_back(i);
      std::erase(ready, i);
    }
  }

  void start(int i, double t) {
    NodeRun& r = out_.runs[i];
    r.start_us = t;
    r.end_us = t + g_.nodes()[i].cost.device_us();
    auto& pool = pools_[pool_of(i)];
    for (int c = 0; c < int(pool.size()) && int(r.cores.size()) < need(i); ++c) {
      if (!pool[c]) {
        pool[c] = true;
        r.cores.push_back(c);
      }
    }
    free_[pool_of(i)] -= need(i);
    const auto lane = std::find(lanes_.begin(), lanes_.end(), false);
    r.stream = int(lane - lanes_.begin());
    if (lane == lanes_.end())
      lanes_.push_back(true);
    else
      *lane = true;
  }

  void release(int i) {
    const NodeRun& r = out_.runs[i];
    const Unit u = g_.nodes()[i].cost.unit;
    if (computes(u)) out_.busy_core_us += double(r.cores.size()) * (r.end_us - r.start_us);
    if (u == Unit::comm) out_.busy_comm_us += r.end_us - r.start_us;
    for (int c : r.cores) pools_[pool_of(i)][c] = false;
    free_[pool_of(i)] += int(r.cores.size());
    lanes_[r.stream] = false;
  }

  // The makespan, and the chain that set it: from the last node to end, each step back to
  // the predecessor that finished last.
  void finish() {
    out_.serial_us = g_.serial_us();
    int last = -1;
    for (int i = 0; i < n_; ++i) {
      if (last < 0 || out_.runs[i].end_us > out_.runs[last].end_us) last = i;
    }
    out_.makespan_us = last < 0 ? 0 : out_.runs[last].end_us;
    for (int i = last; i >= 0;) {
      out_.critical_path.push_back(i);
      int prev = -1;
      for (int p : g_.nodes()[i].preds) {
        if (prev < 0 || out_.runs[p].end_us > out_.runs[prev].end_us) prev = p;
      }
      i = prev;
    }
    std::reverse(out_.critical_path.begin(), out_.critical_path.end());
  }

  const ExecGraph& g_;
  const Device& device_;
  const SchedulerOptions& o_;
  std::vector<int> active_;               // running nodes
  std::vector<double> speed_;             // of each running node: 1 unless HBM is oversubscribed
  std::vector<double> issued_by_device_;  // a sunk graph: when each device's issuer is next free
  int n_;
  std::vector<double> rank_, static_priority_;
  double max_rank_ = 1e-12, max_time_ = 1e-12;
  std::vector<std::vector<bool>> pools_;
  int pool_of_unit_[4] = {0, 0, 0, 0};
  int per_device_ = 1, devices_ = 1;
  std::vector<int> free_;
  std::vector<bool> lanes_;
  Timeline out_;
};

}  // namespace

double makespan_lower_bound(const ExecGraph& g, const Device& d) {
  const int n = int(g.nodes().size());
  int devices = 1;
  for (const auto& node : g.nodes()) devices = std::max(devices, node.cost.device + 1);
  // Pools per device as the scheduler has them: cube (with vector on a coupled chip), vector
  // on a split chip, copy, comm.
  const auto pool = [&](Unit u) { return u == Unit::vector && !d.split ? int(Unit::cube) : int(u); };
  const auto size = [&](int p) {
    const int s = p == int(Unit::cube)     ? d.cube_cores
                  : p == int(Unit::vector) ? d.vector_cores
                  : p == int(Unit::copy)   ? d.copy_engines
                                           : d.comm_engines;
    return std::max(1, s);
  };
  std::vector<double> work(std::size_t(devices) * 4, 0), host(devices, 0), done(n, 0);
  std::vector<double> shortest(devices, kInf);  // the last launch issued runs at least this long
  double bound = 0;
  for (int i = 0; i < n; ++i) {
    const NodeCost& c = g.nodes()[i].cost;
    const int p = pool(c.unit);
    work[std::size_t(c.device) * 4 + p] += std::clamp(c.cores, 1, size(p)) * c.device_us();
    host[c.device] += c.launch_us;
    shortest[c.device] = std::min(shortest[c.device], c.device_us());
    double start = d.sunk ? 0 : c.launch_us;  // sunk: issued once its predecessors are done
    for (int q : g.nodes()[i].preds) start = std::max(start, done[q]);
    done[i] = start + (d.sunk ? c.launch_us : 0) + c.device_us();
    bound = std::max(bound, done[i]);
  }
  for (std::size_t k = 0; k < work.size(); ++k) bound = std::max(bound, work[k] / size(int(k % 4)));
  for (int dev = 0; dev < devices; ++dev) {
    if (shortest[dev] < kInf) bound = std::max(bound, host[dev] + shortest[dev]);
  }
  return bound;
}

Device Device::of(const Target& target) {
  Device d;
  d.split = target.separate_vector_cores();
  d.sunk = launch_mode_of(target) == LaunchMode::sunk;
  d.cube_cores = target.ai_cores;
  d.vector_cores = d.split ? target.vector_cores : target.ai_cores;
  d.hbm_bytes_per_us = target.hbm_bytes_per_second() / 1e6;
  d.l2_bytes = double(target.l2_bytes);
  return d;
}

Timeline simulate(const ExecGraph& g, const Device& device, const SchedulerOptions& options) {
  return Simulation(g, device, options).run();
}

double Timeline::utilisation(const Device& d, double span_us) const {
  const double span = span_us > 0 ? span_us : makespan_us;
  const double cores = (d.split ? d.cube_cores + d.vector_cores : d.cube_cores) * double(devices);
  return span > 0 ? busy_core_us / (cores * span) : 0;
}

Json Timeline::to_json(const ExecGraph& g) const {
  Json nodes = Json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const NodeRun& r = runs[i];
    nodes.push_back({{"name", g.nodes()[i].name},
                     {"op", g.nodes()[i].op},
                     {"launched_us", r.launched_us},
                     {"start_us", r.start_us},
                     {"end_us", r.end_us},
                     {"stream", r.stream},
                     {"unit", to_string(g.nodes()[i].cost.unit)},
                     {"device", g.nodes()[i].cost.device},
                     {"cores", r.cores}});
  }
  Json path = Json::array();
  for (int i : critical_path) path.push_back(g.nodes()[i].name);
  return {{"makespan_us", makespan_us}, {"serial_us", serial_us}, {"nodes", nodes}, {"critical_path", path}};
}

std::string to_string(Unit u) {
  static const char* names[] = {"cube", "vector", "copy", "comm"};
  return names[int(u)];
}

std::string to_string(Policy p) { return p == Policy::topological ? "topological" : "critical_path"; }

Policy parse_policy(const std::string& s) {
  if (s == "topological") return Policy::topological;
  if (s == "critical_path") return Policy::critical_path;
  throw_bad_input("field 'policy' must be 'topological' or 'critical_path'; got '" + s + "'");
}

}  // namespace atvoss::execution
