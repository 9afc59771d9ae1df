// Measure: the host backend's measurement of a batch — validate each schedule against the
// host space, generate its source (never taken from a peer: a schedule is data), build all of
// them in parallel (builder.hpp), then run them one after another in the isolated runner
// (runner.hpp), each pinned to a core leased from kernel_cores() (core_pool.hpp), so at most
// one timed kernel occupies a physical core at a time, however many batches run at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/measurement.hpp"
#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/builder.hpp"
#include "host/machine.hpp"
#include "host/runner.hpp"

namespace atvoss::host {

struct HostConfig {
  BuildOptions build;
  RunOptions run;
  double peak_gflops = 0;  // single-core peak; >0 fills Profile::cube_utilisation
};

struct Candidate {
  Workload workload;
  Schedule schedule;
  std::uint64_t seed = 0;
  int repeat = 5;
};

std::vector<Measurement> measure_candidates(const std::vector<Candidate>& batch, const MachineInfo& m,
                                            const HostConfig& config);

// The same build-and-run path for given sources (tests inject faulty kernels through it).
struct SourceJob {
  Workload workload;
  std::string source;
  std::uint64_t seed = 0;
  int repeat = 5;
  int threads = 1;  // the kernel's: the peak its utilisation is a fraction of
};
std::vector<Measurement> measure_sources(const std::vector<SourceJob>& jobs, const HostConfig& config);

}  // namespace atvoss::host
