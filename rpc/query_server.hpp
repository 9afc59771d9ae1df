// QueryServer: the read-only HTTP/JSON endpoint (Boost.Beast) through which other
// compilers ask the farm or a tuning database for the best known schedule:
//   GET  /v1/best?target=T&workload=<url-encoded JSON>   (or POST /v1/best with
//        {"target":T,"workload":{...}}) -> {"schedule","time_us","match":"exact"|"nearest",...}
//   GET  /v1/stats   -> JSON counters
//   GET  /metrics    -> Prometheus text exposition
// Token rule as for the farm: with a token every request needs "Authorization: Bearer
// <token>" (401 otherwise); without one, only loopback peers are served (403).
// Threading: runs on the io_context it is given; handlers may be called from any of its
// threads at once, so they must be thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "core/json.hpp"

namespace atvoss::rpc {

struct QueryHandlers {
  std::function<Json()> stats;           // required
  std::function<std::string()> metrics;  // required
  // {"target": name-or-key, "workload": {...}} -> answer; Error(not_found) -> 404,
  // Error(bad_input) -> 400. Empty: /v1/best answers 404 "no database".
  std::function<Json(const Json& request)> best;
};

// What one peer can hold (docs/protocol.md, "HTTP query endpoint"). A connection waits
// until its first request header has arrived and passed the token check; waiting ones are
// evicted oldest first when the places are full (rpc/internal/admission_gate.hpp), so idle
// connections cannot keep an authorised request out. Served connections have their own cap.
struct QueryServerLimits {
  std::chrono::milliseconds header_timeout{5000};  // a request header must arrive within it
  std::chrono::milliseconds idle_timeout{30000};   // a served connection's next request, a body
  std::size_t max_waiting = 64;                    // connections before their first header
  std::size_t max_waiting_per_address = 16;
  std::size_t max_served = 64;  // connections past the token check; more get 503
};

class QueryServer {
 public:
  // Binds host:port (0 = free port). Throws Error(io) if it cannot bind, Error(bad_input)
  // for a zero limit.
  QueryServer(boost::asio::io_context& io, const std::string& host, std::uint16_t port,
              std::optional<std::string> token, QueryHandlers handlers, QueryServerLimits limits = {});
  ~QueryServer();
  std::uint16_t port() const;
  void stop();  // closes the listener; open connections finish their current request

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Decodes %XX and '+' in a query-string component; Error(bad_input) on a bad escape.
std::string url_decode(std::string_view text);

struct QueryServerOptions {
  std::string db_path;  // the tuning database answering /v1/best
  std::string host = "127.0.0.1";
  std::uint16_t port = 9191;
  std::optional<std::string> token;  // none: loopback peers only
  int threads = 2;
};

// The /v1/best handler over the database at path (the farm's and `atvoss-db serve`'s):
// {"target": name or key, "workload": {...}} -> db::BestAnswer::to_json() of
// db::best_or_nearest (db/best_lookup.hpp). Error(not_found) when the target or any
// comparable workload is unknown, Error(bad_input) when the target name is ambiguous.
std::function<Json(const Json&)> make_best_handler(const std::string& db_path);

// Serves a tuning database until SIGINT/SIGTERM (for `atvoss-db serve --db F`).
// Throws Error(io) if the database cannot be opened or the port bound.
void run_query_server(const QueryServerOptions& options);

}  // namespace atvoss::rpc
