// Fusion report: what fusion saved a model under its chosen schedules — ops before and
// kernels after, kernels removed, and the global-memory bytes the fused ops no longer move,
// per fusion rule. An epilogue op fused by a rule saves the kernel it would have run alone
// and that kernel's round trip of the output through GM (read, once per pass, and write);
// a node folded at import (BatchNormalization into a conv) saves the same with no rule of
// the lowering, under "fold-into-producer". Bytes are the kernel plans' estimates; a task
// whose backend has no lowering counts as one kernel of unknown traffic.
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/schedule.hpp"
#include "core/target.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::report {

struct FusionRuleSaving {
  std::string rule;
  int ops = 0;  // op occurrences it fused
  double gm_bytes_saved = 0;
};

struct FusionReport {
  int ops_before = 0;         // compute nodes: tasks' own, fused epilogue ops, folded nodes, fallbacks
  int kernels_after = 0;      // kernels launched under the chosen schedules, fallbacks included
  double gm_bytes_after = 0;  // GM traffic of the tasks under the chosen schedules (estimate)
  double gm_bytes_saved = 0;
  std::vector<FusionRuleSaving> rules;
  int kernels_removed() const { return ops_before - kernels_after; }
  double saved_share() const;  // of the traffic without fusion
  Json to_json() const;
};

// tasks under schedules[i] (nullopt: the task is not counted) on target.
FusionReport fusion_report(const frontend::TaskSet& tasks, const std::vector<std::optional<Schedule>>& schedules,
                           const Target& target);

}  // namespace atvoss::report
