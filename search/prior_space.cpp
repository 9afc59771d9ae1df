#include "search/prior_space.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <unordered_map>

namespace atvoss::search {

namespace {

bool varies(const Knob& k) { return k.values.size() > 1; }

const Knob* knob_named(const std::vector<Knob>& knobs, const std::string& name) {
  for (const auto& k : knobs) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

double distance(std::int64_t a, std::int64_t b) {
  if (a > 0 && b > 0) return std::abs(std::log2(double(a)) - std::log2(double(b)));
  return std::abs(double(a) - double(b));
}

// Better result first: a success before a failure, then the shorter time.
bool better(const costmodel::Trial& a, const costmodel::Trial& b) {
  const bool ok_a = a.status == Status::ok, ok_b = b.status == Status::ok;
  if (ok_a != ok_b) return ok_a;
  return ok_a && a.time_us < b.time_us;
}

// Indices of the trials to carry over: the best tenth of the cap, then a seeded sample.
std::vector<std::size_t> chosen_rows(const std::vector<costmodel::Trial>& trials, std::size_t max_rows,
                                     std::mt19937_64& rng) {
  std::vector<std::size_t> order(trials.size());
  std::iota(order.begin(), order.end(), 0);
  if (trials.size() <= max_rows) return order;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return better(trials[a], trials[b]); });
  const std::size_t best = max_rows / 10;
  std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(best), order.end(), rng);
  order.resize(max_rows);
  return order;
}

}  // namespace

PriorSpace prior_space_from_trials(std::string name, std::vector<costmodel::Trial> trials) {
  std::map<std::string, std::set<std::int64_t>> values;
  for (const auto& t : trials) {
    for (const auto& [knob, v] : t.schedule.values()) values[knob].insert(v);
  }
  PriorSpace out{std::move(name), {}, std::move(trials)};
  for (auto& [knob, vs] : values) out.knobs.push_back({knob, std::vector<std::int64_t>(vs.begin(), vs.end())});
  return out;
}

std::size_t shared_varying_knobs(const std::vector<Knob>& from, const std::vector<Knob>& to) {
  std::size_t n = 0;
  for (const auto& k : to) {
    const Knob* f = knob_named(from, k.name);
    n += varies(k) && f && varies(*f);
  }
  return n;
}

bool shares_enough(const std::vector<Knob>& from, const std::vector<Knob>& to) {
  const auto varying = static_cast<std::size_t>(std::count_if(to.begin(), to.end(), varies));
  const std::size_t shared = shared_varying_knobs(from, to);
  return shared >= 2 && 2 * shared >= varying;
}

std::vector<std::size_t> related_tables(const std::vector<PriorSpace>& tables, const std::vector<Knob>& to,
                                        std::size_t max_tables) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (shares_enough(tables[i].knobs, to)) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return shared_varying_knobs(tables[a].knobs, to) > shared_varying_knobs(tables[b].knobs, to);
  });
  if (out.size() > max_tables) out.resize(max_tables);
  std::sort(out.begin(), out.end());  // the order given: a fit's groups keep it
  return out;
}

std::int64_t nearest_value(const std::vector<std::int64_t>& values, std::int64_t v) {
  std::int64_t best = values.front();
  for (auto x : values) {
    if (distance(x, v) < distance(best, v)) best = x;
  }
  return best;
}

std::vector<costmodel::Trial> map_prior(const PriorSpace& from, const ScheduleSpace& to, std::uint64_t seed,
                                        std::size_t max_rows) {
  if (!shares_enough(from.knobs, to.knobs())) return {};
  std::mt19937_64 rng(seed);
  std::vector<costmodel::Trial> out;
  std::map<std::map<std::string, std::int64_t>, std::size_t> index;  // schedule -> row of out
  for (std::size_t i : chosen_rows(from.trials, max_rows, rng)) {
    const auto& t = from.trials[i];
    Schedule s;
    for (const auto& k : to.knobs()) {
      const bool known = t.schedule.has(k.name);
      s.set(k.name, known ? nearest_value(k.values, t.schedule.at(k.name)) : k.values[rng() % k.values.size()]);
    }
    const auto [it, fresh] = index.emplace(s.values(), out.size());
    if (fresh) {
      out.push_back({std::move(s), t.status, t.time_us});
    } else if (better(t, out[it->second])) {
      out[it->second].status = t.status;
      out[it->second].time_us = t.time_us;
    }
  }
  return out;
}

}  // namespace atvoss::search
