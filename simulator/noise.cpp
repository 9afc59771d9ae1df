#include "simulator/internal/noise.hpp"

#include <cmath>
#include <numbers>

#include "core/json.hpp"

namespace atvoss::simulator {
namespace {

constexpr double kOutlierProbability = 0.005;

// Top 53 bits as a double in (0, 1): never 0, so log() below is finite.
double unit(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

}  // namespace

std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double noise_factor(std::uint64_t seed, std::string_view key, int repeat, double sigma) {
  if (sigma <= 0) return 1.0;
  std::uint64_t state = mix64(seed ^ mix64(fnv1a64(key)) ^ mix64(0x5157ULL + repeat));
  const double u1 = unit(state = mix64(state));
  const double u2 = unit(state = mix64(state));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  double factor = std::exp(sigma * z);
  if (unit(state = mix64(state)) < kOutlierProbability) {
    factor *= 1.1 + 0.5 * unit(mix64(state));
  }
  return factor;
}

}  // namespace atvoss::simulator
