// ClientBatch: what FarmClient::measure (rpc/farm_client.hpp) does with one batch, as a
// state machine without sockets, sleeps or a clock of its own. measure() runs the loop:
// it asks step(), does that one thing (connect, send the submission, wait for a message,
// wait out the delay) and reports what happened back as an event; the machine decides
// what comes next. Its rules:
//   - each submission gives the unanswered items fresh ids, so an answer to an id of an
//     earlier connection is never taken for the answer to a resubmitted item;
//   - a second answer for an item is counted and dropped;
//   - session_timeout (the coordinator is shutting down) or silence or a lost connection
//     means: reconnect and resubmit what is unanswered; connecting again waits a backoff
//     doubled per failed attempt (backoff_min..backoff_max);
//   - after reconnect_for without progress (an answer), what is unanswered is answered
//     status error "farm: <last failure>" (an infrastructure status, never stored).
// Threading: one thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "rpc/farm_client.hpp"

namespace atvoss::rpc {

class ClientBatch {
 public:
  using Time = std::chrono::steady_clock::time_point;
  enum class Step {
    connect,   // open a connection, then connected() or failed()
    submit,    // send submission(), or failed()
    receive,   // wait up to silence_timeout: received(), silent() or failed()
    back_off,  // wait delay(), then waited()
    done,      // take_results()
  };

  // items: {"target": key, "request": body} per request, in request order.
  // connected: the client already holds a connection (from an earlier batch).
  // next_id and counters belong to the FarmClient and outlive the batch.
  ClientBatch(std::vector<Json> items, const FarmClientOptions& options, bool connected, Time now,
              std::uint64_t& next_id, FarmClientCounters& counters);

  Step step() const { return step_; }
  void connected();
  // The submit message for every unanswered item, under fresh ids. REQUIRES: step submit.
  Json submission();
  void received(const Json& message, Time now);
  void silent(Time now);
  void failed(const std::string& why, Time now);
  // How long to wait before connecting again. REQUIRES: step back_off.
  std::chrono::milliseconds delay() const { return delay_; }
  void waited();
  // One Measurement per item, in item order. REQUIRES: step done.
  std::vector<Measurement> take_results();
  const std::string& last_error() const { return last_error_; }
  bool all_answered() const { return left_ == 0; }

 private:
  void answer(std::size_t index, Measurement m, Time now);
  // The connection is gone (or going): back off, then connect and resubmit; or give up.
  void lose_connection(std::string why, Time now, std::chrono::milliseconds delay);

  const std::vector<Json> items_;
  const FarmClientOptions& options_;
  std::uint64_t& next_id_;
  FarmClientCounters& counters_;
  std::vector<Measurement> out_;
  std::vector<bool> answered_;
  std::size_t left_;
  std::unordered_map<std::uint64_t, std::size_t> pending_;  // item id -> index
  Step step_;
  Time deadline_;
  std::chrono::milliseconds delay_{0};
  std::chrono::milliseconds connect_backoff_;  // next delay after a failed connect
  int submissions_ = 0;
  std::string last_error_ = "coordinator unreachable";
};

}  // namespace atvoss::rpc
