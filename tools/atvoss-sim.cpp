// atvoss-sim: the measuring backends as a command-line oracle (backend/backend.hpp: the
// NPU simulator for NPU targets, the table for recorded workloads).
//
//   atvoss-sim space --target T --workload W [--json]
//       knobs and their values, the space size and the number of valid points.
//   atvoss-sim eval --target T --workload W [--noise S] [--repeat R] [--seed N]
//       reads schedules as JSON lines on stdin ({"tile_m":64,...}) and writes one
//       measurement per line on stdout (core/measurement.hpp JSON), in order.
//       A bad line (malformed JSON, missing/extra knob, value outside the space)
//       gets {"status":"error","message":"line N: ..."} in its place and the run
//       goes on, so a driving optimiser never loses its place; the exit code is
//       then 2. A schedule that is in the space but does not fit on chip is a
//       normal "invalid" measurement with the reason (exit 0).
//       Output is flushed whenever stdin has nothing more buffered, so an
//       optimiser can drive it one line at a time.
//   atvoss-sim sweep --target T --workload W [--limit N] [--csv FILE] [--seed N] [--noise S]
//       every valid point (or a seeded sample of N valid points) as CSV: one
//       column per knob, then time_us and status; progress and the best point on stderr.
// W: inline JSON or a file; T: a preset name, a file, or inline JSON (a preset plus overrides).
// Exit codes: 0 ok, 2 bad input, 1 any other failure (tools/cli_common.hpp).
#include <algorithm>
#include <fstream>
#include <iostream>

#include "backend/backend.hpp"
#include "backend/sweep.hpp"
#include "backend/targets.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "tools/cli_common.hpp"

namespace {

using namespace atvoss;
using backend::load_target;
using backend::space_for;

struct Inputs {
  std::string target = "ascend910b";
  std::string workload;
  double noise = 0.02;
  int repeat = 1;
  std::uint64_t seed = 0;
  std::uint64_t limit = 0;
  std::string csv;
  bool json = false;
};

// One measurement on the backend that serves w on t (the simulator for NPU targets).
Measurement measure(const Target& t, const Workload& w, const Schedule& s, const Inputs& in) {
  return backend::measure_one(backend::MeasureRequest{w, t, s, in.repeat, in.seed}, backend::MeasureOptions{in.noise});
}

void add_common(CLI::App* cmd, Inputs& in) {
  cmd->add_option("--target,-t", in.target, "preset name, target JSON file, or inline JSON")->capture_default_str();
  cmd->add_option("--workload,-w", in.workload, "workload: inline JSON or a JSON file")->required();
}

void add_measure_options(CLI::App* cmd, Inputs& in) {
  cmd->add_option("--noise", in.noise, "sigma of the multiplicative jitter; 0 = exact")
      ->capture_default_str()
      ->check(tools::real_range(0.0, 1.0));
  cmd->add_option("--repeat", in.repeat, "measurements per schedule (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", in.seed, "noise seed")->capture_default_str()->check(tools::non_negative(in.seed));
}

Workload load_workload(const std::string& arg) { return Workload::from_json(json_from_arg(arg, "workload")); }

int cmd_space(const Inputs& in) {
  const Target t = load_target(in.target);
  const Workload w = load_workload(in.workload);
  const ScheduleSpace space = space_for(w, t);
  std::uint64_t valid = 0;
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    if (space.check(space.schedule_at(space.point_at(i))).ok) ++valid;
  }
  if (in.json) {
    Json j = space.describe();
    j["valid"] = valid;
    j["workload"] = w.to_json();
    j["target"] = t.name;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "workload: " << w.label() << "\ntarget:   " << t.name << "\n";
  for (const auto& k : space.knobs()) {
    std::cout << "  " << k.name << ":";
    for (auto v : k.values) std::cout << " " << v;
    std::cout << "\n";
  }
  std::cout << "points: " << space.size() << "\nvalid:  " << valid << "\n";
  return 0;
}

Json error_line(std::size_t line, const std::string& what) {
  return Json{{"status", "error"}, {"message", "line " + std::to_string(line) + ": " + what}};
}

int cmd_eval(const Inputs& in) {
  const Target t = load_target(in.target);
  const Workload w = load_workload(in.workload);
  const ScheduleSpace space = space_for(w, t);
  std::ios::sync_with_stdio(false);
  std::string text;
  std::size_t line = 0;
  bool bad = false;
  while (std::getline(std::cin, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json out;
    try {
      const Schedule s = space.parse(parse_json(text, "schedule"));
      out = measure(t, w, s, in).to_json();
    } catch (const Error& e) {
      if (!e.is_bad_input()) throw;
      out = error_line(line, e.what());
      bad = true;
    }
    // An error message quotes the line, which may not be UTF-8: replace such bytes (U+FFFD)
    // rather than let dump() throw and end the run.
    std::cout << out.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
    if (std::cin.rdbuf()->in_avail() <= 0) std::cout.flush();
  }
  std::cout.flush();
  if (bad) std::cerr << "error: some input lines were bad (see their error results)\n";
  return bad ? 2 : 0;
}

int cmd_sweep(const Inputs& in) {
  const Target t = load_target(in.target);
  const Workload w = load_workload(in.workload);
  const backend::SweepOptions options{in.limit, in.seed, in.repeat, backend::MeasureOptions{in.noise}};
  // The CSV goes through write_file_atomically, as every other output: a symlink, a device
  // node or a FIFO at --csv is refused before the sweep runs, and a reader never sees half a
  // file. Without --csv the rows stream to stdout.
  if (!in.csv.empty()) require_replaceable_file(in.csv, "--csv");
  const auto progress = [&](const backend::SweepProgress& p) {
    std::cerr << "sweep: " << p.measured << " valid points measured"
              << (in.limit > 0 ? " of " + std::to_string(p.wanted) : std::string()) << ", best so far " << p.best_us
              << " us\n";
  };
  backend::SweepResult r;
  if (in.csv.empty()) {
    r = backend::sweep(w, t, options, std::cout, progress);
  } else {
    write_file_atomically(in.csv, "--csv",
                          [&](std::ostream& out) { r = backend::sweep(w, t, options, out, progress); });
  }
  std::cerr << "sweep: " << r.measured << " valid points measured";
  if (r.best_us > 0) std::cerr << "; best " << r.best_us << " us at " << r.best_schedule.to_json().dump();
  std::cerr << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-sim: NPU performance simulator (space | eval | sweep)"};
  app.require_subcommand(1);
  Inputs in;
  auto* space = app.add_subcommand("space", "knobs, value lists, space size and valid points");
  add_common(space, in);
  space->add_flag("--json", in.json, "print JSON");
  auto* eval = app.add_subcommand("eval", "measure JSON-line schedules from stdin");
  add_common(eval, in);
  add_measure_options(eval, in);
  auto* sweep = app.add_subcommand("sweep", "measure every valid point (or a sample) to CSV");
  add_common(sweep, in);
  add_measure_options(sweep, in);
  sweep->add_option("--limit", in.limit, "seeded sample of N valid points (0 = all)")
      ->check(tools::non_negative(in.limit));
  sweep->add_option("--csv", in.csv, "CSV output file (default stdout)");
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    if (*space) return cmd_space(in);
    if (*eval) return cmd_eval(in);
    return cmd_sweep(in);
  });
}
