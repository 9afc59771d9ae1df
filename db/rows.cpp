#include "db/internal/rows.hpp"

#include <cstdio>
#include <map>
#include <tuple>

#include "core/error.hpp"
#include "db/internal/compact_json.hpp"

namespace atvoss::db::rows {

std::vector<double> parse_repeats(const std::string& text) {
  if (auto fast = read_repeats(text)) return std::move(*fast);
  std::vector<double> out;
  const Json j = parse_json(text, "stored repeats");
  for (const auto& v : j) out.push_back(v.get<double>());
  return out;
}

std::string dump_repeats(const std::vector<double>& repeats) {
  if (auto fast = write_repeats(repeats)) return std::move(*fast);
  return Json(repeats).dump();
}

std::string dump_profile(const Profile& p) {
  if (auto fast = write_profile(p)) return std::move(*fast);
  return p.to_json().dump();
}

// Exactly Schedule::to_json().dump(): the schedule key is a hash of these bytes.
std::string dump_schedule(const Schedule& s) {
  if (auto fast = write_schedule(s)) return std::move(*fast);
  return s.to_json().dump();
}

Schedule parse_schedule(const std::string& text) {
  if (auto fast = read_schedule(text)) return std::move(*fast);
  return Schedule::from_json(parse_json(text, "stored schedule"));
}

Profile parse_profile(const std::string& text) {
  if (auto fast = read_profile(text)) return *fast;
  return Profile::from_json(parse_json(text, "stored profile"));
}

void schedule_key(std::string_view schedule_text, char (&out)[17]) {
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(fnv1a64(schedule_text)));
}

ModelRecord decode_model(const Statement& s, bool with_blob) {
  ModelRecord m;
  m.id = s.column_int64(0);
  m.target_key = s.column_text(1);
  m.kind = s.column_text(2);
  m.feature_version = static_cast<int>(s.column_int64(3));
  if (with_blob) m.blob = s.column_blob(4);
  m.n_records = s.column_int64(5);
  m.metrics = parse_json(s.column_text(6), "stored model metrics");
  m.created_at_ms = s.column_int64(7);
  return m;
}

JobRow decode_job(const Statement& s) {
  JobRow j;
  j.id = s.column_int64(0);
  j.name = s.column_text(1);
  j.spec = parse_json(s.column_text(2), "stored job spec");
  j.state = s.column_text(3);
  j.progress = s.column_double(4);
  j.created_at_ms = s.column_int64(5);
  j.updated_at_ms = s.column_int64(6);
  return j;
}

bool is_memory(const std::string& path) { return path == ":memory:"; }

RowDecoder::RowDecoder(DecodeCache& cache) : cache_(cache) {
  // Bounded: a process that streams millions of distinct workloads must not grow forever.
  if (cache_.workloads.size() > 100000) cache_.workloads.clear();
  if (cache_.targets.size() > 10000) cache_.targets.clear();
}

Record RowDecoder::decode(const Statement& s) {
  Record r;
  r.id = s.column_int64(0);
  r.workload = workload(s.column_int64(1), s, 2);
  r.target = target(s.column_int64(3), s);
  r.schedule = parse_schedule(s.column_text(7));
  Measurement& m = r.measurement;
  m.status = parse_status(s.column_text(8));
  m.message = s.column_text(9);
  m.time_us = s.column_double(10);
  m.repeats = parse_repeats(s.column_text(11));
  m.profile = parse_profile(s.column_text(12));
  r.worker = s.column_text(13);
  r.job = s.column_text(14);
  r.tool_version = s.column_text(15);
  r.created_at_ms = s.column_int64(16);
  return r;
}

const Workload& RowDecoder::workload(std::int64_t id, const Statement& s, int col) {
  auto it = cache_.workloads.find(id);
  if (it == cache_.workloads.end()) {
    it = cache_.workloads.emplace(id, Workload::from_json(parse_json(s.column_text(col), "stored workload"))).first;
  }
  return it->second;
}

const TargetInfo& RowDecoder::target(std::int64_t id, const Statement& s) {
  auto it = cache_.targets.find(id);
  if (it == cache_.targets.end()) {
    TargetInfo t{s.column_text(4), s.column_text(5), parse_json(s.column_text(6), "stored target")};
    it = cache_.targets.emplace(id, std::move(t)).first;
  }
  return it->second;
}

void count(MergeReport& report, DuplicateOutcome o) {
  switch (o) {
    case DuplicateOutcome::added:
      ++report.added;
      break;
    case DuplicateOutcome::identical:
      ++report.identical;
      break;
    case DuplicateOutcome::combined:
      ++report.combined;
      break;
    case DuplicateOutcome::conflict:
      ++report.conflicts;
      break;
  }
}

void reject_infrastructure(const Record& r) {
  if (is_infrastructure_error(r.measurement.status)) {
    throw Error(ErrorKind::internal, "insert: status '" + std::string(to_string(r.measurement.status)) +
                                         "' is an infrastructure error, not a result of the schedule; retry the "
                                         "candidate instead of storing it (workload " +
                                         r.workload.key() + ")");
  }
}

std::int64_t Writer::target_id(const TargetInfo& t) {
  auto it = targets_.find(t.key);
  if (it != targets_.end()) return it->second;
  {
    auto ins = c_.prepare(
        "INSERT INTO targets(key, name, description) VALUES(?1, ?2, ?3) "
        "ON CONFLICT(key) DO NOTHING");
    ins->bind(1, t.key).bind(2, t.name).bind(3, t.description.dump()).run();
  }
  auto sel = c_.prepare("SELECT id FROM targets WHERE key = ?1");
  sel->bind(1, t.key);
  if (!sel->step()) throw Error(ErrorKind::internal, "target " + t.key + " vanished after insert");
  return targets_[t.key] = sel->column_int64(0);
}

std::int64_t Writer::workload_id(const Workload& w) {
  auto it = workloads_.find(w.key());
  if (it != workloads_.end()) return it->second;
  {
    auto ins = c_.prepare(
        "INSERT INTO workloads(key, op, description) VALUES(?1, ?2, ?3) "
        "ON CONFLICT(key) DO NOTHING");
    ins->bind(1, w.key()).bind(2, w.op()).bind(3, w.to_json().dump()).run();
  }
  auto sel = c_.prepare("SELECT id FROM workloads WHERE key = ?1");
  sel->bind(1, w.key());
  if (!sel->step()) throw Error(ErrorKind::internal, "workload " + w.key() + " vanished after insert");
  return workloads_[w.key()] = sel->column_int64(0);
}

namespace {

constexpr std::string_view kInsertColumns =
    "INSERT INTO records(workload_id, target_id, schedule, schedule_key, status, error, "
    "time_us, repeats, profile, worker, job, tool_version, created_at) VALUES";
constexpr std::string_view kOnConflict = " ON CONFLICT(workload_id, target_id, schedule_key) DO NOTHING";
constexpr int kColumns = 13;

// "(?b+1, ..., ?b+13)": one row's parameters, numbered from base + 1.
std::string row_parameters(int base) {
  std::string s = "(";
  for (int c = 1; c <= kColumns; ++c) s += (c > 1 ? ", ?" : "?") + std::to_string(base + c);
  return s + ")";
}

}  // namespace

Writer::Row Writer::encode(const Record& r) {
  reject_infrastructure(r);
  Row row;
  row.wid = workload_id(r.workload);
  row.tid = target_id(r.target);
  row.schedule = dump_schedule(r.schedule);
  schedule_key(row.schedule, row.key);
  row.repeats = dump_repeats(r.measurement.repeats);
  row.profile = r.measurement.ok() ? dump_profile(r.measurement.profile) : std::string("{}");
  return row;
}

void Writer::bind_row(Statement& s, int base, const Record& r, const Row& row, std::int64_t now) {
  const Measurement& m = r.measurement;
  // Static binds: every string here outlives the statement's step() (hot path, no copies).
  s.bind(base + 1, row.wid).bind(base + 2, row.tid).bind_static(base + 3, row.schedule);
  s.bind_static(base + 4, std::string_view(row.key, 16)).bind_static(base + 5, to_string(m.status));
  s.bind_static(base + 6, m.message).bind(base + 7, m.ok() ? m.time_us : 0.0);
  s.bind_static(base + 8, row.repeats).bind_static(base + 9, row.profile).bind_static(base + 10, r.worker);
  s.bind_static(base + 11, r.job).bind_static(base + 12, r.tool_version);
  s.bind(base + 13, r.created_at_ms != 0 ? r.created_at_ms : now);
}

std::pair<std::int64_t, DuplicateOutcome> Writer::put(const Record& r, std::int64_t now) {
  const Row row = encode(r);
  {
    // SQLite: not RETURNING, which buffers its rows in a temporary table and costs more
    // than the insert itself on this hot path. PostgreSQL: RETURNING, which saves asking
    // for the id in a second round trip.
    const bool returning = c_.dialect() == Dialect::postgres;
    static const std::string kInsert = std::string(kInsertColumns) + row_parameters(0) + std::string(kOnConflict);
    static const std::string kInsertReturning = kInsert + " RETURNING id";
    auto ins = c_.prepare(returning ? kInsertReturning : kInsert);
    bind_row(*ins, 0, r, row, now);
    if (returning) {
      if (ins->step()) return {ins->column_int64(0), DuplicateOutcome::added};
    } else {
      ins->run();
      if (c_.changes() == 1) return {c_.last_insert_rowid(), DuplicateOutcome::added};
    }
  }
  return combine(row.wid, row.tid, std::string_view(row.key, 16), r);
}

std::vector<std::pair<std::int64_t, DuplicateOutcome>> Writer::put_all(std::span<const Record> batch,
                                                                       std::int64_t now) {
  std::vector<std::pair<std::int64_t, DuplicateOutcome>> out;
  out.reserve(batch.size());
  if (c_.dialect() != Dialect::postgres) {
    for (const Record& r : batch) out.push_back(put(r, now));
    return out;
  }
  // PostgreSQL: a round trip per statement is most of an insert's cost, so the new records
  // go in multi-row INSERTs; a record whose key is already held (stored before, or earlier
  // in this batch) is then resolved as put() resolves it, in batch order.
  constexpr std::size_t kChunk = 64;
  for (std::size_t first = 0; first < batch.size(); first += kChunk) {
    const std::size_t n = std::min(kChunk, batch.size() - first);
    std::vector<Row> rows;
    rows.reserve(n);
    for (std::size_t i = 0; i < n; ++i) rows.push_back(encode(batch[first + i]));
    std::string sql(kInsertColumns);
    for (std::size_t i = 0; i < n; ++i) sql += (i > 0 ? ", " : " ") + row_parameters(static_cast<int>(i) * kColumns);
    sql += std::string(kOnConflict) + " RETURNING id, workload_id, target_id, schedule_key";
    std::map<std::tuple<std::int64_t, std::int64_t, std::string>, std::int64_t> added;
    {
      auto ins = c_.prepare(sql);
      for (std::size_t i = 0; i < n; ++i)
        bind_row(*ins, static_cast<int>(i) * kColumns, batch[first + i], rows[i], now);
      while (ins->step()) {
        added[{ins->column_int64(1), ins->column_int64(2), ins->column_text(3)}] = ins->column_int64(0);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Row& row = rows[i];
      const auto it = added.find({row.wid, row.tid, std::string(row.key, 16)});
      if (it != added.end()) {
        out.emplace_back(it->second, DuplicateOutcome::added);
        added.erase(it);  // a second record of this key in the batch is a duplicate of it
      } else {
        out.push_back(combine(row.wid, row.tid, std::string_view(row.key, 16), batch[first + i]));
      }
    }
  }
  return out;
}

std::pair<std::int64_t, DuplicateOutcome> Writer::combine(std::int64_t wid, std::int64_t tid, std::string_view key,
                                                          const Record& r) {
  auto sel = c_.prepare(
      "SELECT id, status, time_us, repeats FROM records "
      "WHERE workload_id = ?1 AND target_id = ?2 AND schedule_key = ?3" +
      std::string(c_.lock_rows()));
  sel->bind(1, wid).bind(2, tid).bind(3, key);
  if (!sel->step()) throw Error(ErrorKind::internal, "record key vanished during insert");
  const std::int64_t id = sel->column_int64(0);
  Measurement stored;
  stored.status = parse_status(sel->column_text(1));
  stored.time_us = sel->column_double(2);
  stored.repeats = parse_repeats(sel->column_text(3));
  const DuplicateResolution d = resolve_duplicate(stored, r.measurement);
  if (d.replace) overwrite(id, r);
  if (d.outcome == DuplicateOutcome::combined) {
    auto upd = c_.prepare("UPDATE records SET repeats = ?2, time_us = ?3 WHERE id = ?1");
    upd->bind(1, id).bind(2, dump_repeats(d.repeats)).bind(3, d.time_us).run();
  }
  return {id, d.outcome};
}

void Writer::overwrite(std::int64_t id, const Record& r) {
  const Measurement& m = r.measurement;
  auto upd = c_.prepare(
      "UPDATE records SET status = ?2, error = ?3, time_us = ?4, repeats = ?5, "
      "profile = ?6, worker = ?7, job = ?8, tool_version = ?9 WHERE id = ?1");
  upd->bind(1, id).bind(2, to_string(m.status)).bind(3, m.message).bind(4, m.time_us);
  upd->bind(5, dump_repeats(m.repeats)).bind(6, dump_profile(m.profile));
  upd->bind(7, r.worker).bind(8, r.job).bind(9, r.tool_version).run();
}

}  // namespace atvoss::db::rows
