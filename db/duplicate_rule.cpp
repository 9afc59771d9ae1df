#include "db/duplicate_rule.hpp"

#include <algorithm>

namespace atvoss::db {
namespace {

// True if every value of part occurs in whole at least as often (multiset inclusion), so
// that merging the same file twice does not append its repeats twice.
bool contains_all(std::vector<double> whole, std::vector<double> part) {
  std::sort(whole.begin(), whole.end());
  std::sort(part.begin(), part.end());
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

}  // namespace

DuplicateResolution resolve_duplicate(const Measurement& stored, const Measurement& incoming) {
  DuplicateResolution r;
  if (stored.status != incoming.status) {
    // A success proves the schedule runs; a failure beside it was likely transient.
    r.outcome = DuplicateOutcome::conflict;
    r.replace = incoming.ok();
    return r;
  }
  if (contains_all(stored.repeats, incoming.repeats)) return r;
  r.outcome = DuplicateOutcome::combined;
  r.repeats = stored.repeats;
  r.repeats.insert(r.repeats.end(), incoming.repeats.begin(), incoming.repeats.end());
  const double time = incoming.ok() ? median(r.repeats) : 0.0;
  r.time_us = time > 0 || !incoming.ok() ? time : stored.time_us;
  return r;
}

}  // namespace atvoss::db
