// The host's reading of a measurement (analysis.hpp).
#include "host/analysis.hpp"

#include <cmath>
#include <string>

#include "host/kernel_timing.hpp"

namespace atvoss::host {
namespace {

// Profile::time_cv where the runner measured it, else the repeats' own.
double repeat_cv(const Measurement& m) {
  if (m.profile.time_cv > 0 || m.repeats.size() < 2) return m.profile.time_cv;
  return coefficient_of_variation(m.repeats);
}

std::string percent(double share) { return std::to_string(int(std::lround(share * 100))) + "%"; }

}  // namespace

Analysis analyze_cpu(const Measurement& m, const Schedule& schedule) {
  const double util = m.profile.cube_utilisation;
  const std::int64_t threads = schedule.get_or("threads", 1);
  const std::string of_peak =
      percent(util) + " of the peak FLOP/s of its " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  Analysis a;
  if (util >= kComputeBound) {
    a.bottleneck = "compute";
    a.hint = of_peak +
             ": the FMA units are the limit; what is left is more threads (knob 'threads'), less work (fuse it with "
             "its neighbours) or a faster machine";
  } else {
    a.bottleneck = "memory";
    a.hint = of_peak +
             ": the FMA units mostly wait on operands; block for the caches (tile_m/tile_n/tile_k so the panels "
             "stay in L1/L2) and widen the register block (micro_m x micro_n) so each load feeds several vector "
             "FMAs; an op with little arithmetic per byte (element-wise, softmax) is bound by memory bandwidth: "
             "fuse it into its producer";
  }
  if (const double cv = repeat_cv(m); cv > kNoisyCv) {
    a.hint += "; its repeats vary by " + percent(cv) +
              " (coefficient of variation): the machine was busy, measure again (more repeats, a quiet machine) "
              "before trusting this time";
  }
  return a;
}

}  // namespace atvoss::host
