#include "backend/sweep.hpp"

#include <iomanip>
#include <numeric>
#include <random>
#include <unordered_set>

#include "core/error.hpp"

namespace atvoss::backend {

std::vector<std::uint64_t> sweep_order(const ScheduleSpace& space, std::uint64_t limit, std::uint64_t seed) {
  constexpr std::uint64_t kMaxEnumerated = 4'000'000;
  if (limit == 0 && space.size() > 50 * kMaxEnumerated) {
    throw_bad_input("sweep: the space has " + std::to_string(space.size()) + " points; give --limit N to sample");
  }
  std::vector<std::uint64_t> idx;
  if (limit == 0 || space.size() <= kMaxEnumerated) {
    idx.resize(space.size());
    std::iota(idx.begin(), idx.end(), 0);
    if (limit > 0) {
      std::mt19937_64 rng(seed);
      for (std::size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
    }
    return idx;
  }
  // Too many points to shuffle: distinct random draws, enough for invalid ones to be skipped.
  std::mt19937_64 rng(seed);
  std::unordered_set<std::uint64_t> seen;
  while (idx.size() < 50 * limit && seen.size() < space.size()) {
    const std::uint64_t i = rng() % space.size();
    if (seen.insert(i).second) idx.push_back(i);
  }
  return idx;
}

SweepCsv::SweepCsv(std::ostream& out, const ScheduleSpace& space) : out_(out) {
  out_ << std::setprecision(10);  // ground-truth tables need more than the default 6 digits
  for (const auto& k : space.knobs()) {
    knobs_.push_back(k.name);
    out_ << k.name << ',';
  }
  out_ << "time_us,status\n";
}

void SweepCsv::row(const Schedule& s, const Measurement& m) {
  for (const auto& k : knobs_) out_ << s.at(k) << ',';
  out_ << m.time_us << ',' << to_string(m.status) << '\n';
}

SweepResult sweep(const Workload& w, const Target& t, const SweepOptions& options, std::ostream& csv,
                  const std::function<void(const SweepProgress&)>& progress) {
  const Backend& backend = backend_for(w, t);
  const ScheduleSpace space = backend.space(w, t);
  SweepCsv writer(csv, space);
  const auto order = sweep_order(space, options.limit, options.seed);
  const std::uint64_t wanted = options.limit > 0 ? options.limit : order.size();
  const std::uint64_t every = std::max<std::uint64_t>(1000, wanted / 20);
  SweepResult r;
  std::uint64_t last_report = 0;
  for (std::uint64_t i : order) {
    if (r.measured >= wanted) break;
    const Schedule s = space.schedule_at(space.point_at(i));
    if (!space.check(s).ok) continue;
    const MeasureRequest request{w, t, s, options.repeat, options.seed};
    const Measurement m = backend.measure(std::span(&request, 1), options.measure).front();
    writer.row(s, m);
    if (m.ok() && (r.best_us == 0 || m.time_us < r.best_us)) {
      r.best_us = m.time_us;
      r.best_schedule = s;
    }
    ++r.measured;
    if (progress && r.measured - last_report >= every) {
      progress({r.measured, wanted, r.best_us});
      last_report = r.measured;
    }
  }
  csv.flush();
  if (!csv) throw Error(ErrorKind::io, "sweep: write failed");
  return r;
}

}  // namespace atvoss::backend
