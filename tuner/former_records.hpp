// Former records: before a job or a tune measures on a target, it adopts the records stored
// under the target's former keys (backend::former_targets, db/adopt_records.hpp), so that a
// host database from before the fingerprint named the CPU's family and caches resumes where it
// stopped instead of tuning again.
#pragma once

#include <cstdint>
#include <ostream>

#include "core/target.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::tuner {

// Adopts them; says on notes (when given) how many records came from which former target.
// Returns the number adopted.
std::int64_t adopt_former_records(db::TuningDatabase& db, const Target& target, std::ostream* notes);

}  // namespace atvoss::tuner
