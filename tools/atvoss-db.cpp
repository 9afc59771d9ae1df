// atvoss-db: inspect and maintain a tuning database (db/tuning_database.hpp).
//
//   atvoss-db [--db FILE|URL] [--json] <command> ...
// --db names an SQLite file or a postgresql:// URL (db/postgres_url.hpp; the password comes
// from PGPASSFILE, PGPASSWORD or a service file, never from the URL).
//     stats                                  records, targets, workloads per target and status
//     best --workload W --target T [-k N]    fastest valid schedules of W on T (none: the
//                                            nearest comparable workload's, as /v1/best answers)
//     history --workload W [--target T]      every measurement of W, oldest first
//     query [--op O] [--target T] [--status S] [--since TIME] [--limit N]
//     export-table --target T -o FILE        runtime lookup table (db/table/schedule_table.hpp)
//     export [-o FILE] [--target T]          JSON lines, one self-describing record per line
//     import FILE...                         JSON lines, or Kernel Tuner caches (.json/.json.gz)
//     merge DB...                            other databases (read-only) into this one
//     migrate --from DB --to DB              copy a whole database into an empty one, ids kept
//                                            (SQLite to PostgreSQL and back); --db is not used
//     prune -k N [--keep-failed]             keep the best N per (workload, target)
//     check                                  integrity_check + foreign_key_check
//     vacuum
//     serve [--host H] [--port P] [--token-file F]  HTTP /v1/best, /v1/stats, /metrics (rpc/query_server.hpp)
// W: inline JSON, a JSON file, or a workload key. T: a preset name, a target JSON file or
// inline JSON (backend::load_target), or the name or key of a target stored in the
// database (e.g. a recorded GPU such as "NVIDIA GeForce RTX 3090").
// Output is an aligned table for people; --json prints JSON for machines.
// Exit codes: 0 ok, 2 bad input, 1 any other failure (tools/cli_common.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "backend/space_check.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "db/best_lookup.hpp"
#include "db/kernel_tuner_cache.hpp"
#include "db/postgres_url.hpp"
#include "db/table_export.hpp"
#include "db/tuning_database.hpp"
#include "rpc/auth.hpp"
#include "rpc/query_server.hpp"
#include "tools/cli_common.hpp"
#include "tools/target_arg.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::db;
using atvoss::tools::resolve_target;

// ---- output ------------------------------------------------------------------------

// Columns whose header is listed in `right` are right-aligned (numbers).
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<std::string>& right = {}) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool is_right = std::find(right.begin(), right.end(), header[c]) != right.end();
      const bool last = c + 1 == cells.size();
      const int w = last && !is_right ? 0 : static_cast<int>(width[c]);  // no trailing blanks
      std::cout << (is_right ? std::right : std::left) << std::setw(w) << cells[c] << (last ? "\n" : "  ");
    }
  };
  line(header);
  std::vector<std::string> rule;
  for (auto w : width) rule.emplace_back(w, '-');
  line(rule);
  for (const auto& r : rows) line(r);
}

std::string fixed(double v, int digits = 2) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

void print_records(const std::vector<Record>& records, bool json) {
  if (json) {
    Json out = Json::array();
    for (const auto& r : records) {
      Json j = r.to_json();
      j["id"] = r.id;
      out.push_back(std::move(j));
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : records) {
    rows.push_back({std::to_string(r.id), r.workload.label(), r.target.name, r.schedule.to_json().dump(),
                    std::string(to_string(r.measurement.status)),
                    r.measurement.ok() ? fixed(r.measurement.time_us) : r.measurement.message,
                    std::to_string(r.measurement.repeats.size()), format_time_ms(r.created_at_ms)});
  }
  print_table({"id", "workload", "target", "schedule", "status", "time_us", "repeats", "created_at"}, rows,
              {"id", "time_us", "repeats"});
  std::cout << records.size() << " record(s)\n";
}

void print_report(const char* what, const MergeReport& r, bool json) {
  if (json) {
    std::cout << r.to_json().dump(2) << "\n";
    return;
  }
  std::cout << what << ": " << r.added << " added, " << r.identical << " identical, " << r.combined
            << " combined (repeats kept from both), " << r.conflicts << " status conflicts";
  if (r.models + r.jobs > 0) std::cout << ", " << r.models << " models, " << r.jobs << " jobs";
  std::cout << "\n";
}

// ---- arguments ---------------------------------------------------------------------

bool is_key(const std::string& s) {
  return s.size() == 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Workload resolve_workload(const TuningDatabase& db, const std::string& arg) {
  if (is_key(arg) && !std::filesystem::exists(arg)) {
    if (auto w = db.workload(arg)) return *w;
    throw_bad_input("--workload: no workload with key " + arg + " in " + db.path());
  }
  return Workload::from_json(json_from_arg(arg, "--workload"));
}

OpenOptions read_only() {
  OpenOptions o;
  o.read_only = true;
  return o;
}

// ---- commands ----------------------------------------------------------------------

void cmd_stats(const TuningDatabase& db, bool json) {
  const Stats st = db.stats();
  if (json) {
    Json j{{"path", db.path()},
           {"schema_version", st.schema_version},
           {"targets", st.targets},
           {"workloads", st.workloads},
           {"records", st.records},
           {"models", st.models},
           {"jobs", st.jobs},
           {"file_bytes", st.file_bytes},
           {"by_status", Json::object()},
           {"per_target", Json::array()}};
    for (const auto& [s, n] : st.by_status) j["by_status"][s] = n;
    for (const auto& t : st.per_target) {
      j["per_target"].push_back({{"key", t.target.key},
                                 {"name", t.target.name},
                                 {"workloads", t.workloads},
                                 {"records", t.records},
                                 {"ok", t.ok},
                                 {"failed", t.failed}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << db.path() << ": schema v" << st.schema_version << ", " << st.records << " records, " << st.workloads
            << " workloads, " << st.targets << " targets, " << st.models << " models, " << st.jobs << " jobs, "
            << st.file_bytes << " bytes\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : st.per_target) {
    rows.push_back({t.target.name, t.target.key, std::to_string(t.workloads), std::to_string(t.records),
                    std::to_string(t.ok), std::to_string(t.failed)});
  }
  print_table({"target", "key", "workloads", "records", "ok", "failed"}, rows,
              {"workloads", "records", "ok", "failed"});
  if (!st.by_status.empty()) {
    std::cout << "\n";
    rows.clear();
    for (const auto& [s, n] : st.by_status) rows.push_back({s, std::to_string(n)});
    print_table({"status", "records"}, rows, {"records"});
  }
}

// The best k records of w; without any, the one answer /v1/best gives (a comparable workload's).
void cmd_best(const TuningDatabase& db, const Workload& w, const TargetInfo& target, int k, bool json) {
  const auto records = db.records().best(w.key(), target.key, k);
  if (!records.empty()) {
    print_records(records, json);
    return;
  }
  const BestAnswer nearest = best_or_nearest(db, target, w);
  if (json) {
    std::cout << nearest.to_json().dump(2) << "\n";
    return;
  }
  std::cout << "no record of " << w.label() << " on " << target.name << "; nearest: " << nearest.workload.label() << " "
            << nearest.schedule.to_json().dump() << " " << fixed(nearest.time_us) << " us (distance "
            << fixed(nearest.distance, 3) << ")\n";
}

void cmd_export_table(const TuningDatabase& db, const std::string& target_arg, const std::string& out, bool json) {
  const TargetInfo target = resolve_target(db, target_arg);
  const TableExportReport rep = export_table(db, target, out);
  if (json) {
    std::cout
        << Json{{"path", out}, {"target", target.name}, {"entries", rep.entries}, {"checksum", rep.checksum}}.dump(2)
        << "\n";
  } else {
    std::cout << "wrote " << out << ": " << rep.entries << " workloads on " << target.name << " (" << rep.checksum
              << ")\n";
  }
}

void cmd_export(const TuningDatabase& db, const std::string& out, const std::string& target_arg) {
  RecordFilter f;
  if (!target_arg.empty()) f.target_key = resolve_target(db, target_arg).key;
  std::int64_t n = 0;
  if (out.empty() || out == "-") {
    n = db.export_jsonl(std::cout, f);
  } else {
    write_file_atomically(out, "export -o", [&](std::ostream& file) { n = db.export_jsonl(file, f); });
  }
  std::cerr << "exported " << n << " record(s)\n";
}

void cmd_import(TuningDatabase& db, const std::vector<std::string>& files, bool json) {
  for (const auto& file : files) {
    MergeReport rep;
    if (is_kernel_tuner_cache(file)) {
      rep = db.import_records(read_kernel_tuner_cache(file), file, atvoss::backend::SpaceCheck{});
    } else {
      require_input_file(file, "import");
      std::ifstream in(file);
      if (!in) throw Error(ErrorKind::io, "import: cannot open '" + file + "'");
      rep = db.import_jsonl(in, file, atvoss::backend::SpaceCheck{});
    }
    print_report(("import " + file).c_str(), rep, json);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-db: inspect and maintain an atvoss tuning database"};
  app.require_subcommand(1);
  std::string db_path = "atvoss.db";
  bool json = false;
  app.add_option("--db", db_path, "database file or postgresql:// URL")->capture_default_str();
  app.add_flag("--json", json, "print JSON for machines instead of tables");

  std::string workload_arg, target_arg, out, op, status, since;
  int k = 5;
  std::int64_t limit = 100;
  bool keep_failed = false;
  std::vector<std::string> files;

  auto* stats = app.add_subcommand("stats", "counts per target and status");
  auto* best = app.add_subcommand("best", "fastest valid schedules of a workload on a target");
  best->add_option("--workload", workload_arg, "workload JSON, file or key")->required();
  best->add_option("--target", target_arg, "preset, target file/JSON, or stored target name")->required();
  best->add_option("-k", k, "how many")->capture_default_str()->check(CLI::PositiveNumber);
  auto* history = app.add_subcommand("history", "every measurement of a workload");
  history->add_option("--workload", workload_arg, "workload JSON, file or key")->required();
  history->add_option("--target", target_arg, "only this target");
  auto* query = app.add_subcommand("query", "records matching filters, newest first");
  query->add_option("--op", op, "operator, e.g. matmul");
  query->add_option("--target", target_arg, "target");
  query->add_option("--status", status, "ok, invalid, compile_error, runtime_error, wrong_answer, timeout");
  query->add_option("--since", since, "ISO 8601 UTC time or unix seconds");
  query->add_option("--limit", limit, "at most this many (0: all)")
      ->capture_default_str()
      ->check(tools::non_negative(limit));
  auto* export_table_cmd = app.add_subcommand("export-table", "runtime lookup table of one target");
  export_table_cmd->add_option("--target", target_arg, "target")->required();
  export_table_cmd->add_option("-o,--output", out, "table file to write")->required();
  auto* export_cmd = app.add_subcommand("export", "JSON lines, one record per line");
  export_cmd->add_option("-o,--output", out, "file (default: stdout)");
  export_cmd->add_option("--target", target_arg, "only this target");
  auto* import_cmd = app.add_subcommand("import", "JSON lines or Kernel Tuner cache files");
  import_cmd->add_option("files", files, "files to import")->required();
  auto* merge = app.add_subcommand("merge", "merge other database files into this one");
  merge->add_option("files", files, "database files or URLs (opened read-only)")->required();
  std::string migrate_from, migrate_to;
  auto* migrate = app.add_subcommand("migrate", "copy a whole database into an empty one (SQLite <-> PostgreSQL)");
  migrate->add_option("--from", migrate_from, "source database file or URL (opened read-only)")->required();
  migrate->add_option("--to", migrate_to, "empty destination database file or URL (created if absent)")->required();
  auto* prune = app.add_subcommand("prune", "keep the best k per (workload, target)");
  prune->add_option("-k", k, "records to keep per (workload, target)")->required()->check(CLI::PositiveNumber);
  prune->add_flag("--keep-failed", keep_failed, "keep failed records (they stop re-measuring)");
  auto* check = app.add_subcommand("check", "integrity_check and foreign_key_check");
  auto* vacuum = app.add_subcommand("vacuum", "rebuild the file, reclaiming free pages");
  atvoss::rpc::QueryServerOptions serve_options;
  std::string token_file;
  auto* serve = app.add_subcommand("serve", "HTTP query endpoint: /v1/best, /v1/stats, /metrics");
  serve->add_option("--host", serve_options.host, "bind address (non-loopback needs a token)")
      ->capture_default_str()
      ->check(tools::ip_address());
  serve->add_option("--port", serve_options.port, "port")->capture_default_str();
  serve->add_option("--token-file", token_file, "file holding the token (else ATVOSS_TOKEN; none: loopback only)");

  return atvoss::tools::run_cli(app, argc, argv, [&]() -> int {
    if (serve->parsed()) {
      atvoss::db::require_database(db_path, "--db", true);
      serve_options.db_path = db_path;
      serve_options.token = atvoss::rpc::load_token(token_file);
      atvoss::rpc::run_query_server(serve_options);
      return 0;
    }
    if (migrate->parsed()) {
      atvoss::db::require_database(migrate_from, "--from", true);
      atvoss::db::require_database(migrate_to, "--to", false);
      auto to = TuningDatabase::open(migrate_to);
      print_report(("migrate " + migrate_from + " -> " + migrate_to).c_str(), to.copy_from(migrate_from), json);
      return 0;
    }
    const bool writes = import_cmd->parsed() || merge->parsed() || prune->parsed() || vacuum->parsed();
    // Every named file is checked before the database is opened (or created) and before any is read.
    // Only import and merge may start a database; prune and vacuum work on one that exists.
    if (!writes || prune->parsed() || vacuum->parsed()) atvoss::db::require_database(db_path, "--db", true);
    for (const auto& f : files) {
      if (import_cmd->parsed()) {
        require_input_file(f, "import");
      } else {
        atvoss::db::require_database(f, "merge", true);
      }
    }
    auto db = TuningDatabase::open(db_path, writes ? OpenOptions{} : read_only());
    if (stats->parsed()) {
      cmd_stats(db, json);
    } else if (best->parsed()) {
      cmd_best(db, resolve_workload(db, workload_arg), resolve_target(db, target_arg), k, json);
    } else if (history->parsed()) {
      const Workload w = resolve_workload(db, workload_arg);
      std::optional<std::string> t;
      if (!target_arg.empty()) t = resolve_target(db, target_arg).key;
      print_records(db.records().history(w.key(), t), json);
    } else if (query->parsed()) {
      RecordFilter f;
      if (!op.empty()) f.op = op;
      if (!target_arg.empty()) f.target_key = resolve_target(db, target_arg).key;
      if (!status.empty()) f.status = parse_status(status);
      if (!since.empty()) f.since_ms = parse_time_ms(since, "--since");
      f.limit = limit;
      print_records(db.records().query(f), json);
    } else if (export_table_cmd->parsed()) {
      cmd_export_table(db, target_arg, out, json);
    } else if (export_cmd->parsed()) {
      cmd_export(db, out, target_arg);
    } else if (import_cmd->parsed()) {
      cmd_import(db, files, json);
    } else if (merge->parsed()) {
      for (const auto& f : files) print_report(("merge " + f).c_str(), db.merge_from(f), json);
    } else if (prune->parsed()) {
      const auto n = db.prune(k, keep_failed);
      if (json)
        std::cout << Json{{"deleted", n}}.dump() << "\n";
      else
        std::cout << "deleted " << n << " record(s)\n";
    } else if (check->parsed()) {
      const std::string result = db.integrity_check();
      if (json)
        std::cout << Json{{"integrity", result}}.dump() << "\n";
      else
        std::cout << result << "\n";
      return result == "ok" ? 0 : 1;
    } else if (vacuum->parsed()) {
      // VACUUM copies what it can read: on a damaged file it would bury the damage.
      const std::string result = db.integrity_check();
      if (result != "ok") {
        throw Error(ErrorKind::corrupt, db.path() + " fails check, so vacuum refuses to rewrite it:\n" + result);
      }
      db.vacuum();
      if (!json) std::cout << "vacuumed " << db.path() << "\n";
    }
    return 0;
  });
}
