#include "db/sql_record_store.hpp"

#include <algorithm>

#include "db/internal/rows.hpp"
#include "db/internal/sql.hpp"

namespace atvoss::db {

using rows::kBestTail;
using rows::parse_schedule;
using rows::record_sql;
using rows::RowDecoder;
using rows::Writer;

std::vector<std::int64_t> SqlRecordStore::insert(std::span<const Record> batch) {
  for (const Record& r : batch) rows::reject_infrastructure(r);  // before taking the write lock
  return conn_.write([&] {
    Writer w(conn_);
    std::vector<std::int64_t> ids;
    ids.reserve(batch.size());
    for (const auto& [id, outcome] : w.put_all(batch, now_ms())) ids.push_back(id);
    return ids;
  });
}

namespace {

// The store's clock in ms since the epoch, as SQL: the server's for PostgreSQL, which every
// claimant shares whatever its own clock says; the machine's for an SQLite file, which only
// processes on that machine share.
std::string store_now_sql(Dialect d) {
  return d == Dialect::postgres ? "(extract(epoch from clock_timestamp()) * 1000)::bigint"
                                : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
}

}  // namespace

std::vector<bool> SqlRecordStore::claim(const Workload& workload, const TargetInfo& target,
                                        std::span<const std::string> schedule_keys, const std::string& owner,
                                        std::int64_t ttl_ms) {
  if (schedule_keys.empty()) return {};
  const std::int64_t ttl = std::clamp<std::int64_t>(ttl_ms, 0, kMaxClaimTtlMs);
  const std::string now = store_now_sql(conn_.dialect());
  return conn_.write([&] {
    Writer w(conn_);
    const std::int64_t wid = w.workload_id(workload), tid = w.target_id(target);
    std::vector<bool> held;
    held.reserve(schedule_keys.size());
    for (const std::string& key : schedule_keys) {
      // Inserted, or taken over from a lapsed claim (or one that expires further ahead than
      // any claim may), or renewed: a row comes back. Another owner's live claim: the
      // update's WHERE fails and nothing comes back.
      auto s = conn_.prepare(
          "INSERT INTO claims(workload_id, target_id, schedule_key, owner, expires_at) VALUES(?1, ?2, ?3, ?4, " + now +
          " + ?5) ON CONFLICT(workload_id, target_id, schedule_key) DO UPDATE SET owner = ?4, expires_at = " + now +
          " + ?5 WHERE claims.owner = ?4 OR claims.expires_at < " + now + " OR claims.expires_at > " + now +
          " + ?6 RETURNING owner");
      s->bind(1, wid).bind(2, tid).bind(3, key).bind(4, owner).bind(5, ttl).bind(6, kMaxClaimTtlMs);
      held.push_back(s->step());
    }
    return held;
  });
}

void SqlRecordStore::release(const std::string& owner) {
  conn_.write([&] {
    auto s = conn_.prepare("DELETE FROM claims WHERE owner = ?1");
    s->bind(1, owner).run();
  });
}

void SqlRecordStore::write_together(const std::function<void()>& body) { conn_.write(body); }

std::optional<Record> SqlRecordStore::find(const std::string& workload_key, const std::string& target_key,
                                           const std::string& schedule_key) const {
  return conn_.read([&]() -> std::optional<Record> {
    auto s = conn_.prepare(record_sql("WHERE w.key = ?1 AND t.key = ?2 AND r.schedule_key = ?3"));
    s->bind(1, workload_key).bind(2, target_key).bind(3, schedule_key);
    if (!s->step()) return std::nullopt;
    return RowDecoder(cache_).decode(*s);
  });
}

bool SqlRecordStore::contains(const std::string& workload_key, const std::string& target_key,
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

std::vector<Record> SqlRecordStore::best(const std::string& workload_key, const std::string& target_key, int k) const {
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

std::vector<BestEntry> SqlRecordStore::best_schedules(const std::string& workload_key, const std::string& target_key,
                                                      int k) const {
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
      out.push_back(BestEntry{dec.workload(s->column_int64(0), *s, 1), parse_schedule(s->column_text(2)),
                              s->column_double(3), s->column_int64(4)});
    }
    return out;
  });
}

std::string SqlRecordStore::explain_best_plan() const {
  return conn_.read([&] {
    const bool sqlite = conn_.dialect() == Dialect::sqlite;
    auto s = conn_.prepare((sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + record_sql(kBestTail));
    s->bind(1, "").bind(2, "").bind(3, 1);
    std::string plan;
    while (s->step()) plan += s->column_text(sqlite ? 3 : 0) + "\n";
    return plan;
  });
}

std::vector<Record> SqlRecordStore::history(const std::string& workload_key,
                                            const std::optional<std::string>& target_key) const {
  return conn_.read([&] {
    auto s =
        conn_.prepare(record_sql("WHERE w.key = ?1 AND (CAST(?2 AS TEXT) IS NULL OR t.key = ?2) "
                                 "ORDER BY r.created_at, r.id"));
    s->bind(1, workload_key);
    if (target_key) s->bind(2, *target_key);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<Record> SqlRecordStore::history_after(const std::string& workload_key, const std::string& target_key,
                                                  std::int64_t after_id) const {
  return conn_.read([&] {
    auto s = conn_.prepare(record_sql("WHERE w.key = ?1 AND t.key = ?2 AND r.id > ?3 ORDER BY r.id"));
    s->bind(1, workload_key).bind(2, target_key).bind(3, after_id);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

// SQLite lets one writer at a time hold the file, so rows commit in rowid order.
bool SqlRecordStore::commits_in_id_order() const { return conn_.dialect() == Dialect::sqlite; }

void SqlRecordStore::for_each_record(const std::string& target_key,
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

std::vector<Record> SqlRecordStore::query(const RecordFilter& f) const {
  // Parameters numbered in the order the filters appear: PostgreSQL must see every
  // parameter it is given, to know its type.
  std::string where = "WHERE TRUE";
  int n = 0;
  const auto add = [&](std::string_view condition) {
    where += " AND " + std::string(condition) + " ?" + std::to_string(++n);
  };
  if (f.target_key) add("t.key =");
  if (f.workload_key) add("w.key =");
  if (f.op) add("w.op =");
  if (f.status) add("r.status =");
  if (f.since_ms) add("r.created_at >=");
  where += " ORDER BY r.created_at DESC, r.id DESC";
  if (f.limit > 0) where += " LIMIT ?" + std::to_string(++n);
  return conn_.read([&] {
    auto s = conn_.prepare(record_sql(where));
    int i = 0;
    if (f.target_key) s->bind(++i, *f.target_key);
    if (f.workload_key) s->bind(++i, *f.workload_key);
    if (f.op) s->bind(++i, *f.op);
    if (f.status) s->bind(++i, to_string(*f.status));
    if (f.since_ms) s->bind(++i, *f.since_ms);
    if (f.limit > 0) s->bind(++i, f.limit);
    RowDecoder dec(cache_);
    std::vector<Record> out;
    while (s->step()) out.push_back(dec.decode(*s));
    return out;
  });
}

std::vector<BestEntry> SqlRecordStore::best_per_workload(const std::string& target_key) const {
  return conn_.read([&] {
    // The first row of each workload in (time, id) order: the fastest, ties to the oldest.
    auto s = conn_.prepare(
        "SELECT x.workload_id, w.description, x.schedule, x.time_us, x.id FROM (SELECT r.workload_id, "
        "r.schedule, r.time_us, r.id, row_number() OVER (PARTITION BY r.workload_id ORDER BY r.time_us, "
        "r.id) AS rank FROM records r WHERE r.target_id = (SELECT id FROM targets WHERE key = ?1) AND "
        "r.status = 'ok') AS x JOIN workloads w ON w.id = x.workload_id WHERE x.rank = 1 ORDER BY w.key");
    s->bind(1, target_key);
    RowDecoder dec(cache_);
    std::vector<BestEntry> out;
    while (s->step()) {
      BestEntry e{dec.workload(s->column_int64(0), *s, 1), parse_schedule(s->column_text(2)), s->column_double(3),
                  s->column_int64(4)};
      out.push_back(std::move(e));
    }
    return out;
  });
}

}  // namespace atvoss::db
