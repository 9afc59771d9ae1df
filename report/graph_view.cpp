#include "report/graph_view.hpp"

#include <algorithm>
#include <sstream>

#include "report/html_text.hpp"

namespace atvoss::report {
namespace {

// A stable colour per op name.
std::string colour_of(const std::string& op) {
  static const char* palette[] = {"#4a8", "#48c", "#c84", "#a6c", "#c66", "#6aa", "#aa4", "#888"};
  std::size_t h = 0;
  for (char c : op) h = h * 31 + static_cast<unsigned char>(c);
  return palette[h % (sizeof palette / sizeof *palette)];
}

}  // namespace

GraphView graph_view(const plan::GraphRun& run, const frontend::MemoryFit& memory) {
  GraphView v;
  const execution::ExecGraph& g = run.graph;
  std::vector<bool> critical(g.nodes().size(), false);
  for (int i : run.timeline.critical_path) critical[i] = true;
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    const auto& r = run.timeline.runs[i];
    v.bars.push_back(
        {g.nodes()[i].name, g.nodes()[i].op, r.start_us, r.end_us, r.stream, int(r.cores.size()), critical[i]});
  }
  const execution::MemoryPlan& plan = run.memory_plan;
  for (const auto& [time, live] : execution::live_bytes(plan.allocations)) v.memory.emplace_back(time, double(live));
  v.peak_bytes = double(plan.peak_bytes);
  v.lower_bound_bytes = double(plan.lower_bound_bytes);
  v.weight_bytes = memory.weight_bytes;
  v.capacity_bytes = memory.capacity_bytes;
  for (const auto& r : run.rows) v.rows.push_back({r.name, r.end_to_end_us, r.throughput, r.utilisation});
  v.topological_us = run.topological_us;
  return v;
}

std::string render_timeline_svg(const GraphView& v) {
  constexpr double W = 1000, lane = 14, L = 40;
  int streams = 1;
  double end = 0;
  for (const auto& b : v.bars) {
    streams = std::max(streams, b.stream + 1);
    end = std::max(end, b.end_us);
  }
  const double H = lane * streams + 30;
  auto x = [&](double t) { return L + (end > 0 ? t / end : 0) * (W - L - 10); };
  std::ostringstream s;
  s << "<svg class=\"gantt\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\">";
  for (int k = 0; k < streams; ++k) {
    const std::string label = k < int(v.lane_labels.size()) ? esc(v.lane_labels[k]) : "s" + std::to_string(k);
    s << "<text x=\"4\" y=\"" << lane * k + 11 << "\" font-size=\"10\">" << label << "</text>";
  }
  for (const auto& b : v.bars) {
    const double w = std::max(0.5, x(b.end_us) - x(b.start_us));
    s << "<rect x=\"" << x(b.start_us) << "\" y=\"" << lane * b.stream + 1 << "\" width=\"" << w << "\" height=\""
      << lane - 3 << "\" fill=\"" << colour_of(b.op) << "\""
      << (b.critical ? " stroke=\"#d00\" stroke-width=\"1.5\"" : "") << "><title>" << esc(b.name) << " (" << esc(b.op)
      << "): " << fmt(b.start_us) << "&ndash;" << fmt(b.end_us) << " &#181;s, " << b.cores << " cores"
      << (b.critical ? ", critical path" : "") << "</title></rect>";
  }
  s << "<text x=\"" << L << "\" y=\"" << H - 8 << "\" font-size=\"11\">0</text><text x=\"" << W - 10 << "\" y=\""
    << H - 8 << "\" font-size=\"11\" text-anchor=\"end\">" << fmt(end) << " &#181;s</text></svg>";
  return s.str();
}

namespace {

std::string memory_curve(const GraphView& v) {
  constexpr double W = 1000, H = 160, L = 40, B = 20;
  double end = 0, hi = std::max(v.peak_bytes, v.lower_bound_bytes);
  for (const auto& [t, bytes] : v.memory) {
    end = std::max(end, t);
    hi = std::max(hi, bytes);
  }
  if (hi <= 0) return "";
  auto x = [&](double t) { return L + (end > 0 ? t / end : 0) * (W - L - 10); };
  auto y = [&](double b) { return H - B - b / (hi * 1.1) * (H - B - 10); };
  std::ostringstream s;
  s << "<svg class=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\"><polyline fill=\"none\" stroke=\"#48c\" points=\"";
  double prev = 0;
  for (const auto& [t, bytes] : v.memory) {
    s << x(t) << "," << y(prev) << " " << x(t) << "," << y(bytes) << " ";
    prev = bytes;
  }
  s << "\"/>";
  // The plan's peak labelled at the right, the bound at the left: they are often equal.
  auto line = [&](double b, const char* colour, const std::string& label, bool right) {
    s << "<line x1=\"" << L << "\" x2=\"" << W - 10 << "\" y1=\"" << y(b) << "\" y2=\"" << y(b) << "\" stroke=\""
      << colour << "\" stroke-dasharray=\"4 3\"/><text x=\"" << (right ? W - 12 : L + 2) << "\" y=\"" << y(b) - 3
      << "\" font-size=\"11\" text-anchor=\"" << (right ? "end" : "start") << "\">" << label << "</text>";
  };
  line(v.peak_bytes, "#c84", "plan peak " + fmt_bytes(v.peak_bytes), true);
  line(v.lower_bound_bytes, "#4a8", "liveness bound " + fmt_bytes(v.lower_bound_bytes), false);
  s << "</svg>";
  return s.str();
}

}  // namespace

std::string render_graph_section(const GraphView& v, int batch) {
  std::ostringstream out;
  out << "<section id=\"graph\"><h2>The graph run on the device</h2><p class=\"note\">The model's graph run as a "
         "runtime runs it (docs/execution.md): an op starts when its inputs are ready and its cores are free, "
         "branches run side by side, launches are issued ahead of the device, buffers are reused once dead. "
         "Layout transposes and precision conversions are not in it.</p>"
      << "<table><tr><th class=\"l\">schedules, run</th><th>end-to-end &#181;s</th><th>throughput (samples/s, batch "
      << batch << ")</th><th>compute utilisation</th></tr>";
  for (const auto& r : v.rows) {
    out << "<tr><td class=\"l\">" << esc(r.name) << "</td><td>" << fmt(r.end_to_end_us) << "</td><td>"
        << fmt(r.throughput, 1) << "</td><td>" << fmt(100 * r.utilisation, 1) << "%</td></tr>";
  }
  out << "</table><p class=\"note\">Tuned schedules in plain graph order: " << fmt(v.topological_us)
      << " &#181;s. Peak activation memory " << fmt_bytes(v.peak_bytes) << " (liveness bound "
      << fmt_bytes(v.lower_bound_bytes) << ") plus weights " << fmt_bytes(v.weight_bytes);
  if (v.capacity_bytes > 0) out << " against " << fmt_bytes(v.capacity_bytes) << " of device memory";
  out << ".</p><h3>Timeline, tuned and scheduled (critical path outlined)</h3><div class=\"wide\">"
      << render_timeline_svg(v) << "</div><h3>Live memory over time</h3><div class=\"wide\">" << memory_curve(v)
      << "</div></section>";
  return out.str();
}

}  // namespace atvoss::report
