#include "db/memory_record_store.hpp"

#include <algorithm>

#include "db/duplicate_rule.hpp"
#include "db/internal/rows.hpp"

namespace atvoss::db {

std::vector<std::int64_t> MemoryRecordStore::insert(std::span<const Record> batch) {
  for (const Record& r : batch) rows::reject_infrastructure(r);
  std::vector<std::int64_t> ids;
  write_together([&] {
    const std::int64_t now = now_ms();
    ids.clear();
    for (const Record& r : batch) {
      put(r, now);
      ids.push_back(ids_.at({r.workload.key(), r.target.key, r.schedule.key()}));
    }
  });
  return ids;
}

void MemoryRecordStore::put(const Record& r, std::int64_t now) {
  const Key key{r.workload.key(), r.target.key, r.schedule.key()};
  const auto it = ids_.find(key);
  if (it == ids_.end()) {
    Record stored = r;
    stored.id = next_id_++;
    if (stored.created_at_ms == 0) stored.created_at_ms = now;
    if (!stored.measurement.ok()) stored.measurement.time_us = 0;
    ids_.emplace(key, stored.id);
    rows_.emplace(stored.id, std::move(stored));
    return;
  }
  Record& held = rows_.at(it->second);
  const DuplicateResolution d = resolve_duplicate(held.measurement, r.measurement);
  if (d.replace) {
    held.measurement = r.measurement;
    held.worker = r.worker;
    held.job = r.job;
    held.tool_version = r.tool_version;
  }
  if (d.outcome == DuplicateOutcome::combined) {
    held.measurement.repeats = d.repeats;
    held.measurement.time_us = d.time_us;
  }
}

void MemoryRecordStore::write_together(const std::function<void()>& body) {
  if (depth_ > 0) {  // joins the outer call's all-or-nothing
    body();
    return;
  }
  // A copy to restore: stores in memory are small (tests, dry runs).
  auto rows = rows_;
  auto ids = ids_;
  const std::int64_t next = next_id_;
  ++depth_;
  try {
    body();
  } catch (...) {
    --depth_;
    rows_ = std::move(rows);
    ids_ = std::move(ids);
    next_id_ = next;
    throw;
  }
  --depth_;
}

std::optional<Record> MemoryRecordStore::find(const std::string& workload_key, const std::string& target_key,
                                              const std::string& schedule_key) const {
  const auto it = ids_.find({workload_key, target_key, schedule_key});
  if (it == ids_.end()) return std::nullopt;
  return rows_.at(it->second);
}

std::vector<Record> MemoryRecordStore::best(const std::string& workload_key, const std::string& target_key,
                                            int k) const {
  std::vector<Record> out;
  if (k <= 0) return out;
  for (const auto& [id, r] : rows_) {
    if (r.measurement.ok() && r.workload.key() == workload_key && r.target.key == target_key) out.push_back(r);
  }
  // Stable: equal times keep id order, as the SQLite store's ORDER BY time_us, id.
  std::stable_sort(out.begin(), out.end(),
                   [](const Record& a, const Record& b) { return a.measurement.time_us < b.measurement.time_us; });
  if (out.size() > static_cast<std::size_t>(k)) out.resize(static_cast<std::size_t>(k));
  return out;
}

std::vector<Record> MemoryRecordStore::history(const std::string& workload_key,
                                               const std::optional<std::string>& target_key) const {
  std::vector<Record> out;
  for (const auto& [id, r] : rows_) {
    if (r.workload.key() == workload_key && (!target_key || r.target.key == *target_key)) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Record& a, const Record& b) { return a.created_at_ms < b.created_at_ms; });
  return out;
}

void MemoryRecordStore::for_each_record(const std::string& target_key,
                                        const std::function<bool(const Record&)>& fn) const {
  for (const auto& [id, r] : rows_) {
    if (r.target.key == target_key && !fn(r)) return;
  }
}

}  // namespace atvoss::db
