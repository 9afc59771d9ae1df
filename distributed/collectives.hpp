// Collectives: how long AllReduce, AllGather, ReduceScatter, Broadcast and a point-to-point
// send take among a group of devices of a topology (topology.hpp), per algorithm, chunk by
// chunk on the links each chunk crosses.
// Each algorithm is a sequence of synchronous steps; in a step every device sends its chunk
// (src -> dst, bytes) at once. A step takes the longest, over the resources (link directions,
// ports) its transfers cross, of the bytes through that resource over its bandwidth, plus the
// longest route latency: transfers that share a link share its bandwidth. This is the
// alpha-beta model of NCCL's and HCCL's own algorithm choice, at the level of links.
// Algorithms:
//   ring          n-1 steps of S/n around the group (twice for AllReduce: reduce-scatter,
//                 then all-gather); Broadcast: a chain, pipelined in chunks
//   tree          a binary tree, pipelined in chunks: reduce up, then broadcast down
//                 (AllReduce, Broadcast)
//   mesh          every device to every other at once, S/n each (HCCL's full-mesh algorithm
//                 inside a server): one step per phase
//   hierarchical  inside each server (mesh where the server is a full mesh, else ring), then
//                 across servers among the cards of the same index (ring), then inside each
//                 server again; groups with the same number of devices on each server
// The chunk count of pipelined algorithms is chosen as the fastest of 1, 2, 4, ... 1024.
// The bandwidth lower bound (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms
// for clusters of workstations", JPDC 2009): an AllReduce of S bytes over n devices moves at
// least 2(n-1)/n S bytes out of some device, AllGather and ReduceScatter (n-1)/n S, a
// Broadcast or a send S; over the slowest device's injection bandwidth B, no algorithm beats
// that many bytes / B.
// Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/topology.hpp"

namespace atvoss::distributed {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };
enum class Algorithm { ring, tree, mesh, hierarchical };

struct CollectiveTime {
  Algorithm algorithm = Algorithm::ring;
  double us = 0;
  double lower_bound_us = 0;  // the bandwidth lower bound (no latency)
  int steps = 0;
  int chunks = 1;  // pipelined algorithms: the chunk count chosen
};

// The most transfers one step may hold: a step is built whole before it is timed (8 bytes a
// transfer, plus up to two resource loads each), so this bounds a collective's memory to a
// few hundred MB.
// A mesh among up to 2048 devices fits; time_collective refuses a larger step (bad_input,
// before allocating) and best_collective skips the algorithms that would exceed it.
inline constexpr std::int64_t kMaxStepTransfers = std::int64_t{1} << 22;

// group: distinct devices of t (the first is the root of a Broadcast and the sender of a
// send; a send's group has two). bytes: the buffer each device holds (AllReduce, Broadcast,
// send), the gathered result (AllGather) or each device's input (ReduceScatter).
// bad_input naming the problem for an algorithm that does not run the collective, or a
// hierarchical group with uneven devices per server.
CollectiveTime time_collective(const Topology& t, Collective c, Algorithm a, const std::vector<int>& group,
                               std::int64_t bytes);
// The fastest algorithm that runs c on this group (mesh only for groups up to 64 devices).
CollectiveTime best_collective(const Topology& t, Collective c, const std::vector<int>& group, std::int64_t bytes);

double bandwidth_lower_bound_us(const Topology& t, Collective c, const std::vector<int>& group, std::int64_t bytes);

// Devices 0..n-1 of t.
std::vector<int> first_devices(int n);

std::string to_string(Collective c);
std::string to_string(Algorithm a);
Collective parse_collective(const std::string& s);  // bad_input naming the field
Algorithm parse_algorithm(const std::string& s);

}  // namespace atvoss::distributed
