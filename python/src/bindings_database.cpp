// Database and lookup-table bindings: db::TuningDatabase (records, stats, export, import,
// merge, models, Kernel Tuner caches in and out) and table::ScheduleTable (the runtime lookup). Results cross as JSON
// text; python/atvoss/database.py turns them into lists, dicts and numpy columns.
#include <pybind11/stl.h>

#include <fstream>
#include <memory>
#include <optional>

#include "backend/targets.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "db/kernel_tuner_cache.hpp"
#include "db/table/schedule_table.hpp"
#include "db/table_export.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::python {
namespace {

Json target_json(const db::TargetInfo& t) { return {{"key", t.key}, {"name", t.name}, {"description", t.description}}; }

Json records_json(const std::vector<db::Record>& records) {
  Json out = Json::array();
  for (const auto& r : records) {
    Json j = r.to_json();
    j["id"] = r.id;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<std::string> optional_string(const Json& j, const char* name) {
  if (!j.contains(name) || j[name].is_null()) return std::nullopt;
  if (!j[name].is_string()) throw_bad_input(std::string("query: field '") + name + "' must be a string");
  return j[name].get<std::string>();
}

class Database {
 public:
  Database(const std::string& path, bool read_only)
      : db_(db::TuningDatabase::open(path, {.must_exist = read_only, .read_only = read_only})) {}

  // A target's key: a name stored in the database (recorded GPU targets), else whatever
  // backend::load_target reads (preset, file, JSON).
  std::string target_key(const std::string& target) const {
    if (!target.empty() && target.front() != '{') {
      const auto named = db_.targets_named(target);
      if (named.size() == 1) return named.front().key;
    }
    return backend::load_target(target).key();
  }

  std::string best(const std::string& workload_key, const std::string& target, int k) const {
    if (k < 1) throw_bad_input("best: field 'k' must be >= 1");
    return dump(records_json(db_.records().best(workload_key, target_key(target), k)));
  }

  std::string history(const std::string& workload_key, const std::optional<std::string>& target) const {
    std::optional<std::string> key;
    if (target) key = target_key(*target);
    return dump(records_json(db_.records().history(workload_key, key)));
  }

  std::string query(const std::string& filter_text) const {
    return dump(records_json(db_.records().query(filter_of(parse(filter_text, "query")))));
  }

  std::string stats() const {
    const db::Stats s = db_.stats();
    Json per_target = Json::array();
    for (const auto& t : s.per_target) {
      per_target.push_back({{"target", target_json(t.target)},
                            {"workloads", t.workloads},
                            {"records", t.records},
                            {"ok", t.ok},
                            {"failed", t.failed}});
    }
    Json by_status = Json::object();
    for (const auto& [status, n] : s.by_status) by_status[status] = n;
    return dump({{"schema_version", s.schema_version},
                 {"targets", s.targets},
                 {"workloads", s.workloads},
                 {"records", s.records},
                 {"models", s.models},
                 {"jobs", s.jobs},
                 {"by_status", by_status},
                 {"per_target", per_target},
                 {"file_bytes", s.file_bytes}});
  }

  std::string targets() const {
    Json out = Json::array();
    for (const auto& t : db_.targets()) out.push_back(target_json(t));
    return dump(out);
  }

  std::string export_table(const std::string& target, const std::string& path) const {
    const auto info = db_.target(target_key(target));
    if (!info) throw Error(ErrorKind::not_found, "export_table: no record of target '" + target + "'");
    db::TableExportReport r;
    {
      py::gil_scoped_release release;
      r = db::export_table(db_, *info, path);
    }
    return dump({{"entries", r.entries}, {"checksum", r.checksum}, {"path", path}});
  }

  // The workload's records on target as a Kernel Tuner cache (db/kernel_tuner_cache.hpp).
  std::string export_kernel_tuner_cache(const std::string& path, const std::string& workload_key,
                                        const std::string& target, const std::string& kernel_name) const {
    const std::string key = target_key(target);
    db::KernelTunerExportReport r;
    {
      py::gil_scoped_release release;
      const auto records = db_.records().history(workload_key, key);
      if (records.empty()) {
        throw_bad_input("export_kernel_tuner_cache: field 'workload': no record of workload " + workload_key +
                        " on target '" + target + "'");
      }
      r = db::write_kernel_tuner_cache(records, path, kernel_name);
    }
    return dump(r.to_json());
  }

  std::int64_t export_jsonl(const std::string& path, const std::string& filter_text) const {
    const db::RecordFilter filter = filter_of(parse(filter_text, "query"));
    std::ofstream out(path);
    if (!out) throw Error(ErrorKind::io, "export: cannot write '" + path + "'");
    py::gil_scoped_release release;
    return db_.export_jsonl(out, filter);
  }

  // JSON lines written by export_jsonl, or a Kernel Tuner cache (.json / .json.gz).
  std::string import_file(const std::string& path) {
    db::MergeReport r;
    py::gil_scoped_release release;
    if (db::is_kernel_tuner_cache(path)) {
      r = db_.import_records(db::read_kernel_tuner_cache(path));
    } else {
      std::ifstream in(path);
      if (!in) throw Error(ErrorKind::io, "import: cannot open '" + path + "'");
      r = db_.import_jsonl(in, path);
    }
    return dump(r.to_json());
  }

  std::string merge(const std::string& other) {
    db::MergeReport r;
    {
      py::gil_scoped_release release;
      r = db_.merge_from(other);
    }
    return dump(r.to_json());
  }

  std::string models(const std::string& target) const {
    Json out = Json::array();
    for (const auto& m : db_.models().list(target_key(target))) {
      out.push_back({{"id", m.id},
                     {"kind", m.kind},
                     {"feature_version", m.feature_version},
                     {"n_records", m.n_records},
                     {"metrics", m.metrics},
                     {"created_at_ms", m.created_at_ms}});
    }
    return dump(out);
  }

  std::string integrity_check() const { return db_.integrity_check(); }
  const std::string& path() const { return db_.path(); }

 private:
  db::RecordFilter filter_of(const Json& j) const {
    require_object(j, "query");
    db::RecordFilter f;
    if (const auto t = optional_string(j, "target")) f.target_key = target_key(*t);
    f.workload_key = optional_string(j, "workload_key");
    f.op = optional_string(j, "op");
    if (const auto s = optional_string(j, "status")) f.status = parse_status(*s);
    if (const auto since = optional_string(j, "since")) f.since_ms = db::parse_time_ms(*since, "since");
    if (j.contains("limit") && !j["limit"].is_null()) {
      if (!j["limit"].is_number_integer() || j["limit"].get<std::int64_t>() < 0) {
        throw_bad_input("query: field 'limit' must be an integer >= 0");
      }
      f.limit = j["limit"].get<std::int64_t>();
    }
    return f;
  }

  db::TuningDatabase db_;
};

class Table {
 public:
  explicit Table(const std::string& path) : table_(table::ScheduleTable::load(path)) {}

  std::string lookup(const std::string& workload) const {
    const Workload w = Workload::from_json(parse(workload, "workload"));
    return dump(table_->lookup(w).to_json(table_->header().target_name));
  }

  std::string header() const {
    const table::TableHeader& h = table_->header();
    return dump({{"format_version", h.format_version},
                 {"target_key", h.target_key},
                 {"target_name", h.target_name},
                 {"target_description", h.target_description},
                 {"created_at", h.created_at},
                 {"tool_version", h.tool_version},
                 {"record_count", h.record_count},
                 {"checksum", h.checksum}});
  }

  std::size_t size() const { return table_->entries().size(); }

 private:
  std::shared_ptr<const table::ScheduleTable> table_;
};

}  // namespace

void bind_database(py::module_& m) {
  py::class_<Database>(m, "Database")
      .def(py::init<const std::string&, bool>(), py::arg("path"), py::arg("read_only"))
      .def("target_key", &Database::target_key)
      .def("best", &Database::best)
      .def("history", &Database::history)
      .def("query", &Database::query)
      .def("stats", &Database::stats)
      .def("targets", &Database::targets)
      .def("export_table", &Database::export_table)
      .def("export_jsonl", &Database::export_jsonl)
      .def("export_kernel_tuner_cache", &Database::export_kernel_tuner_cache)
      .def("import_file", &Database::import_file)
      .def("merge", &Database::merge)
      .def("models", &Database::models)
      .def("integrity_check", &Database::integrity_check)
      .def_property_readonly("path", &Database::path);
  py::class_<Table>(m, "Table")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("lookup", &Table::lookup)
      .def("header", &Table::header)
      .def("__len__", &Table::size);
}

}  // namespace atvoss::python
