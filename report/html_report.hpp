// Report: the HTML page a tuning job leaves behind. Self-contained — inline CSS
// and SVG, no scripts, fonts or images from anywhere — so it can be mailed or
// archived as one file. It shows, per task, the convergence curve (best so far
// against trials, with the default schedule as a reference line), the winner's
// knobs against the default schedule and both profiles (on a host target also in GFLOP/s
// and as a fraction of the measured peak); and for the model a
// before/after table of end-to-end time and throughput under each schedule
// variant (vendor default, cost-model zero-shot, tuned, tuned with fusion), each
// with its per-op profile. This file only renders; report data is gathered by
// the job runner (model_evaluation.hpp). Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "plan/variant.hpp"
#include "report/fusion_report.hpp"
#include "report/graph_view.hpp"
#include "report/measured_precision.hpp"

namespace atvoss::report {

struct TaskReport {
  std::string name;   // layer name
  std::string label;  // Workload::label()
  double flops = 0;   // Workload::flops(): arithmetic of one run of the main op
  int weight = 1;
  int trials = 0;
  std::vector<double> curve;  // best so far per trial, microseconds (inf before the first ok)
  std::optional<Schedule> default_schedule;
  std::optional<Measurement> default_measurement;
  std::optional<Schedule> best_schedule;
  std::optional<Measurement> best_measurement;
};

using plan::LayoutChangeRow;
using plan::ModelVariant;
using plan::VariantOp;

// The whole model in one precision, at the vendor default schedules.
struct PrecisionRow {
  std::string name;       // "float16", "int8", "this job (mixed)"
  double default_us = 0;  // weighted end-to-end, noise-free
};

struct ReportData {
  std::string job;
  std::string target;
  // > 0 (host targets): the measured single-core fp32 peak the target carries, in GFLOP/s;
  // each task then shows its GFLOP/s and their fraction of this peak (kernels run on one core).
  double peak_gflops = 0;
  std::string model;
  int batch = 1;
  std::string training;  // a training step's update ("sgd", "adam, mixed precision"); empty at inference
  std::string launch;    // who issues the kernels, at what cost each (core/launch_mode.hpp)
  std::string strategy;
  int trials = 0;  // stored trials over all tasks
  int budget = 0;
  int tasks_tuned = -1;  // tasks the budget reached; -1: not given (every task)
  std::vector<TaskReport> tasks;
  std::vector<ModelVariant> variants;
  // Nodes not tuned, by name (frontend/fallback.hpp), with their fallback time.
  struct Fallback {
    std::string name, op, reason;
    int count = 1;
    double time_us = 0;
  };
  std::vector<Fallback> fallbacks;
  FusionReport fusion;                                     // under the chosen schedules (variant (d))
  std::vector<PrecisionRow> precisions;                    // first row: the reference
  std::vector<std::pair<std::string, double>> int8_error;  // task, estimated relative error
  MeasuredPrecisions measured_precision;                   // host targets: int8 and bf16 errors and times, measured
  std::string device_memory;  // frontend::MemoryFit::summary() (frontend/device_memory.hpp); empty: not shown
  bool fits_device = true;
  std::optional<GraphView> graph;  // the model's graph run (graph_run.hpp); nullopt: no graph
  std::string parallel_html;       // the job's many-device section (parallel_report.hpp); empty: none
};

std::string render_report(const ReportData& data);
// Writes atomically (temporary file + rename). io error if it cannot.
void write_report(const ReportData& data, const std::string& path);

// Inline SVG line chart of a best-so-far curve; reference (if finite) is drawn as
// a dashed horizontal line. Exposed for tests.
std::string svg_curve(const std::vector<double>& curve, double reference);

}  // namespace atvoss::report
