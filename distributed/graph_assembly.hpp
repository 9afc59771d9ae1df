// Graph assembly: builds an ExecGraph whose nodes are added in any order — the parallel plans
// (data_parallel.hpp, pipeline_parallel.hpp) add transfers, collectives and barriers between
// the nodes of a step, and ExecGraph::add_node wants producers first. build() sorts the nodes
// topologically (Kahn's algorithm), the earliest added first among those ready, so that a
// node added right after the one it waits for stays next to it.
// Plain value type; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "execution/exec_graph.hpp"

namespace atvoss::distributed {

class GraphAssembly {
 public:
  int buffer(std::string name, std::int64_t bytes, bool output = false);
  int node(std::string name, std::string op, execution::NodeCost cost, std::vector<int> reads, std::vector<int> writes,
           execution::TrainingTag training = {});
  // bad_input naming a node on a cycle, or a buffer written twice.
  execution::ExecGraph build() const;

 private:
  struct Buffer {
    std::string name;
    std::int64_t bytes = 0;
    bool output = false;
    int producer = -1;
  };
  struct Node {
    std::string name, op;
    execution::NodeCost cost;
    std::vector<int> reads, writes;
    execution::TrainingTag training;
  };
  std::vector<Buffer> buffers_;
  std::vector<Node> nodes_;
};

}  // namespace atvoss::distributed
