// Duplicate rule: what a store does when a record arrives for a (workload, target,
// schedule) key it already holds: the MergeReport rules of tuning_database.hpp, in one
// place for the SQLite and the in-memory record stores. Pure functions.
#pragma once

#include <vector>

#include "core/measurement.hpp"

namespace atvoss::db {

enum class DuplicateOutcome { added, identical, combined, conflict };

struct DuplicateResolution {
  DuplicateOutcome outcome = DuplicateOutcome::identical;
  // conflict: the incoming result replaces the stored one (a success beside a failure).
  bool replace = false;
  // combined: the repeats and the time to store.
  std::vector<double> repeats;
  double time_us = 0;
};

// Only the stored status, time and repeats are read.
DuplicateResolution resolve_duplicate(const Measurement& stored, const Measurement& incoming);

}  // namespace atvoss::db
