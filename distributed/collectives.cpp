#include "distributed/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/error.hpp"

namespace atvoss::distributed {
namespace {

struct Transfer {
  int src = 0, dst = 0;
};

// A step's time is linear in its chunk: latency + bytes x us_per_byte, where us_per_byte is
// the most loaded resource's share (transfers through it over its bandwidth).
struct StepCost {
  double latency_us = 0;
  double us_per_byte = 0;
  double us(double bytes) const { return latency_us + bytes * us_per_byte; }
};

StepCost step_cost(const Topology& t, const std::vector<Transfer>& step) {
  std::unordered_map<std::int64_t, double> load;  // resource -> us per byte of chunk
  StepCost c;
  for (const Transfer& x : step) {
    double latency = 0;
    for (const Hop& h : t.route(x.src, x.dst)) {
      c.us_per_byte = std::max(c.us_per_byte, load[h.resource] += 1.0 / h.bytes_per_us);
      latency += h.latency_us;
    }
    c.latency_us = std::max(c.latency_us, latency);
  }
  return c;
}

using Groups = std::vector<std::vector<int>>;  // subgroups that run one phase side by side

// Every member sends to the next one of its subgroup (around when `around`).
std::vector<Transfer> ring_step(const Groups& gs, bool around = true) {
  std::vector<Transfer> step;
  for (const auto& g : gs) {
    const int n = int(g.size());
    for (int i = 0; i + (around ? 0 : 1) < n && n > 1; ++i) step.push_back({g[i], g[(i + 1) % n]});
  }
  return step;
}

std::vector<Transfer> mesh_step(const Groups& gs) {
  std::vector<Transfer> step;
  for (const auto& g : gs) {
    for (int a : g) {
      for (int b : g) {
        if (a != b) step.push_back({a, b});
      }
    }
  }
  return step;
}

// Child to parent of a binary heap over the subgroup's order (reversed: parent to child).
std::vector<Transfer> tree_step(const Groups& gs, bool down) {
  std::vector<Transfer> step;
  for (const auto& g : gs) {
    for (int i = 1; i < int(g.size()); ++i) {
      step.push_back(down ? Transfer{g[(i - 1) / 2], g[i]} : Transfer{g[i], g[(i - 1) / 2]});
    }
  }
  return step;
}

int tree_depth(int n) { return n <= 1 ? 0 : int(std::floor(std::log2(double(n - 1)))) + 1; }

// Accumulates phases into a CollectiveTime.
struct Timing {
  const Topology& t;
  CollectiveTime out;
  void repeat(const std::vector<Transfer>& step, int times, double chunk_bytes) {
    if (times <= 0 || step.empty()) return;
    out.us += times * step_cost(t, step).us(chunk_bytes);
    out.steps += times;
  }
  // A pipeline `depth` steps deep fed `bytes` in k chunks: depth + k - 1 steps of bytes / k;
  // k the fastest power of two up to 1024.
  void pipelined(const std::vector<Transfer>& step, int depth, double bytes) {
    if (depth <= 0 || step.empty()) return;
    const StepCost c = step_cost(t, step);
    int best_k = 1;
    for (int k = 2; k <= 1024; k *= 2) {
      if ((depth + k - 1) * c.us(bytes / k) < (depth + best_k - 1) * c.us(bytes / best_k)) best_k = k;
    }
    out.us += (depth + best_k - 1) * c.us(bytes / best_k);
    out.steps += depth + best_k - 1;
    out.chunks = std::max(out.chunks, best_k);
  }
};

[[noreturn]] void refuse(Collective c, Algorithm a) {
  throw_bad_input("collective: algorithm '" + to_string(a) + "' does not run " + to_string(c) +
                  " (tree runs all_reduce and broadcast)");
}

void flat(Timing& tm, Collective c, Algorithm a, const std::vector<int>& g, double s) {
  const int n = int(g.size());
  const Groups gs{g};
  if (a == Algorithm::ring) {
    if (c == Collective::all_reduce) tm.repeat(ring_step(gs), 2 * (n - 1), s / n);
    if (c == Collective::all_gather || c == Collective::reduce_scatter) tm.repeat(ring_step(gs), n - 1, s / n);
    if (c == Collective::broadcast) tm.pipelined(ring_step(gs, false), n - 1, s);
  } else if (a == Algorithm::tree) {
    if (c != Collective::all_reduce && c != Collective::broadcast) refuse(c, a);
    if (c == Collective::all_reduce) tm.pipelined(tree_step(gs, false), tree_depth(n), s);
    tm.pipelined(tree_step(gs, true), tree_depth(n), s);
  } else {  // mesh
    if (c == Collective::broadcast) {
      std::vector<Transfer> scatter;
      for (int i = 1; i < n; ++i) scatter.push_back({g[0], g[i]});
      tm.repeat(scatter, 1, s / n);
    }
    const int phases = c == Collective::all_reduce ? 2 : 1;
    tm.repeat(mesh_step(gs), phases, s / n);
  }
}

// Subgroups by server (the group's members on each server, in the group's order) and rails
// (the i-th member of every server's subgroup).
struct Split {
  Groups servers, rails;
};

Split split_by_server(const Topology& t, const std::vector<int>& g) {
  std::map<int, std::vector<int>> by;
  for (int d : g) by[t.server_of(d)].push_back(d);
  Split s;
  for (auto& [server, members] : by) s.servers.push_back(std::move(members));
  const std::size_t m = s.servers.front().size();
  for (const auto& sg : s.servers) {
    if (sg.size() != m) {
      throw_bad_input(
          "collective: algorithm 'hierarchical' needs the same number of devices on each server; "
          "this group has " +
          std::to_string(m) + " and " + std::to_string(sg.size()));
    }
  }
  s.rails.assign(m, {});
  for (const auto& sg : s.servers) {
    for (std::size_t i = 0; i < m; ++i) s.rails[i].push_back(sg[i]);
  }
  return s;
}

void hierarchical(Timing& tm, Collective c, const std::vector<int>& g, double s) {
  const Split sp = split_by_server(tm.t, g);
  const int m = int(sp.rails.size()), servers = int(sp.servers.size());
  const bool mesh = tm.t.shape == ServerShape::full_mesh;
  // Inside every server at once: the phase of a ring (m - 1 steps) or a mesh (one step).
  auto inside = [&](double chunk) {
    if (mesh)
      tm.repeat(mesh_step(sp.servers), 1, chunk);
    else
      tm.repeat(ring_step(sp.servers), m - 1, chunk);
  };
  if (c == Collective::all_reduce) {
    inside(s / m);
    tm.repeat(ring_step(sp.rails), 2 * (servers - 1), s / (double(m) * servers));
    inside(s / m);
  } else if (c == Collective::all_gather) {
    tm.repeat(ring_step(sp.rails), servers - 1, s / (double(m) * servers));
    inside(s / m);
  } else if (c == Collective::reduce_scatter) {
    inside(s / m);
    tm.repeat(ring_step(sp.rails), servers - 1, s / (double(m) * servers));
  } else {  // broadcast: along the root's rail, then inside every server from its rail member
    tm.pipelined(ring_step({sp.rails[0]}, false), servers - 1, s);
    if (mesh)
      flat(tm, Collective::broadcast, Algorithm::mesh, sp.servers.front(), s);
    else
      tm.pipelined(ring_step(sp.servers, false), m - 1, s);
  }
}

void check_group(const Topology& t, Collective c, const std::vector<int>& group) {
  if (group.empty()) throw_bad_input("collective: the group has no device");
  std::vector<int> sorted = group;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw_bad_input("collective: a device is in the group twice");
  }
  if (sorted.front() < 0 || sorted.back() >= t.devices()) {
    throw_bad_input("collective: device " + std::to_string(sorted.back()) + " is not in topology '" + t.name + "' (" +
                    std::to_string(t.devices()) + " devices)");
  }
  if (c == Collective::send_recv && group.size() != 2) {
    throw_bad_input("collective: send_recv needs a group of two (sender, receiver)");
  }
}

// The transfers in the largest step of algorithm a on this group: a mesh sends from every
// member to every other, n(n-1); a hierarchical one inside full-mesh servers, n(m-1) for m
// members per server; the others one or two per member. Known before any step is built.
std::int64_t largest_step(const Topology& t, Algorithm a, const std::vector<int>& group) {
  const auto n = static_cast<std::int64_t>(group.size());
  if (a == Algorithm::mesh) return n * (n - 1);
  if (a == Algorithm::hierarchical && t.shape == ServerShape::full_mesh) {
    std::map<int, std::int64_t> per;
    for (int d : group) ++per[t.server_of(d)];
    std::int64_t m = 0;
    for (const auto& kv : per) m = std::max(m, kv.second);
    return std::max(n, n * (m - 1));
  }
  return n;
}

// Refuses, before anything is allocated, a collective whose steps would hold more transfers
// than kMaxStepTransfers: a mesh among 65536 devices once ran out of memory at 2 GB.
void check_work(const Topology& t, Algorithm a, const std::vector<int>& group) {
  const std::int64_t transfers = largest_step(t, a, group);
  if (transfers <= kMaxStepTransfers) return;
  throw_bad_input("collective: algorithm '" + to_string(a) + "' among " + std::to_string(group.size()) +
                  " devices sends " + std::to_string(transfers) + " transfers in one step; at most " +
                  std::to_string(kMaxStepTransfers) +
                  " are simulated (a smaller group, or ring, tree or hierarchical, which grow linearly)");
}

}  // namespace

double bandwidth_lower_bound_us(const Topology& t, Collective c, const std::vector<int>& group, std::int64_t bytes) {
  const double n = double(group.size());
  if (n < 2) return 0;
  double b = std::numeric_limits<double>::infinity();
  for (int d : group) b = std::min(b, t.injection_bytes_per_us(d));
  double moved = double(bytes);
  if (c == Collective::all_reduce) moved *= 2 * (n - 1) / n;
  if (c == Collective::all_gather || c == Collective::reduce_scatter) moved *= (n - 1) / n;
  return moved / b;
}

CollectiveTime time_collective(const Topology& t, Collective c, Algorithm a, const std::vector<int>& group,
                               std::int64_t bytes) {
  check_group(t, c, group);
  if (bytes < 0) throw_bad_input("collective: bytes must be >= 0");
  check_work(t, a, group);
  Timing tm{t, {}};
  tm.out.algorithm = a;
  tm.out.lower_bound_us = bandwidth_lower_bound_us(t, c, group, bytes);
  if (group.size() < 2) return tm.out;
  if (c == Collective::send_recv)
    tm.repeat({{group[0], group[1]}}, 1, double(bytes));
  else if (a == Algorithm::hierarchical)
    hierarchical(tm, c, group, double(bytes));
  else
    flat(tm, c, a, group, double(bytes));
  return tm.out;
}

CollectiveTime best_collective(const Topology& t, Collective c, const std::vector<int>& group, std::int64_t bytes) {
  std::optional<CollectiveTime> best;
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::mesh, Algorithm::hierarchical}) {
    if (a == Algorithm::tree && c != Collective::all_reduce && c != Collective::broadcast) continue;
    if (a == Algorithm::mesh && group.size() > 64) continue;
    if (largest_step(t, a, group) > kMaxStepTransfers) continue;
    if (a == Algorithm::hierarchical && [&] {
          std::map<int, int> per;
          for (int d : group) ++per[t.server_of(d)];
          return std::any_of(per.begin(), per.end(), [&](const auto& kv) { return kv.second != per.begin()->second; });
        }()) {
      continue;
    }
    const CollectiveTime r = time_collective(t, c, a, group, bytes);
    if (!best || r.us < best->us) best = r;
  }
  if (!best) check_work(t, Algorithm::ring, group);  // throws: even a ring is too large
  if (!best) throw_bad_input("collective: no algorithm runs " + to_string(c) + " on this group");
  return *best;
}

std::vector<int> first_devices(int n) {
  std::vector<int> g(std::max(0, n));
  for (int i = 0; i < n; ++i) g[i] = i;
  return g;
}

std::string to_string(Collective c) {
  static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"};
  return names[int(c)];
}

std::string to_string(Algorithm a) {
  static const char* names[] = {"ring", "tree", "mesh", "hierarchical"};
  return names[int(a)];
}

Collective parse_collective(const std::string& s) {
  for (int i = 0; i < 5; ++i) {
    if (to_string(Collective(i)) == s) return Collective(i);
  }
  throw_bad_input("field 'collective' must be all_reduce, all_gather, reduce_scatter, broadcast or send_recv; got '" +
                  s + "'");
}

Algorithm parse_algorithm(const std::string& s) {
  for (int i = 0; i < 4; ++i) {
    if (to_string(Algorithm(i)) == s) return Algorithm(i);
  }
  throw_bad_input("field 'algorithm' must be ring, tree, mesh or hierarchical; got '" + s + "'");
}

}  // namespace atvoss::distributed
