// record_host_spaces: records host-backend landscapes of real CPU kernels as recorded spaces,
// so that search strategies can be compared on real noise without compiling thousands of
// kernels per comparison (bench_host_quality reads them; docs/host-backend.md, "Tuning
// quality on real noise").
//
// For each workload of bench/host_spaces.hpp: every valid point of its host space is listed,
// shuffled with --seed, and the first --points of that order (all of them if the space is
// smaller) are measured through the host backend: compiled, checked against the reference,
// timed (median of the repeats, re-measured while the variation is high). Each result is one
// row of <out>/<name>.csv in the recorded-space CSV format (core/recorded_space.hpp): the
// knob columns, time_us, status. Rows are appended and flushed after every batch, and a
// rerun skips the configurations the file already holds, so an interrupted recording resumes
// where it stopped (same --seed, same order). An infrastructure error is not a result: the
// row is left out and measured again on the next run.
//
// Usage: record_host_spaces [--out data/host-spaces] [--points 120] [--seed 1] [--batch 8]
//        [--workloads substring] [--set dev|heldout] [--repeat 5] [--seconds 0]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "backend/backend.hpp"
#include "bench/host_spaces.hpp"
#include "core/json.hpp"
#include "core/recorded_space.hpp"
#include "host/machine.hpp"
#include "tools/cli_common.hpp"

namespace atvoss::bench {
namespace {

struct Config {
  std::string out = std::string(ATVOSS_DATA_DIR) + "/host-spaces";
  int points = 120;
  std::uint64_t seed = 1;
  int batch = 8;
  std::string workloads;
  std::string set = "dev";  // bench/host_spaces.hpp: dev or heldout
  int repeat = 5;
  double seconds = 0;  // stop after this much wall time (0: no limit); the rest resumes later
};

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string header_of(const ScheduleSpace& space) {
  std::string h;
  for (const auto& k : space.knobs()) h += k.name + ",";
  return h + "time_us,status";
}

// Keys of the configurations already in the file (empty if there is none). A file whose
// header does not match the space is refused rather than mixed.
std::set<std::string> already_recorded(const std::string& path, const std::string& header) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  std::string first;
  std::getline(std::istringstream(text.str()) >> std::ws, first);
  if (first != header) throw_bad_input(path + ": header '" + first + "' is not this space's '" + header + "'");
  std::set<std::string> keys;
  for (const auto& s : RecordedSpace::parse(text.str(), path)->configurations()) keys.insert(s.key());
  return keys;
}

std::string row_of(const ScheduleSpace& space, const Schedule& s, const Measurement& m) {
  std::ostringstream row;
  row.precision(6);
  for (const auto& k : space.knobs()) row << s.at(k.name) << ',';
  if (m.ok()) row << m.time_us;
  row << ',' << to_string(m.status);
  return row.str();
}

// Returns false once the --seconds budget is spent.
bool record_one(const std::string& name, const std::string& json, const Config& cfg, const Target& target,
                Clock::time_point start) {
  const Workload w = Workload::from_json(parse_json(json, name));
  const auto& backend = backend::backend_for(w, target);
  const ScheduleSpace space = backend.space(w, target);
  std::vector<Schedule> valid;
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    Schedule s = space.schedule_at(space.point_at(i));
    if (space.check(s).ok) valid.push_back(std::move(s));
  }
  const std::size_t valid_points = valid.size();
  std::mt19937_64 rng(cfg.seed);
  std::shuffle(valid.begin(), valid.end(), rng);
  valid.resize(std::min<std::size_t>(valid.size(), static_cast<std::size_t>(cfg.points)));

  const std::string path = host_space_path(cfg.out, name);
  const std::string header = header_of(space);
  const auto done = already_recorded(path, header);
  std::vector<Schedule> todo;
  for (const auto& s : valid) {
    if (!done.count(s.key())) todo.push_back(s);
  }
  std::fprintf(stderr, "# %s: %llu points, %zu valid, %zu in the sample, %zu recorded, %zu to measure\n", name.c_str(),
               static_cast<unsigned long long>(space.size()), valid_points, valid.size(), done.size(), todo.size());
  std::filesystem::create_directories(cfg.out);
  std::ofstream out(path, std::ios::app);
  if (!out) throw Error(ErrorKind::io, "cannot write '" + path + "'");
  if (done.empty()) out << header << '\n' << std::flush;

  std::vector<double> cvs;
  double compile_s = 0;
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < todo.size(); i += static_cast<std::size_t>(cfg.batch)) {
    if (cfg.seconds > 0 && since(start) > cfg.seconds) return false;
    std::vector<backend::MeasureRequest> batch;
    for (std::size_t j = i; j < std::min(todo.size(), i + static_cast<std::size_t>(cfg.batch)); ++j) {
      batch.push_back({w, target, todo[j], cfg.repeat, cfg.seed + j});
    }
    const auto ms = backend.measure(batch, {});
    for (std::size_t j = 0; j < ms.size(); ++j) {
      const auto& m = ms[j];
      compile_s += m.profile.compile_us * 1e-6;
      if (is_infrastructure_error(m.status)) {
        std::fprintf(stderr, "#   left out (measured again next run): %s\n", m.message.c_str());
        continue;
      }
      if (m.ok()) cvs.push_back(m.profile.time_cv);
      out << row_of(space, batch[j].schedule, m) << '\n';
      std::printf("%s,%s,cv=%.3f\n", name.c_str(), row_of(space, batch[j].schedule, m).c_str(), m.profile.time_cv);
    }
    out.flush();
    std::fflush(stdout);
    const double done_n = static_cast<double>(std::min(todo.size(), i + batch.size()));
    std::fprintf(stderr, "#   %s: %.0f/%zu in %.0f s (%.1f s per point)\n", name.c_str(), done_n, todo.size(),
                 since(t0), since(t0) / done_n);
  }
  std::sort(cvs.begin(), cvs.end());
  if (!cvs.empty()) {
    std::fprintf(stderr, "# %s: %zu ok this run, CV median %.3f, 90th percentile %.3f, max %.3f; compile %.0f s\n",
                 name.c_str(), cvs.size(), cvs[cvs.size() / 2], cvs[cvs.size() * 9 / 10], cvs.back(), compile_s);
  }
  return true;
}

int run(const Config& cfg) {
  const Target& target = host::describe_machine();
  const auto& m = host::this_machine();
  std::fprintf(stderr, "# machine %s: %s, fingerprint %s, %d physical cores\n", target.name.c_str(), m.model.c_str(),
               m.fingerprint().c_str(), m.physical_cores);
  const auto start = Clock::now();
  for (const auto& [name, json] : host_workload_set(cfg.set)) {
    if (!cfg.workloads.empty() && name.find(cfg.workloads) == std::string::npos) continue;
    if (!record_one(name, json, cfg, target, start)) {
      std::fprintf(stderr, "# --seconds spent; rerun to resume\n");
      break;
    }
  }
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  // Single-thread landscapes, as the other host benches and the recordings in data/ (made
  // before the threads knob existed): the knob then holds only 1.
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);
  atvoss::bench::Config cfg;
  CLI::App app{"record host-backend landscapes (real CPU kernels) as recorded spaces"};
  app.add_option("--out", cfg.out, "directory of the <workload>.csv recordings");
  app.add_option("--points", cfg.points, "valid points sampled per workload (all if fewer)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", cfg.seed, "seed of the sample's order and the kernels' inputs");
  app.add_option("--batch", cfg.batch, "schedules compiled together")->check(CLI::Range(1, 256));
  app.add_option("--workloads", cfg.workloads, "only workloads whose name contains this");
  app.add_option("--set", cfg.set, "workload set of bench/host_spaces.hpp")->check(CLI::IsMember({"dev", "heldout"}));
  app.add_option("--repeat", cfg.repeat, "timed repeats per kernel")->check(CLI::Range(3, 100));
  app.add_option("--seconds", cfg.seconds, "stop after this much wall time; a rerun resumes");
  return atvoss::tools::run_cli(app, argc, argv, [&] { return atvoss::bench::run(cfg); });
}
