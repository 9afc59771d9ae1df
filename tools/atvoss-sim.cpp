// atvoss-sim: the simulator as a command-line oracle (simulator/simulator.hpp).
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
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>
#include <unordered_set>

#include "core/error.hpp"
#include "backend/backend.hpp"
#include "backend/targets.hpp"
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
  return backend::measure_one(backend::MeasureRequest{w, t, s, in.repeat, in.seed},
                              backend::MeasureOptions{in.noise});
}

void add_common(CLI::App* cmd, Inputs& in) {
  cmd->add_option("--target,-t", in.target, "preset name, target JSON file, or inline JSON")
      ->capture_default_str();
  cmd->add_option("--workload,-w", in.workload, "workload: inline JSON or a JSON file")->required();
}

void add_measure_options(CLI::App* cmd, Inputs& in) {
  cmd->add_option("--noise", in.noise, "sigma of the multiplicative jitter; 0 = exact")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat", in.repeat, "measurements per schedule (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", in.seed, "noise seed")->capture_default_str();
}

Workload load_workload(const std::string& arg) {
  return Workload::from_json(json_from_arg(arg, "workload"));
}

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
    std::cout << out.dump() << '\n';
    if (std::cin.rdbuf()->in_avail() <= 0) std::cout.flush();
  }
  std::cout.flush();
  if (bad) std::cerr << "error: some input lines were bad (see their error results)\n";
  return bad ? 2 : 0;
}

// Flat indices of the points to sweep: all of them in order, or a seeded
// random order to sample from (a shuffle when the space is small enough,
// distinct random draws otherwise).
std::vector<std::uint64_t> sweep_order(const ScheduleSpace& space, const Inputs& in) {
  constexpr std::uint64_t kMaxEnumerated = 4'000'000;
  if (in.limit == 0 && space.size() > 50 * kMaxEnumerated) {
    throw_bad_input("sweep: the space has " + std::to_string(space.size()) +
                    " points; give --limit N to sample");
  }
  std::vector<std::uint64_t> idx;
  if (in.limit == 0 || space.size() <= kMaxEnumerated) {
    idx.resize(space.size());
    std::iota(idx.begin(), idx.end(), 0);
    if (in.limit > 0) {
      std::mt19937_64 rng(in.seed);
      for (std::size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
    }
    return idx;
  }
  std::mt19937_64 rng(in.seed);
  std::unordered_set<std::uint64_t> seen;
  while (idx.size() < 50 * in.limit && seen.size() < space.size()) {
    const std::uint64_t i = rng() % space.size();
    if (seen.insert(i).second) idx.push_back(i);
  }
  return idx;
}

int cmd_sweep(const Inputs& in) {
  const Target t = load_target(in.target);
  const Workload w = load_workload(in.workload);
  const ScheduleSpace space = space_for(w, t);
  std::ofstream file;
  if (!in.csv.empty()) {
    file.open(in.csv);
    if (!file) throw Error(ErrorKind::io, "sweep: cannot write '" + in.csv + "'");
  }
  std::ostream& out = in.csv.empty() ? std::cout : file;
  out << std::setprecision(10);  // ground-truth tables need more than the default 6 digits
  for (const auto& k : space.knobs()) out << k.name << ',';
  out << "time_us,status\n";
  const auto order = sweep_order(space, in);
  const std::uint64_t want = in.limit > 0 ? in.limit : order.size();
  std::uint64_t done = 0, last_report = 0;
  double best = 0;
  Schedule best_schedule;
  for (std::uint64_t i : order) {
    if (done >= want) break;
    const Schedule s = space.schedule_at(space.point_at(i));
    if (!space.check(s).ok) continue;
    const Measurement m = measure(t, w, s, in);
    for (const auto& k : space.knobs()) out << s.at(k.name) << ',';
    out << m.time_us << ',' << to_string(m.status) << '\n';
    if (m.ok() && (best == 0 || m.time_us < best)) {
      best = m.time_us;
      best_schedule = s;
    }
    ++done;
    if (done - last_report >= std::max<std::uint64_t>(1000, want / 20)) {
      std::cerr << "sweep: " << done << " valid points measured"
                << (in.limit > 0 ? " of " + std::to_string(want) : std::string())
                << ", best so far " << best << " us\n";
      last_report = done;
    }
  }
  out.flush();
  if (!out) throw Error(ErrorKind::io, "sweep: write failed");
  std::cerr << "sweep: " << done << " valid points measured";
  if (best > 0) std::cerr << "; best " << best << " us at " << best_schedule.to_json().dump();
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
  sweep->add_option("--limit", in.limit, "seeded sample of N valid points (0 = all)");
  sweep->add_option("--csv", in.csv, "CSV output file (default stdout)");
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    if (*space) return cmd_space(in);
    if (*eval) return cmd_eval(in);
    return cmd_sweep(in);
  });
}
