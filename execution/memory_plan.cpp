#include "execution/memory_plan.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace atvoss::execution {
namespace {

bool live_together(const Allocation& a, const Allocation& b) {
  return a.start_us < b.end_us && b.start_us < a.end_us;
}

bool share_bytes(const Allocation& a, const Allocation& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

std::int64_t aligned(std::int64_t bytes, std::int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Each buffer's live interval on the timeline.
std::vector<Allocation> lifetimes(const ExecGraph& g, const Timeline& t) {
  std::vector<Allocation> out;
  for (const ExecBuffer& b : g.buffers()) {
    if (b.bytes <= 0) continue;
    Allocation a{b.name, 0, b.bytes, 0, 0};
    a.start_us = b.producer >= 0 ? t.runs[b.producer].start_us : 0;
    a.end_us = b.producer >= 0 ? t.runs[b.producer].end_us : 0;
    for (int c : b.consumers) a.end_us = std::max(a.end_us, t.runs[c].end_us);
    if (b.output) a.end_us = std::max(a.end_us, t.makespan_us);
    // A kernel of no device time still holds its output for an instant.
    if (a.end_us <= a.start_us) a.end_us = a.start_us + 1e-9;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::int64_t liveness_bound(const std::vector<Allocation>& allocations) {
  std::vector<std::pair<double, std::int64_t>> events;  // frees sort before allocations at one time
  for (const auto& a : allocations) {
    events.emplace_back(a.start_us, a.bytes);
    events.emplace_back(a.end_us, -a.bytes);
  }
  std::sort(events.begin(), events.end());
  std::int64_t live = 0, peak = 0;
  for (const auto& [time, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

MemoryPlan plan_memory(const ExecGraph& g, const Timeline& t, std::int64_t alignment) {
  if (alignment < 1) throw_bad_input("memory plan: alignment must be >= 1");
  MemoryPlan plan;
  plan.allocations = lifetimes(g, t);
  plan.lower_bound_bytes = liveness_bound(plan.allocations);
  std::vector<std::size_t> order(plan.allocations.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return plan.allocations[a].bytes > plan.allocations[b].bytes;
  });
  std::vector<std::size_t> placed;
  for (std::size_t i : order) {
    Allocation& a = plan.allocations[i];
    std::vector<const Allocation*> busy;  // placed and live with a, by offset
    for (std::size_t p : placed) {
      if (live_together(a, plan.allocations[p])) busy.push_back(&plan.allocations[p]);
    }
    std::sort(busy.begin(), busy.end(), [](const Allocation* x, const Allocation* y) { return x->offset < y->offset; });
    std::int64_t offset = 0;
    for (const Allocation* b : busy) {
      if (b->offset >= offset + a.bytes) break;  // a fits in the gap before b
      offset = std::max(offset, aligned(b->offset + b->bytes, alignment));
    }
    a.offset = offset;
    plan.peak_bytes = std::max(plan.peak_bytes, offset + a.bytes);
    placed.push_back(i);
  }
  return plan;
}

std::vector<std::string> check_plan(const MemoryPlan& plan) {
  std::vector<std::string> problems;
  const auto& all = plan.allocations;
  for (const auto& a : all) {
    if (a.offset < 0 || a.bytes < 0) problems.push_back("'" + a.tensor + "': negative offset or size");
  }
  std::vector<std::size_t> by_start(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) { return all[a].start_us < all[b].start_us; });
  for (std::size_t x = 0; x < by_start.size(); ++x) {
    const Allocation& a = all[by_start[x]];
    for (std::size_t y = x + 1; y < by_start.size() && all[by_start[y]].start_us < a.end_us; ++y) {
      const Allocation& b = all[by_start[y]];
      if (live_together(a, b) && share_bytes(a, b)) {
        problems.push_back("'" + a.tensor + "' [" + std::to_string(a.offset) + ", " + std::to_string(a.offset + a.bytes) +
                           ") and '" + b.tensor + "' [" + std::to_string(b.offset) + ", " +
                           std::to_string(b.offset + b.bytes) + ") share bytes while both are live");
      }
    }
  }
  return problems;
}

Json MemoryPlan::to_json() const {
  Json list = Json::array();
  for (const auto& a : allocations) {
    list.push_back({{"tensor", a.tensor}, {"offset", a.offset}, {"bytes", a.bytes}, {"start_us", a.start_us},
                    {"end_us", a.end_us}});
  }
  return {{"peak_bytes", peak_bytes}, {"lower_bound_bytes", lower_bound_bytes}, {"allocations", list}};
}

MemoryPlan MemoryPlan::from_json(const Json& j) {
  auto fail = [](const std::string& what) { throw_bad_input("memory plan: " + what); };
  if (!j.is_object() || !j.contains("allocations") || !j["allocations"].is_array()) {
    fail("expected an object with an array 'allocations'");
  }
  MemoryPlan plan;
  for (std::size_t i = 0; i < j["allocations"].size(); ++i) {
    const Json& a = j["allocations"][i];
    const std::string where = "allocations[" + std::to_string(i) + "]";
    if (!a.is_object()) fail(where + " must be an object {tensor, offset, bytes, start_us, end_us}");
    for (const char* f : {"offset", "bytes"}) {
      if (!a.contains(f) || !a[f].is_number_integer()) fail(where + ": field '" + f + "' must be an integer");
    }
    for (const char* f : {"start_us", "end_us"}) {
      if (!a.contains(f) || !a[f].is_number()) fail(where + ": field '" + f + "' must be a number");
    }
    if (!a.contains("tensor") || !a["tensor"].is_string()) fail(where + ": field 'tensor' must be a string");
    plan.allocations.push_back({a["tensor"].get<std::string>(), a["offset"].get<std::int64_t>(),
                                a["bytes"].get<std::int64_t>(), a["start_us"].get<double>(), a["end_us"].get<double>()});
    const Allocation& last = plan.allocations.back();
    plan.peak_bytes = std::max(plan.peak_bytes, last.offset + last.bytes);
  }
  plan.lower_bound_bytes = liveness_bound(plan.allocations);
  return plan;
}

}  // namespace atvoss::execution
