// atvoss-plan: a model's training step over many devices (report/parallel_report.hpp,
// docs/distributed.md), and the time of one collective on a topology.
//
//   atvoss-plan --model M [--target T] [--topology TOPO] [--devices N] [--trials K] [--seed S]
//               [--bucket-mib B] [--json] [--plan-out plan.json] [--html report.html]
//       the scaling table of data parallelism, the plan searched over tensor, pipeline and
//       data parallelism against pure data parallelism, and the chosen plan (--plan-out
//       writes it as JSON; --html writes the tables and the per-device timeline).
//   atvoss-plan --collective C --bytes B [--topology TOPO] [--devices N] [--algorithm A] [--json]
//       one collective (all_reduce, all_gather, reduce_scatter, broadcast, send_recv) among
//       devices 0..N-1: its time, the algorithm (fastest when not given) and its bound.
// M: zoo name or .onnx file; T: a preset, a target file or inline JSON; TOPO: a topology
// preset (ascend910b-server8, ascend910-server8, ring8, each with -x<servers>), a file or
// inline JSON. Exit codes: 0 ok, 2 bad input, 1 any other failure (tools/cli_common.hpp).
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "distributed/collectives.hpp"
#include "distributed/topology.hpp"
#include "report/parallel_report.hpp"
#include "tools/cli_common.hpp"

namespace {

using namespace atvoss;

int run_collective(const std::string& topology, const std::string& collective, std::int64_t bytes, int devices,
                   const std::string& algorithm, bool json) {
  const distributed::Topology t = distributed::load_topology(topology);
  if (devices < 1 || devices > t.devices()) {
    throw_bad_input("--devices must be in 1.." + std::to_string(t.devices()) + " (the devices of '" + t.name + "')");
  }
  const auto c = distributed::parse_collective(collective);
  const auto group =
      c == distributed::Collective::send_recv ? std::vector<int>{0, devices - 1} : distributed::first_devices(devices);
  const auto r = algorithm.empty()
                     ? distributed::best_collective(t, c, group, bytes)
                     : distributed::time_collective(t, c, distributed::parse_algorithm(algorithm), group, bytes);
  if (json) {
    std::cout << Json{{"collective", collective},
                      {"bytes", bytes},
                      {"devices", devices},
                      {"algorithm", distributed::to_string(r.algorithm)},
                      {"us", r.us},
                      {"lower_bound_us", r.lower_bound_us},
                      {"steps", r.steps},
                      {"chunks", r.chunks}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << collective << " of " << bytes << " bytes among " << devices << " devices of " << t.name << ": " << r.us
              << " us by " << distributed::to_string(r.algorithm) << " (" << r.steps
              << " steps); bandwidth lower bound " << r.lower_bound_us << " us\n";
  }
  return 0;
}

int run_plan(const report::ParallelReportOptions& o, bool json, const std::string& plan_out, const std::string& html) {
  const report::ParallelReport r = report::parallel_report(o);
  if (!plan_out.empty()) {
    write_file_atomically(plan_out, "--plan-out", [&](std::ostream& os) { os << r.summary["plan"].dump(2) << "\n"; });
  }
  if (!html.empty()) {
    write_file_atomically(html, "--html", [&](std::ostream& os) { os << report::render_parallel_html(r); });
  }
  std::cout << (json ? r.summary.dump(2) + "\n" : report::format_parallel_report(r.summary));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-plan: a training step over many devices, and collectives on a topology"};
  report::ParallelReportOptions o;
  std::string collective, algorithm, plan_out, html;
  std::int64_t bytes = 0, bucket_mib = 25;
  bool json = false;
  auto* m = app.add_option("--model,-m", o.model, "zoo model or .onnx file (its training step)");
  app.add_option("--target,-t", o.target, "preset name, target JSON file, or inline JSON")->capture_default_str();
  app.add_option("--topology", o.topology, "topology preset, file or inline JSON")->capture_default_str();
  app.add_option("--devices,-n", o.devices, "devices of the plan, or of the collective's group")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--trials", o.trials, "plans simulated by the search")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--seed", o.seed, "the search's seed")->capture_default_str()->check(tools::non_negative(o.seed));
  app.add_option("--strategy", o.strategy, "search strategy")->capture_default_str();
  app.add_option("--bucket-mib", bucket_mib, "gradient bucket of the scaling table, MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--plan-out", plan_out, "write the chosen plan as JSON")->needs(m);
  app.add_option("--html", html, "write the tables and the per-device timeline as HTML")->needs(m);
  auto* c = app.add_option("--collective", collective, "time one collective instead")->excludes(m);
  auto* b = app.add_option("--bytes", bytes, "the collective's buffer, bytes")
                ->check(CLI::Range(std::int64_t(0), std::int64_t(1) << 50));
  app.add_option("--algorithm", algorithm, "ring, tree, mesh or hierarchical (default: the fastest)")->needs(c);
  c->needs(b);
  app.add_flag("--json", json, "print JSON");
  return tools::run_cli(app, argc, argv, [&] {
    if (!collective.empty()) return run_collective(o.topology, collective, bytes, o.devices, algorithm, json);
    if (o.model.empty()) throw_bad_input("give --model (a training step to plan) or --collective");
    o.bucket_bytes = bucket_mib << 20;
    return run_plan(o, json, plan_out, html);
  });
}
