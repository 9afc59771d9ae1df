#include "host/measure.hpp"

#include "host/codegen.hpp"
#include "host/core_pool.hpp"
#include "host/host_space.hpp"
#include "lowering/epilogue.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::host {
namespace {

Measurement run_built(const BuildResult& b, const SourceJob& job, const HostConfig& config) {
  if (b.status != Status::ok) {
    Measurement m = Measurement::failed(b.status, b.message);
    m.profile.compile_us = b.compile_us;
    return m;
  }
  if (cancelled(config.run.cancel)) return Measurement::failed(Status::error, kCancelledMessage);
  RunOptions run = config.run;
  run.timing.seed = job.seed;
  run.timing.repeat = std::max(job.repeat, 3);
  // One timed kernel thread per physical core: concurrent batches (a worker's slots) wait
  // here until as many cores as the kernel has threads are free.
  const CorePool::Lease cores = kernel_cores().acquire(job.threads);
  run.timing.cpus = cores.cpus();
  Measurement m = run_kernel(b.so_path, job.workload, run);
  m.profile.compile_us = b.compile_us;
  if (m.ok()) {
    const double gflops = job.workload.flops() / m.time_us * 1e-3;
    m.profile.compute_us = m.time_us;
    if (config.peak_gflops > 0) m.profile.cube_utilisation = gflops / (config.peak_gflops * job.threads);
  }
  return m;
}

}  // namespace

std::vector<Measurement> measure_sources(const std::vector<SourceJob>& jobs, const HostConfig& config) {
  std::vector<std::string> sources;
  for (const auto& j : jobs) sources.push_back(j.source);
  const std::vector<BuildResult> built = build_all(sources, config.build);
  std::vector<Measurement> out;
  for (std::size_t i = 0; i < jobs.size(); ++i) out.push_back(run_built(built[i], jobs[i], config));
  return out;
}

std::vector<Measurement> measure_candidates(const std::vector<Candidate>& batch, const MachineInfo& m,
                                            const HostConfig& config) {
  std::vector<Measurement> out(batch.size());
  std::vector<SourceJob> jobs;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Candidate& c = batch[i];
    const Verdict v = space_for(c.workload, m).check(c.schedule);
    if (!v.ok) {
      out[i] = Measurement::failed(Status::invalid, v.reason);
      continue;
    }
    jobs.push_back({c.workload, generate_source(c.workload, c.schedule, m), c.seed, c.repeat,
                    int(c.schedule.get_or(std::string(knobs::threads), 1))});
    at.push_back(i);
  }
  const std::vector<Measurement> measured = measure_sources(jobs, config);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    out[at[j]] = measured[j];
    const int level = int(batch[at[j]].schedule.get_or(std::string(knobs::fusion_level), 0));
    out[at[j]].profile.kernels =
        1 + int(lowering::split_epilogue(jobs[j].workload.op(), jobs[j].workload.epilogue(), level).unfused.size());
  }
  return out;
}

}  // namespace atvoss::host
