#include "report/fusion_report.hpp"

#include <map>

#include "backend/backend.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/lowering.hpp"

namespace atvoss::report {
namespace {

// GM bytes the op would move as a kernel of its own over an output of out_bytes.
double round_trip_bytes(const std::string& op, double out_bytes) {
  return out_bytes * (lowering::epilogue_passes(op) + 1);
}

// Traffic of the plan: what the tiles load and store, and the separate kernels.
double plan_bytes(const lowering::KernelPlan& p) {
  double bytes = (p.operand_read_bytes + p.other_reads) * p.batch + p.out_bytes;
  for (const auto& k : p.separate) bytes += k.read_bytes + k.write_bytes;
  return bytes;
}

}  // namespace

double FusionReport::saved_share() const {
  const double before = gm_bytes_after + gm_bytes_saved;
  return before > 0 ? gm_bytes_saved / before : 0;
}

Json FusionReport::to_json() const {
  Json by_rule = Json::array();
  for (const auto& r : rules) {
    by_rule.push_back({{"rule", r.rule}, {"ops_fused", r.ops}, {"gm_bytes_saved", r.gm_bytes_saved}});
  }
  return {{"ops_before", ops_before},
          {"kernels_after", kernels_after},
          {"kernels_removed", kernels_removed()},
          {"gm_bytes_after", gm_bytes_after},
          {"gm_bytes_saved", gm_bytes_saved},
          {"gm_saved_share", saved_share()},
          {"rules", by_rule}};
}

FusionReport fusion_report(const frontend::TaskSet& tasks, const std::vector<std::optional<Schedule>>& schedules,
                           const Target& target) {
  FusionReport r;
  std::map<std::string, FusionRuleSaving> rules;
  int epilogue_nodes = 0;
  for (std::size_t i = 0; i < tasks.tasks().size() && i < schedules.size(); ++i) {
    if (!schedules[i]) continue;
    const frontend::TuneTask& t = tasks.tasks()[i];
    // Asked of the backend: one without a lowering (a measured table, a Python backend) has
    // no plan, and its task counts as one unfused kernel of unknown traffic.
    const auto planned = backend::backend_for(t.workload, target).lower(t.workload, target, *schedules[i]);
    const int n = t.weight;
    r.ops_before += n * int(1 + t.workload.epilogue().size());
    if (!planned) {
      r.kernels_after += n;
      continue;
    }
    const lowering::KernelPlan& plan = *planned;
    r.kernels_after += n * plan.kernels();
    r.gm_bytes_after += n * plan_bytes(plan);
    epilogue_nodes += n * int(t.workload.epilogue().size());
    if (plan.fusion.fused.empty()) continue;
    FusionRuleSaving& s = rules[plan.fusion.rule];
    s.rule = plan.fusion.rule;
    for (const auto& op : plan.fusion.fused) {
      s.ops += n;
      s.gm_bytes_saved += n * round_trip_bytes(op, plan.out_bytes);
    }
  }
  // Nodes folded into a task beyond its epilogue ops vanished at import (folded weights).
  int folded_into = 0;
  for (const auto& [name, into] : tasks.folded()) folded_into += into.empty() ? 0 : 1;
  if (const int vanished = folded_into - epilogue_nodes; vanished > 0) {
    r.ops_before += vanished;
    rules["fold-into-producer"] = {"fold-into-producer", vanished, 0};
  }
  for (const auto& f : tasks.fallbacks()) {
    r.ops_before += f.count;
    r.kernels_after += f.count;
  }
  for (auto& [name, s] : rules) {
    r.gm_bytes_saved += s.gm_bytes_saved;
    r.rules.push_back(s);
  }
  return r;
}

}  // namespace atvoss::report
