// atvoss-kernel-runner: loads one compiled host kernel, checks it against the reference and
// times it (host/kernel_timing.hpp), printing JSON on stdout. The host backend spawns it so
// that a faulty kernel takes down only this process (host/runner.hpp).
#include <iostream>

#include "core/workload.hpp"
#include "host/kernel_timing.hpp"
#include "tools/cli_common.hpp"

int main(int argc, char** argv) {
  CLI::App app{"atvoss-kernel-runner: check and time one compiled host kernel"};
  std::string so, workload;
  atvoss::host::TimingOptions o;
  app.add_option("--so", so, "compiled kernel (.so)")->required();
  app.add_option("--workload", workload, "workload JSON")->required();
  app.add_option("--seed", o.seed, "input seed")->check(atvoss::tools::non_negative(o.seed));
  app.add_option("--repeat", o.repeat, "timed repeats")->check(CLI::Range(1, 1000));
  app.add_option("--cpu", o.cpu, "core to pin to (-1: last allowed core)");
  app.add_option("--cpus", o.cpus, "the cores leased for this kernel, comma-separated (overrides --cpu)")
      ->delimiter(',')
      ->check(CLI::Range(0, 65535));
  app.add_option("--min-repeat-us", o.min_repeat_us, "minimum length of one timed repeat")
      ->check(atvoss::tools::real_range(1.0, 1e7));
  app.add_flag("--as-in-a-model", o.as_in_a_model,
               "time it as a model runs it: threads awake between calls, output and residual cold");
  return atvoss::tools::run_cli(app, argc, argv, [&] {
    const auto w = atvoss::Workload::from_json(atvoss::parse_json(workload, "--workload"));
    std::cout << atvoss::host::time_kernel(so, w, o).dump() << "\n";
    return 0;
  });
}
