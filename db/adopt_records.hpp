// Adopting records: a target whose key changed (a host CPU's fingerprint that learned to name
// its family and caches) takes over the records stored under its former key, so that a
// database from before the change answers the same queries. Backend::former_targets says which
// keys are a target's former ones; only the backend knows.
#pragma once

#include <cstdint>
#include <string>

#include "db/record.hpp"
#include "db/record_store.hpp"

namespace atvoss::db {

// Copies every record of the target keyed from_key to `to` (its workload, schedule,
// measurement, worker, job and time kept), in one write. Records `to` already holds for the
// same schedule are kept as they are; the originals stay under from_key, so nothing is lost
// and a second call copies nothing. Returns the number of records copied.
std::int64_t adopt_records(RecordStore& store, const std::string& from_key, const TargetInfo& to);

}  // namespace atvoss::db
