// The query server over a tuning database (query_server.hpp: make_best_handler,
// run_query_server, atvoss-db serve): /v1/best from the database, /v1/stats and /metrics of
// what it holds.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "core/error.hpp"
#include "core/json.hpp"
#include "db/best_lookup.hpp"
#include "db/postgres_url.hpp"
#include "db/tuning_database.hpp"
#include "rpc/log.hpp"
#include "rpc/metrics.hpp"
#include "rpc/query_server.hpp"

namespace atvoss::rpc {

namespace asio = boost::asio;

namespace {

// TuningDatabase is one-per-thread; HTTP requests arrive on any io thread.
db::TuningDatabase& thread_database(const std::string& path) {
  thread_local std::map<std::string, std::unique_ptr<db::TuningDatabase>> open;
  auto& slot = open[path];
  if (!slot) {
    db::OpenOptions options;
    options.must_exist = true;
    slot = std::make_unique<db::TuningDatabase>(db::TuningDatabase::open(path, options));
  }
  return *slot;
}

}  // namespace

std::function<Json(const Json&)> make_best_handler(const std::string& db_path) {
  return [db_path](const Json& request) {
    require_object(request, "/v1/best");
    const std::string target = require_string(request, "target", "/v1/best");
    const Workload workload = Workload::from_json(require_field(request, "workload", "/v1/best"));
    const db::TuningDatabase& database = thread_database(db_path);
    return db::best_or_nearest(database, db::resolve_stored_target(database, target), workload).to_json();
  };
}

namespace {

// /v1/stats of a database server: what the database holds.
Json database_stats(const std::string& path) {
  db::OpenOptions options;
  options.must_exist = true;
  options.read_only = true;
  const db::Stats st = db::TuningDatabase::open(path, options).stats();
  Json by_status = Json::object();
  for (const auto& [status, n] : st.by_status) by_status[status] = n;
  return Json{{"database", path},      {"schema_version", st.schema_version},
              {"targets", st.targets}, {"workloads", st.workloads},
              {"records", st.records}, {"models", st.models},
              {"jobs", st.jobs},       {"by_status", std::move(by_status)}};
}

// Seconds since the epoch of the last change to the database file or its WAL: a commit
// lands in the WAL first and in the file at a checkpoint.
double last_write_seconds(const std::string& path) {
  double latest = 0;
  for (const std::string& f : {path, path + "-wal"}) {
    std::error_code ec;
    const auto t = std::filesystem::last_write_time(f, ec);
    if (ec) continue;
    const auto sys = std::chrono::file_clock::to_sys(t);
    latest = std::max(latest, std::chrono::duration<double>(sys.time_since_epoch()).count());
  }
  return latest;
}

// /metrics of a database server: what the query endpoint answered, then what the
// database holds (the farm's queue and worker counters mean nothing here).
std::string database_metrics(const FarmMetrics& answers, const std::string& path) {
  const Json st = database_stats(path);
  std::vector<Gauge> gauges = {
      {"atvoss_db_records", "Records in the database.", st["records"].get<double>()},
      {"atvoss_db_targets", "Targets in the database.", st["targets"].get<double>()},
      {"atvoss_db_workloads", "Workloads in the database.", st["workloads"].get<double>()},
      {"atvoss_db_models", "Cost models stored in the database.", st["models"].get<double>()},
  };
  // A server database has no file whose change time tells the last write.
  if (!db::is_postgres_url(path)) {
    gauges.push_back({"atvoss_db_last_write_timestamp_seconds",
                      "Unix time of the last change to the database file or its WAL.", last_write_seconds(path)});
  }
  return answers.prometheus_answers("atvoss_query", FarmMetrics::kQueryHelp) + prometheus_gauges(gauges);
}

}  // namespace

void run_query_server(const QueryServerOptions& options) {
  asio::io_context io;
  auto metrics = std::make_shared<FarmMetrics>();  // answers by outcome, and their latency
  auto best = make_best_handler(options.db_path);
  database_stats(options.db_path);  // fail now, not on the first request, if the file is unusable
  QueryHandlers handlers;
  handlers.best = [best, metrics](const Json& request) {
    const auto start = std::chrono::steady_clock::now();
    try {
      Json answer = best(request);
      metrics->count_measured(answer.value("match", std::string("exact")));
      metrics->add_latency(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      return answer;
    } catch (const Error& e) {
      metrics->count_measured(to_string(e.kind()));
      throw;
    }
  };
  handlers.stats = [path = options.db_path] { return database_stats(path); };
  handlers.metrics = [metrics, path = options.db_path] { return database_metrics(*metrics, path); };
  QueryServer server(io, options.host, options.port, options.token, std::move(handlers));
  log_line("query", "serving " + options.db_path + " on http://" + options.host + ":" + std::to_string(server.port()));
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    server.stop();
    io.stop();
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, options.threads); ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (std::thread& t : threads) t.join();
}

}  // namespace atvoss::rpc
