// Noise: the measurement jitter the simulator adds so tuners and cost models
// face what real timings look like — a multiplicative log-normal jitter of
// sigma (default 2%) and rare outliers (0.5% of runs, 1.1-1.6x slower, as when
// another process steals the device). Each factor is a pure function of
// (seed, key, repeat index) — the simulator passes workload key + schedule
// key — never of call order or thread, so a
// batch measured by many threads equals the same batch measured by one.
// The mapping from bits to numbers is spelled out (splitmix64, Box-Muller)
// rather than left to std:: distributions, whose output differs between
// standard libraries.
#pragma once

#include <cstdint>
#include <string_view>

namespace atvoss::simulator {

// splitmix64 finaliser: a well-mixed 64-bit hash step.
std::uint64_t mix64(std::uint64_t x) noexcept;

// Multiplicative factor for one repeat; exactly 1 when sigma == 0.
double noise_factor(std::uint64_t seed, std::string_view key, int repeat, double sigma);

}  // namespace atvoss::simulator
