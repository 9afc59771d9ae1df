#include "distributed/device_memory.hpp"

#include <map>
#include <string>

namespace atvoss::distributed {
namespace {

// The device a buffer lives on: its producer's, a send's result on its reader's, an input on
// its first reader's.
int device_of(const execution::ExecGraph& g, const execution::ExecBuffer& b) {
  const bool sent = b.producer >= 0 && g.nodes()[b.producer].op == "Send";
  if (b.producer >= 0 && !sent) return g.nodes()[b.producer].cost.device;
  return b.consumers.empty() ? 0 : g.nodes()[b.consumers.front()].cost.device;
}

}  // namespace

std::vector<execution::MemoryPlan> memory_per_device(const execution::ExecGraph& g, const execution::Timeline& t) {
  const execution::MemoryPlan whole = execution::plan_memory(g, t);
  std::map<std::string, int> device_by_name;
  for (const auto& b : g.buffers()) device_by_name[b.name] = device_of(g, b);
  std::vector<std::vector<execution::Allocation>> lifetimes(std::max(1, t.devices));
  for (const auto& a : whole.allocations) lifetimes[device_by_name[a.tensor]].push_back(a);
  std::vector<execution::MemoryPlan> out;
  for (auto& l : lifetimes) out.push_back(execution::plan_allocations(std::move(l)));
  return out;
}

}  // namespace atvoss::distributed
