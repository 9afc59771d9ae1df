#include "db/sqlite_record_store.hpp"

#include "db/internal/rows.hpp"
#include "db/internal/sqlite.hpp"

namespace atvoss::db {

using rows::kBestTail;
using rows::parse_schedule;
using rows::record_sql;
using rows::RowDecoder;
using rows::Writer;

std::vector<std::int64_t> SqliteRecordStore::insert(std::span<const Record> batch) {
  for (const Record& r : batch) rows::reject_infrastructure(r);  // before taking the write lock
  return conn_.write([&] {
    Writer w(conn_);
    const std::int64_t now = now_ms();
    std::vector<std::int64_t> ids;
    ids.reserve(batch.size());
    for (const Record& r : batch) ids.push_back(w.put(r, now).first);
    return ids;
  });
}

void SqliteRecordStore::write_together(const std::function<void()>& body) { conn_.write(body); }

std::optional<Record> SqliteRecordStore::find(const std::string& workload_key,
                                           const std::string& target_key,
                                           const std::string& schedule_key) const {
  return conn_.read([&]() -> std::optional<Record> {
    auto s = conn_.prepare(record_sql("WHERE w.key = ?1 AND t.key = ?2 AND r.schedule_key = ?3"));
    s->bind(1, workload_key).bind(2, target_key).bind(3, schedule_key);
    if (!s->step()) return std::nullopt;
    return RowDecoder(cache_).decode(*s);
  });
}

bool SqliteRecordStore::contains(const std::string& workload_key, const std::string& target_key,
                              const std::string& schedule_key) const {
  return conn_.read([&] {
    auto s = conn_.prepare(
        "SELECT 1 FROM records r JOIN workloads w ON w.id = r.workload_id "
        "JOIN targets t ON t.id = r.target_id "
        "WHERE w.key = ?1 AND t.key = ?2 AND r.schedule_key = ?3");
    s->bind(1, workload_key).bind(2, target_key).bind(3, schedule_key);
    return s->step();
  });
}

std::vector<Record> SqliteRecordStore::best(const std::string& workload_key,
                                         const std::string& target_key, int k) const {
  if (k <= 0) return {};
  return conn_.read([&] {
    auto s = conn_.prepare(record_sql(kBestTail));
    s->bind(1, workload_key).bind(2, target_key).bind(3, k);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<BestEntry> SqliteRecordStore::best_schedules(const std::string& workload_key,
                                                     const std::string& target_key, int k) const {
  if (k <= 0) return {};
  return conn_.read([&] {
    auto s = conn_.prepare(
        "SELECT r.workload_id, w.description, r.schedule, r.time_us, r.id "
        "FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id " +
        std::string(kBestTail));
    s->bind(1, workload_key).bind(2, target_key).bind(3, k);
    RowDecoder dec(cache_);
    std::vector<BestEntry> out;
    while (s->step()) {
      out.push_back(BestEntry{dec.workload(s->column_int64(0), *s, 1),
                              parse_schedule(s->column_text(2)),
                              s->column_double(3), s->column_int64(4)});
    }
    return out;
  });
}

std::string SqliteRecordStore::explain_best_plan() const {
  return conn_.read([&] {
    auto s = conn_.prepare("EXPLAIN QUERY PLAN " + record_sql(kBestTail));
    std::string plan;
    while (s->step()) plan += s->column_text(3) + "\n";
    return plan;
  });
}

std::vector<Record> SqliteRecordStore::history(const std::string& workload_key,
                                            const std::optional<std::string>& target_key) const {
  return conn_.read([&] {
    auto s = conn_.prepare(record_sql("WHERE w.key = ?1 AND (?2 IS NULL OR t.key = ?2) "
                                "ORDER BY r.created_at, r.id"));
    s->bind(1, workload_key);
    if (target_key) s->bind(2, *target_key);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

void SqliteRecordStore::for_each_record(const std::string& target_key,
                                     const std::function<bool(const Record&)>& fn) const {
  // Pages by id rather than holding one statement open across fn, so fn may read this
  // database, and a retry after a busy error resumes where it stopped.
  std::int64_t after = 0;
  for (;;) {
    const auto page = conn_.read([&] {
      auto s = conn_.prepare(record_sql("WHERE t.key = ?1 AND r.id > ?2 ORDER BY r.id LIMIT 1024"));
      s->bind(1, target_key).bind(2, after);
      RowDecoder dec(cache_);
      std::vector<Record> out;
      while (s->step()) out.push_back(dec.decode(*s));
      return out;
    });
    for (const Record& r : page) {
      if (!fn(r)) return;
      after = r.id;
    }
    if (page.size() < 1024) return;
  }
}

std::vector<Record> SqliteRecordStore::query(const RecordFilter& f) const {
  std::string where = "WHERE 1";
  if (f.target_key) where += " AND t.key = ?1";
  if (f.workload_key) where += " AND w.key = ?2";
  if (f.op) where += " AND w.op = ?3";
  if (f.status) where += " AND r.status = ?4";
  if (f.since_ms) where += " AND r.created_at >= ?5";
  where += " ORDER BY r.created_at DESC, r.id DESC";
  if (f.limit > 0) where += " LIMIT ?6";
  return conn_.read([&] {
    auto s = conn_.prepare(record_sql(where));
    if (f.target_key) s->bind(1, *f.target_key);
    if (f.workload_key) s->bind(2, *f.workload_key);
    if (f.op) s->bind(3, *f.op);
    if (f.status) s->bind(4, to_string(*f.status));
    if (f.since_ms) s->bind(5, *f.since_ms);
    if (f.limit > 0) s->bind(6, f.limit);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<BestEntry> SqliteRecordStore::best_per_workload(const std::string& target_key) const {
  return conn_.read([&] {
    // SQLite takes the bare columns of a min() aggregate from the row holding the minimum.
    auto s = conn_.prepare(
        "SELECT r.workload_id, w.description, r.schedule, min(r.time_us), r.id "
        "FROM records r JOIN workloads w ON w.id = r.workload_id "
        "WHERE r.target_id = (SELECT id FROM targets WHERE key = ?1) AND r.status = 'ok' "
        "GROUP BY r.workload_id ORDER BY w.key");
    s->bind(1, target_key);
    RowDecoder dec(cache_);
    std::vector<BestEntry> out;
    while (s->step()) {
      BestEntry e{dec.workload(s->column_int64(0), *s, 1),
                  parse_schedule(s->column_text(2)),
                  s->column_double(3), s->column_int64(4)};
      out.push_back(std::move(e));
    }
    return out;
  });
}

}  // namespace atvoss::db
