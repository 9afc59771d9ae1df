// Execution binding: a graph built or tuned in Python (atvoss.Graph, atvoss.tune_graph) run on
// its device by the execution simulator (execution/scheduler.hpp), for its timeline: per node
// its start, end, cores and stream, the makespan and the serial sum. Node costs as a job's
// graph run takes them (plan/graph_run.hpp node_cost).
#include <map>

#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "execution/scheduler.hpp"
#include "frontend/graph_json.hpp"
#include "plan/graph_run.hpp"

namespace atvoss::python {
namespace {

struct Choice {
  Schedule schedule;
  double time_us = 0;
};

// {node name: {"schedule": {...}, "time_us": t}} for the kernels whose schedule is chosen.
std::map<std::string, Choice> choices_of(const Json& j) {
  if (!j.is_object()) throw_bad_input("simulate: field 'choices' must map node names to choices");
  std::map<std::string, Choice> out;
  for (const auto& [name, c] : j.items()) {
    const double t = c.value("time_us", -1.0);
    if (!(t >= 0)) throw_bad_input("simulate: choices['" + name + "']: field 'time_us' must be a number >= 0");
    out.emplace(name,
                Choice{Schedule::from_json(require_field(c, "schedule", "simulate: choices['" + name + "']")), t});
  }
  return out;
}

std::string simulate_graph(const std::string& graph, const std::string& target, const std::string& choices,
                           const std::string& policy) {
  const frontend::Graph g = frontend::graph_from_json(parse(graph, "graph"));
  const Target t = backend::load_target(target);
  const std::map<std::string, Choice> chosen = choices_of(parse(choices, "choices"));
  execution::SchedulerOptions options;
  options.policy = execution::parse_policy(policy);
  const execution::ExecGraph exec = execution::ExecGraph::from_graph(g, [&](int i) {
    const frontend::GraphNode& n = g.nodes()[i];
    const auto it = chosen.find(n.name);
    return plan::node_cost(n, t, it != chosen.end() ? &it->second.schedule : nullptr,
                           it != chosen.end() ? it->second.time_us : 0);
  });
  const execution::Device device = execution::Device::of(t);
  const execution::Timeline timeline = execution::simulate(exec, device, options);
  Json j = timeline.to_json(exec);
  j["utilisation"] = timeline.utilisation(device);
  return dump(j);
}

}  // namespace

void bind_execution(py::module_& m) {
  m.def("simulate_graph", &simulate_graph, py::arg("graph"), py::arg("target"), py::arg("choices"), py::arg("policy"),
        "A graph's timeline on its device as JSON");
}

}  // namespace atvoss::python
