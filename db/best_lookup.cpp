#include "db/best_lookup.hpp"

#include <utility>
#include <vector>

#include "core/error.hpp"
#include "db/table/schedule_table.hpp"

namespace atvoss::db {

TargetInfo resolve_stored_target(const TuningDatabase& db, const std::string& name_or_key) {
  if (auto by_key = db.target(name_or_key)) return *by_key;
  const auto named = db.targets_named(name_or_key);
  if (named.size() == 1) return named.front();
  if (named.empty()) {
    throw Error(ErrorKind::not_found, "target '" + name_or_key + "' has no records in " + db.path());
  }
  std::string keys;
  for (const auto& t : named) keys += " " + t.key;
  throw_bad_input("target '" + name_or_key + "' names several targets in " + db.path() + "; pass a key:" + keys);
}

Json BestAnswer::to_json() const {
  return Json{
      {"match", match},     {"distance", distance},  {"workload", workload.to_json()}, {"schedule", schedule.to_json()},
      {"time_us", time_us}, {"target", target.name}, {"target_key", target.key}};
}

BestAnswer best_or_nearest(const TuningDatabase& db, const TargetInfo& target, const Workload& workload) {
  const auto exact = db.records().best(workload.key(), target.key, 1);
  if (!exact.empty()) {
    const Record& r = exact.front();
    return BestAnswer{"exact", 0.0, r.workload, r.schedule, r.measurement.time_us, target};
  }
  std::vector<table::TableEntry> entries;
  for (BestEntry& e : db.records().best_per_workload(target.key)) {
    entries.push_back(table::TableEntry{std::move(e.workload), std::move(e.schedule), e.time_us});
  }
  table::TableHeader header;
  header.target_key = target.key;
  header.target_name = target.name;
  const table::ScheduleTable nearest(header, std::move(entries));
  const table::LookupResult found = nearest.lookup(workload);
  if (found.kind == table::MatchKind::none || found.entry == nullptr) {
    throw Error(ErrorKind::not_found, "no valid record for " + workload.label() + " on " + target.name +
                                          " or any workload of the same op, dtype and epilogue");
  }
  return BestAnswer{"nearest", found.distance, found.entry->workload, found.entry->schedule, found.entry->time_us,
                    target};
}

}  // namespace atvoss::db
