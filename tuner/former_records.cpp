// Adopting a target's records stored under its former keys (former_records.hpp).
#include "tuner/former_records.hpp"

#include "backend/backend.hpp"
#include "db/adopt_records.hpp"

namespace atvoss::tuner {

std::int64_t adopt_former_records(db::TuningDatabase& db, const Target& target, std::ostream* notes) {
  std::int64_t total = 0;
  const db::TargetInfo to = db::TargetInfo::from_target(target);
  for (const Target& former : backend::former_targets(target)) {
    const std::int64_t n = db::adopt_records(db.records(), former.key(), to);
    if (n > 0 && notes) {
      *notes << "note: adopted " << n << " records stored under " << former.name << ", this machine's former name, as "
             << target.name << "\n";
    }
    total += n;
  }
  return total;
}

}  // namespace atvoss::tuner
