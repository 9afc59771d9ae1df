#include "report/html_report.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>

#include <unistd.h>

namespace atvoss::report {
namespace {

namespace fs = std::filesystem;

Measurement timed(double t, double l1) {
  Measurement m;
  m.time_us = t;
  m.repeats = {t};
  m.profile.compute_us = t * 0.6;
  m.profile.dma_us = t * 0.3;
  m.profile.launch_us = t * 0.1;
  m.profile.l1_hit_rate = l1;
  m.profile.cube_utilisation = 0.5;
  m.profile.gm_bytes = 3 << 20;
  m.profile.peak_workspace_bytes = 200 << 10;
  return m;
}

ReportData sample() {
  ReportData d;
  d.job = "unit <job>";
  d.target = "ascend910";
  d.model = "mlp";
  d.batch = 64;
  d.strategy = "evolutionary";
  d.trials = 5;
  d.budget = 5;
  TaskReport t;
  t.name = "fc1";
  t.label = "matmul M=64,N=512,K=784 float16 +bias";
  t.weight = 2;
  t.trials = 5;
  t.curve = {std::numeric_limits<double>::infinity(), 30, 30, 21, 20};
  t.default_schedule = Schedule({{"tile_m", 16}, {"tile_n", 16}});
  t.default_measurement = timed(30, 0.5);
  t.best_schedule = Schedule({{"tile_m", 64}, {"tile_n", 16}});
  t.best_measurement = timed(20, 0.9);
  d.tasks.push_back(t);
  for (auto [name, time] : {std::pair{"(a) vendor default", 30.0}, std::pair{"(d) tuned + fusion", 20.0}}) {
    ModelVariant v{name, "how", {VariantOp{"fc1", 2, timed(time, 0.7), ""}}};
    d.variants.push_back(v);
  }
  d.fallbacks = {{"pool5", "MaxPool", "no lowering for MaxPool", 1, 3.25}};
  return d;
}

TEST(Report, PrecisionRowsSayAccuracyIsNotMeasured) {
  auto d = sample();
  EXPECT_EQ(render_report(d).find("id=\"precision\""), std::string::npos);  // no rows, no section
  d.precisions = {{"float16", 100}, {"int8", 40}, {"this job's precision", 50}};
  d.int8_error = {{"fc1", 0.0394}};
  const std::string html = render_report(d);
  EXPECT_NE(html.find("2.50&times;"), std::string::npos);  // 100 / 40
  EXPECT_NE(html.find("2.00&times;"), std::string::npos);
  EXPECT_NE(html.find("Accuracy is not measured"), std::string::npos);
  EXPECT_NE(html.find("3.94%"), std::string::npos);
  EXPECT_NE(html.find("An estimate, not a measurement"), std::string::npos);
}

TEST(Report, HostResultsAreInGflopsAndAsAFractionOfTheMeasuredPeak) {
  ReportData d = sample();
  EXPECT_EQ(render_report(d).find("GFLOP/s"), std::string::npos);  // not a host target: times only
  d.target = "host-123bf7c5cac5";
  d.peak_gflops = 80;
  d.tasks[0].flops = 4e8;
  d.tasks[0].best_measurement = timed(8000, 0.9);      // 4e8 / 8 ms = 50 GFLOP/s
  d.tasks[0].default_measurement = timed(10000, 0.5);  // 40 GFLOP/s
  const std::string html = render_report(d);
  EXPECT_NE(html.find("tuned 50.0 GFLOP/s (62.5% of peak)"), std::string::npos) << html;
  EXPECT_NE(html.find("default 40.0 GFLOP/s (50.0% of peak)"), std::string::npos);
  EXPECT_NE(html.find("measured single-core peak 80.0 GFLOP/s"), std::string::npos);
}

TEST(Report, SaysHowManyTasksTheBudgetReached) {
  auto d = sample();
  d.tasks.push_back(d.tasks.front());
  d.tasks_tuned = 1;
  EXPECT_NE(render_report(d).find("1 of 2 tasks measured"), std::string::npos);
  d.tasks_tuned = 2;
  EXPECT_EQ(render_report(d).find("tasks tuned"), std::string::npos);
}

TEST(Report, ShowsTheGraphRunWithItsTimelineCriticalPathAndMemory) {
  auto d = sample();
  EXPECT_EQ(render_report(d).find("id=\"graph\""), std::string::npos);  // no graph, no section
  GraphView v;
  v.rows = {{"vendor default, serial", 60, 1e6, 0.5}, {"tuned, scheduled, memory planned", 20, 3.2e6, 0.9}};
  v.bars = {{"fc1", "matmul", 0, 10, 0, 32, true}, {"side <op>", "relu", 2, 6, 1, 4, false}};
  v.memory = {{0, 1024}, {10, 0}};
  v.peak_bytes = 1024;
  v.lower_bound_bytes = 1024;
  d.graph = v;
  const std::string html = render_report(d);
  EXPECT_NE(html.find("The graph run on the device"), std::string::npos);
  EXPECT_NE(html.find("tuned, scheduled, memory planned"), std::string::npos);
  EXPECT_NE(html.find("class=\"gantt\""), std::string::npos);
  EXPECT_NE(html.find("side &lt;op&gt;"), std::string::npos);  // node names escaped
  std::size_t outlined = 0;                                    // the critical path, and only it, outlined
  for (auto at = html.find("stroke=\"#d00\""); at != std::string::npos; at = html.find("stroke=\"#d00\"", at + 1))
    ++outlined;
  EXPECT_EQ(outlined, 1u);
  EXPECT_NE(html.find("liveness bound 1.0 KB"), std::string::npos);
}

TEST(Report, ListsTheTransposesEachVariantPaysAndCountsThemEndToEnd) {
  auto d = sample();
  d.variants[1].layout_changes = {
      {"layer1.conv", "layer2.conv", "NHWC", "fractal", "transpose M=196,N=64,inner=16 float16", 2.5}};
  EXPECT_DOUBLE_EQ(d.variants[1].end_to_end_us(), 2 * 20 + 2.5);
  const std::string html = render_report(d);
  EXPECT_NE(html.find("id=\"layout-changes\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"l\">layer1.conv</td><td class=\"l\">layer2.conv</td>"
                      "<td class=\"l\">NHWC &rarr; fractal</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>2.50</td>"), std::string::npos);
  EXPECT_NE(html.find("none: every conv layer in one layout"), std::string::npos);  // variant (a)
}

TEST(Report, CurveIsAStepLineWithTheDefaultAsReference) {
  const std::string svg = svg_curve({40, 30, 30, 20}, 45);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("class=\"reference\""), std::string::npos);
  EXPECT_EQ(svg_curve({}, 1).find("<polyline"), std::string::npos);
}

TEST(Report, ModelTableHasEndToEndAndThroughput) {
  const auto d = sample();
  EXPECT_DOUBLE_EQ(d.variants[0].end_to_end_us(), 60);
  EXPECT_DOUBLE_EQ(d.variants[1].throughput(64), 64 * 1e6 / 40);
  const std::string html = render_report(d);
  EXPECT_NE(html.find("unit &lt;job&gt;"), std::string::npos);  // escaped
  EXPECT_NE(html.find("1.50&times;"), std::string::npos);       // 60 / 40
  EXPECT_NE(html.find("MaxPool"), std::string::npos);
  // Self-contained: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg\" src"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

// Renders the report in headless Chromium and checks the DOM it built: the SVG
// charts are there and have drawn content.
TEST(Report, RendersInHeadlessChromium) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  const fs::path dir = fs::temp_directory_path() / ("atvoss-report-" + std::to_string(::getpid()));
  fs::create_directories(dir / "profile");
  const fs::path page = dir / "report.html";
  write_report(sample(), page.string());
  const std::string dom =
      run("/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
          "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
          (dir / "profile").string() + " --dump-dom file://" + page.string() + " 2>/dev/null");
  fs::remove_all(dir);
  ASSERT_NE(dom.find("atvoss tuning report"), std::string::npos) << dom.substr(0, 500);
  const std::regex curve(R"re(<svg class="curve"[^>]*>[\s\S]*?<polyline[^>]*points="([^"]+)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, curve));
  EXPECT_GT(m[1].str().size(), 10u);
  EXPECT_NE(dom.find("<svg class=\"bars\""), std::string::npos);
  EXPECT_NE(dom.find("<rect"), std::string::npos);
  EXPECT_NE(dom.find("<svg class=\"profile\""), std::string::npos);
}

}  // namespace
}  // namespace atvoss::report
