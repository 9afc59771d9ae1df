// Graph view: the report's section on the model's graph run (plan/graph_run.hpp) — the four-row
// table (throughput, utilisation, peak memory), a timeline (Gantt) SVG of the tuned,
// scheduled run with nodes on their streams coloured by op and the critical path outlined,
// and the live memory over time against the liveness bound and the device's capacity.
// Plain data plus one pure renderer.
#pragma once

#include <string>
#include <vector>

#include "frontend/device_memory.hpp"
#include "plan/graph_run.hpp"

namespace atvoss::report {

struct GraphView {
  struct Row {
    std::string name;
    double end_to_end_us = 0, throughput = 0, utilisation = 0;
  };
  struct Bar {
    std::string name, op;
    double start_us = 0, end_us = 0;
    int stream = 0, cores = 0;
    bool critical = false;
  };
  std::vector<Row> rows;
  double topological_us = 0;
  std::vector<Bar> bars;
  std::vector<std::string> lane_labels;           // per stream; empty: "s0", "s1", ...
  std::vector<std::pair<double, double>> memory;  // (time us, live bytes), a step each
  double peak_bytes = 0, lower_bound_bytes = 0, weight_bytes = 0, capacity_bytes = 0;
};

// The view of a plan's graph run: its rows, bars (the critical path marked) and live bytes.
GraphView graph_view(const plan::GraphRun& run, const frontend::MemoryFit& memory);

// The timeline (Gantt) SVG of v's bars, one lane per stream.
std::string render_timeline_svg(const GraphView& v);

// The section's HTML (a <section id="graph">).
std::string render_graph_section(const GraphView& v, int batch);

}  // namespace atvoss::report
