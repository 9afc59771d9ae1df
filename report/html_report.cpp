// Report rendering. Map: render_report() writes the page top to bottom —
// summary, model table (model_section), then one section per task (task_section),
// built from small SVG helpers (svg_curve, svg_bars, svg_profile_bar).
#include "report/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "report/html_text.hpp"

namespace atvoss::report {
namespace {

constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:0.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}
th{background:#f0f0f0} td.l,th.l{text-align:left}
section{border-top:2px solid #ddd;margin-top:1.5em;padding-top:0.5em}
.better{color:#080;font-weight:bold} .note{color:#777;font-size:12px}
svg{background:#fafafa;border:1px solid #ddd} .wide{overflow-x:auto}
)";

}  // namespace

std::string svg_curve(const std::vector<double>& curve, double reference) {
  constexpr double W = 420, H = 180, L = 55, R = 10, T = 10, B = 30;
  std::vector<std::pair<double, double>> pts;  // (trial, best)
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (std::isfinite(curve[i])) pts.emplace_back(double(i + 1), curve[i]);
  }
  std::ostringstream s;
  s << "<svg class=\"curve\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  if (pts.empty()) {
    s << "<text x=\"" << W / 2 << "\" y=\"" << H / 2
      << "\" text-anchor=\"middle\" font-size=\"12\">no valid measurement yet</text></svg>";
    return s.str();
  }
  double lo = pts.back().second, hi = pts.front().second;
  if (std::isfinite(reference) && reference > 0) hi = std::max(hi, reference);
  if (hi <= lo) hi = lo * 1.05 + 1e-9;
  const double span = hi - lo, n = std::max<double>(double(curve.size()), 2);
  auto x = [&](double t) { return L + (t - 1) / (n - 1) * (W - L - R); };
  auto y = [&](double v) { return T + (hi - v) / span * (H - T - B); };
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#888\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B
    << "\" stroke=\"#888\"/>";
  s << "<text x=\"" << L - 4 << "\" y=\"" << T + 10 << "\" text-anchor=\"end\" font-size=\"10\">" << fmt(hi)
    << "</text><text x=\"" << L - 4 << "\" y=\"" << H - B << "\" text-anchor=\"end\" font-size=\"10\">" << fmt(lo)
    << "</text>";
  s << "<text x=\"" << (L + W) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\" font-size=\"10\">trials ("
    << curve.size() << ")  &#8212;  best so far, &#181;s</text>";
  if (std::isfinite(reference) && reference > 0) {
    s << "<line class=\"reference\" x1=\"" << L << "\" y1=\"" << y(reference) << "\" x2=\"" << W - R << "\" y2=\""
      << y(reference) << "\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/><text x=\"" << W - R - 2 << "\" y=\""
      << y(reference) - 3 << "\" text-anchor=\"end\" font-size=\"10\" fill=\"#c33\">default " << fmt(reference)
      << "</text>";
  }
  s << "<polyline fill=\"none\" stroke=\"#26a\" stroke-width=\"2\" points=\"";
  double prev_y = y(pts.front().second);
  s << x(pts.front().first) << "," << prev_y;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const double yy = y(pts[i].second);
    s << " " << x(pts[i].first) << "," << prev_y << " " << x(pts[i].first) << "," << yy;
    prev_y = yy;
  }
  s << " " << x(n) << "," << prev_y << "\"/></svg>";
  return s.str();
}

namespace {

// Horizontal bars, one per (label, value), scaled to the largest.
std::string svg_bars(const std::vector<std::pair<std::string, double>>& bars, const std::string& unit) {
  constexpr double W = 560, row = 24, L = 190;
  const double H = row * double(bars.size()) + 10;
  double hi = 0;
  for (const auto& b : bars) {
    if (std::isfinite(b.second)) hi = std::max(hi, b.second);
  }
  std::ostringstream s;
  s << "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\">";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double v = std::isfinite(bars[i].second) ? bars[i].second : 0;
    const double w = hi > 0 ? v / hi * (W - L - 90) : 0;
    const double yy = 5 + row * double(i);
    s << "<text x=\"" << L - 6 << "\" y=\"" << yy + 15 << "\" text-anchor=\"end\" font-size=\"12\">"
      << esc(bars[i].first) << "</text><rect x=\"" << L << "\" y=\"" << yy + 3 << "\" width=\"" << std::max(w, 1.0)
      << "\" height=\"" << row - 8 << "\" fill=\"#4a8\"/><text x=\"" << L + w + 5 << "\" y=\"" << yy + 15
      << "\" font-size=\"12\">" << fmt(v) << " " << unit << "</text>";
  }
  s << "</svg>";
  return s.str();
}

// Stacked bar of where one measurement's time went.
std::string svg_profile_bar(const Profile& p, double scale_us) {
  constexpr double W = 300, H = 18;
  const std::pair<double, const char*> parts[] = {
      {p.compute_us, "#26a"}, {p.dma_us, "#e93"}, {p.sync_wait_us, "#c33"}, {p.launch_us, "#999"}};
  std::ostringstream s;
  s << "<svg class=\"profile\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\">";
  double x = 0;
  for (const auto& [us, color] : parts) {
    const double w = scale_us > 0 ? us / scale_us * W : 0;
    if (w <= 0) continue;
    s << "<rect x=\"" << x << "\" y=\"2\" width=\"" << w << "\" height=\"" << H - 4 << "\" fill=\"" << color << "\"/>";
    x += w;
  }
  s << "</svg>";
  return s.str();
}

std::string profile_cells(const std::optional<Measurement>& m) {
  if (!m || !m->ok()) return "<td colspan=\"4\" class=\"l note\">n/a</td>";
  const Profile& p = m->profile;
  return "<td>" + fmt(100 * p.l1_hit_rate, 1) + "%</td><td>" + fmt(100 * p.cube_utilisation, 1) + "%</td><td>" +
         fmt_bytes(p.gm_bytes) + "</td><td>" + fmt_bytes(p.peak_workspace_bytes) + "</td>";
}

// Where the schedules of each variant pay for a layout change, and what it costs.
void layout_changes_table(std::ostringstream& out, const ReportData& d) {
  out << "<h3 id=\"layout-changes\">Layout changes</h3><p class=\"note\">Between two conv layers "
         "whose layouts differ the model pays a transpose of the consumer's input "
         "(docs/job-spec.md, \"Layouts\"); the end-to-end times above include them.</p>";
  out << "<table><tr><th class=\"l\">schedules</th><th class=\"l\">from layer</th>"
         "<th class=\"l\">to layer</th><th class=\"l\">layouts</th><th class=\"l\">transpose</th>"
         "<th>&#181;s</th></tr>";
  for (const auto& v : d.variants) {
    if (v.layout_changes.empty()) {
      out << "<tr><td class=\"l\">" << esc(v.name) << "</td><td class=\"l\" colspan=\"5\">"
          << "none: every conv layer in one layout</td></tr>";
    }
    for (const auto& c : v.layout_changes) {
      out << "<tr><td class=\"l\">" << esc(v.name) << "</td><td class=\"l\">" << esc(c.from_layer)
          << "</td><td class=\"l\">" << esc(c.to_layer) << "</td><td class=\"l\">" << esc(c.from) << " &rarr; "
          << esc(c.to) << "</td><td class=\"l\">" << esc(c.tensor) << "</td><td>" << fmt(c.time_us) << "</td></tr>";
    }
  }
  out << "</table>";
}

// The nodes that are not tuned, by name: they count in every end-to-end figure.
void fallback_section(std::ostringstream& out, const ReportData& d) {
  if (d.fallbacks.empty()) return;
  double total = 0;
  for (const auto& f : d.fallbacks) total += f.time_us;
  out << "<p class=\"note\"><b>" << d.fallbacks.size()
      << " nodes not tuned</b>, timed as their bytes at"
         " DRAM bandwidth plus one launch ("
      << fmt(total)
      << " &#181;s in every end-to-end figure):</p>"
         "<table><tr><th class=\"l\">node</th><th class=\"l\">op</th><th>count</th><th>&#181;s</th>"
         "<th class=\"l\">why</th></tr>";
  for (const auto& f : d.fallbacks) {
    out << "<tr><td class=\"l\">" << esc(f.name) << "</td><td class=\"l\">" << esc(f.op) << "</td><td>" << f.count
        << "</td><td>" << fmt(f.time_us) << "</td><td class=\"l note\">" << esc(f.reason) << "</td></tr>";
  }
  out << "</table>";
}

// What fusion saved under the chosen schedules, per rule (fusion_report.hpp).
void fusion_section(std::ostringstream& out, const ReportData& d) {
  const FusionReport& f = d.fusion;
  if (f.ops_before == 0) return;
  out << "<h3>Fusion</h3><p class=\"note\">" << f.ops_before << " ops before fusion, " << f.kernels_after
      << " kernels after (" << f.kernels_removed() << " removed); estimated global-memory traffic "
      << fmt(f.gm_bytes_after / 1e6) << " MB, " << fmt(100 * f.saved_share(), 1)
      << "% less than unfused.</p><table><tr><th class=\"l\">rule</th><th>ops fused</th><th>GM MB saved</th></tr>";
  for (const auto& r : f.rules) {
    out << "<tr><td class=\"l\">" << esc(r.rule) << "</td><td>" << r.ops << "</td><td>" << fmt(r.gm_bytes_saved / 1e6)
        << "</td></tr>";
  }
  out << "</table>";
}

void model_section(std::ostringstream& out, const ReportData& d) {
  if (d.variants.empty()) return;
  out << "<section id=\"model\"><h2>Model: before and after</h2>";
  out << "<table><tr><th class=\"l\">schedules</th><th>end-to-end &#181;s</th>"
         "<th>throughput (samples/s, batch "
      << d.batch << ")</th><th>speedup vs (a)</th><th class=\"l\">how chosen</th></tr>";
  const double base = d.variants.front().end_to_end_us();
  std::vector<std::pair<std::string, double>> bars;
  for (const auto& v : d.variants) {
    const double t = v.end_to_end_us();
    out << "<tr><td class=\"l\">" << esc(v.name) << "</td><td>" << fmt(t) << "</td><td>"
        << fmt(v.throughput(d.batch), 1) << "</td><td>" << (t > 0 ? fmt(base / t) + "&times;" : "")
        << "</td><td class=\"l note\">" << esc(v.description) << "</td></tr>";
    bars.emplace_back(v.name, t);
  }
  out << "</table>" << svg_bars(bars, "&#181;s");
  out << "<h3>Per-op profile under each variant</h3><div class=\"wide\"><table><tr><th class=\"l\">op</th>"
         "<th>weight</th>";
  for (const auto& v : d.variants) {
    out << "<th colspan=\"5\">" << esc(v.name) << "</th>";
  }
  out << "</tr><tr><th></th><th></th>";
  for (std::size_t i = 0; i < d.variants.size(); ++i) {
    out << "<th>&#181;s</th><th>L1 hit</th><th>cube util</th><th>GM bytes</th><th>workspace</th>";
  }
  out << "</tr>";
  const auto& ops = d.variants.front().ops;
  for (std::size_t r = 0; r < ops.size(); ++r) {
    out << "<tr><td class=\"l\">" << esc(ops[r].task) << "</td><td>" << ops[r].weight << "</td>";
    for (const auto& v : d.variants) {
      const auto& m = r < v.ops.size() ? v.ops[r].measurement : std::nullopt;
      out << "<td>" << (m && m->ok() ? fmt(m->time_us) : "&ndash;") << "</td>" << profile_cells(m);
    }
    out << "</tr>";
  }
  out << "</table></div>";
  fusion_section(out, d);
  layout_changes_table(out, d);
  out << "</section>";
}

void precision_section(std::ostringstream& out, const ReportData& d) {
  if (d.precisions.empty()) return;
  out << "<section id=\"precision\"><h2>Precision</h2><table><tr><th class=\"l\">precision</th>"
         "<th>end-to-end &#181;s (vendor default schedules)</th><th>gain vs "
      << esc(d.precisions.front().name) << "</th></tr>";
  const double base = d.precisions.front().default_us;
  for (const auto& p : d.precisions) {
    out << "<tr><td class=\"l\">" << esc(p.name) << "</td><td>" << fmt(p.default_us) << "</td><td>"
        << (p.default_us > 0 ? fmt(base / p.default_us) + "&times;" : "") << "</td></tr>";
  }
  out << "</table><p class=\"note\">Accuracy is not measured: it cannot be without the model's "
         "weights and data. The rows compare speed only.</p>";
  if (!d.measured_precision.layers.empty()) {
    out << "<h3>int8 and bf16, measured on this CPU</h3><p class=\"note\">Each fp32 matmul task run in int8 "
           "and bf16 by the real kernels on seeded data (weights N(0, 1/sqrt(K)), heavy-tailed inputs, "
           "min/max calibration on other batches; runtime/sensitivity.hpp): the relative RMS error of its "
           "output against fp32, next to the NPU's estimate, and each precision's kernel time at the default "
           "schedule. Not an accuracy on a labelled dataset.</p><table><tr><th class=\"l\">task</th>"
           "<th>NPU est. int8</th><th>int8 error</th><th>bf16 error</th><th>fp32 us</th><th>int8 us</th>"
           "<th>bf16 us</th></tr>";
    for (const auto& l : d.measured_precision.layers) {
      out << "<tr><td class=\"l\">" << esc(l.task) << "</td><td>" << fmt(100 * l.estimated_int8, 2) << "%</td><td>"
          << fmt(100 * l.int8_error, 2) << "%</td><td>" << fmt(100 * l.bf16_error, 2) << "%</td><td>" << fmt(l.fp32_us)
          << "</td><td>" << fmt(l.int8_us) << "</td><td>" << fmt(l.bf16_us) << "</td></tr>";
    }
    out << "</table>";
  } else if (!d.int8_error.empty()) {
    out << "<h3>int8 quantisation error, estimated</h3><p class=\"note\">An estimate, not a "
           "measurement: sqrt(fan-in) roundings of half an int8 step (1/254 of the range), "
           "relative to one full-range term.</p><table><tr><th class=\"l\">task</th>"
           "<th>est. relative error</th></tr>";
    for (const auto& [task, e] : d.int8_error) {
      out << "<tr><td class=\"l\">" << esc(task) << "</td><td>" << fmt(100 * e, 2) << "%</td></tr>";
    }
    out << "</table>";
  }
  out << "</section>";
}

void knob_table(std::ostringstream& out, const TaskReport& t) {
  std::set<std::string> knobs;
  if (t.default_schedule)
    for (const auto& [k, v] : t.default_schedule->values()) knobs.insert(k);
  if (t.best_schedule)
    for (const auto& [k, v] : t.best_schedule->values()) knobs.insert(k);
  out << "<table class=\"knobs\"><tr><th class=\"l\">knob</th><th>default</th><th>tuned</th></tr>";
  for (const auto& k : knobs) {
    auto cell = [&](const std::optional<Schedule>& s) {
      return s && s->has(k) ? std::to_string(s->at(k)) : std::string("&ndash;");
    };
    const bool changed = cell(t.default_schedule) != cell(t.best_schedule);
    out << "<tr><td class=\"l\">" << esc(k) << "</td><td>" << cell(t.default_schedule) << "</td><td"
        << (changed ? " class=\"better\"" : "") << ">" << cell(t.best_schedule) << "</td></tr>";
  }
  out << "</table>";
}

void profile_table(std::ostringstream& out, const TaskReport& t) {
  const double scale =
      std::max(t.default_measurement && t.default_measurement->ok() ? t.default_measurement->time_us : 0.0,
               t.best_measurement && t.best_measurement->ok() ? t.best_measurement->time_us : 0.0);
  out << "<table class=\"profiles\"><tr><th class=\"l\">schedule</th><th>&#181;s</th>"
         "<th>compute</th><th>DMA</th><th>sync</th><th>launch</th><th>L1 hit</th>"
         "<th>cube util</th><th>GM bytes</th><th>workspace</th><th class=\"l\">"
         "time split (compute / DMA / sync / launch)</th></tr>";
  auto row = [&](const char* label, const std::optional<Measurement>& m) {
    out << "<tr><td class=\"l\">" << label << "</td>";
    if (!m || !m->ok()) {
      out << "<td colspan=\"10\" class=\"l note\">not measured</td></tr>";
      return;
    }
    const Profile& p = m->profile;
    out << "<td>" << fmt(m->time_us) << "</td><td>" << fmt(p.compute_us) << "</td><td>" << fmt(p.dma_us) << "</td><td>"
        << fmt(p.sync_wait_us) << "</td><td>" << fmt(p.launch_us) << "</td>" << profile_cells(m) << "<td class=\"l\">"
        << svg_profile_bar(p, scale) << "</td></tr>";
  };
  row("default", t.default_measurement);
  row("tuned", t.best_measurement);
  out << "</table>";
}

// "tuned 12.3 GFLOP/s (12.3% of peak) · default ...": host results against the measured peak.
void throughput_line(std::ostringstream& out, const TaskReport& t, double peak_gflops) {
  if (peak_gflops <= 0 || t.flops <= 0) return;
  out << "<p class=\"gflops\">";
  auto part = [&](const char* label, const std::optional<Measurement>& m) {
    out << label << " ";
    if (!m || !m->ok() || m->time_us <= 0) {
      out << "&ndash;";
      return;
    }
    const double gflops = t.flops / m->time_us * 1e-3;
    out << fmt(gflops, 1) << " GFLOP/s (" << fmt(100 * gflops / peak_gflops, 1) << "% of peak)";
  };
  part("tuned", t.best_measurement);
  out << " &middot; ";
  part("default", t.default_measurement);
  out << " &middot; measured single-core peak " << fmt(peak_gflops, 1) << " GFLOP/s</p>";
}

void task_section(std::ostringstream& out, const TaskReport& t, std::size_t index, double peak_gflops) {
  const double def =
      t.default_measurement && t.default_measurement->ok() ? t.default_measurement->time_us : std::nan("");
  const double best = t.best_measurement && t.best_measurement->ok() ? t.best_measurement->time_us : std::nan("");
  out << "<section class=\"task\" id=\"task-" << index << "\"><h3>" << esc(t.name) << "</h3>"
      << "<p>" << esc(t.label) << " &middot; weight " << t.weight << " &middot; " << t.trials
      << " trials &middot; best " << fmt(best) << " &#181;s &middot; default " << fmt(def) << " &#181;s";
  if (std::isfinite(def) && std::isfinite(best) && best > 0) {
    out << " &middot; <span class=\"better\">" << fmt(def / best) << "&times;</span>";
  }
  out << "</p>";
  throughput_line(out, t, peak_gflops);
  out << svg_curve(t.curve, def);
  knob_table(out, t);
  profile_table(out, t);
  out << "</section>";
}

}  // namespace

std::string render_report(const ReportData& d) {
  std::ostringstream out;
  out << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>atvoss report: " << esc(d.job)
      << "</title><style>" << kStyle << "</style></head><body>";
  out << "<h1>atvoss tuning report: " << esc(d.job) << "</h1><p>model <b>" << esc(d.model) << "</b> (batch " << d.batch
      << (d.training.empty() ? "" : "; training step, " + esc(d.training)) << ") on <b>" << esc(d.target) << "</b>"
      << (d.launch.empty() ? "" : " (" + esc(d.launch) + ")") << " &middot; strategy " << esc(d.strategy)
      << " &middot; " << d.trials << " trials stored (budget " << d.budget << ") &middot; " << d.tasks.size()
      << " tasks";
  if (d.tasks_tuned >= 0 && d.tasks_tuned < int(d.tasks.size())) {
    out << " &middot; <b>" << d.tasks_tuned << " of " << d.tasks.size()
        << " tasks measured</b>: the budget did not reach the rest, which run their zero-shot pick"
           " (unmeasured)";
  }
  out << "</p>";
  fallback_section(out, d);
  if (!d.device_memory.empty()) {
    out << "<p class=\"note\">Device memory (estimate): " << esc(d.device_memory)
        << (d.fits_device ? "" : " &middot; <b>does not fit</b>: the model could not run on this part as a whole")
        << "</p>";
  }
  model_section(out, d);
  if (d.graph) out << render_graph_section(*d.graph, d.batch);
  out << d.parallel_html;
  precision_section(out, d);
  out << "<h2>Tasks</h2>";
  for (std::size_t i = 0; i < d.tasks.size(); ++i) task_section(out, d.tasks[i], i, d.peak_gflops);
  out << "</body></html>\n";
  return out.str();
}

void write_report(const ReportData& data, const std::string& path) {
  const std::string html = render_report(data);
  write_file_atomically(path, "report", [&](std::ostream& out) { out << html; });
}

}  // namespace atvoss::report
