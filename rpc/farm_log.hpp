// FarmLog: the coordinator's farm-wide record of every result it relays (--db). Results are handed to a background
// thread that stores them in batches (one transaction per batch), so the farm's dispatch path never waits on SQLite.
// Infrastructure statuses (worker_lost, session_timeout, error) are never stored: they say nothing of the schedule
// (docs/protocol.md, "Statuses"). Threading: record() and note_target() are thread-safe and non-blocking; the database
// connection belongs to the background thread (TuningDatabase is one-per-thread).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/json.hpp"

namespace atvoss::rpc {

class FarmLog {
 public:
  virtual ~FarmLog() = default;  // stores what is queued, then stops the thread
  // Remembers the description of a target key (from a worker's register message).
  virtual void note_target(const std::string& key, const std::string& name, const Json& description) = 0;
  // Queues one relayed result: the request and measurement bodies (bins, protocol.hpp),
  // decoded on the background thread.
  virtual void record(const std::string& target_key, const Json& request, const Json& measurement) = 0;
};

// Opens (creating if needed) the database at path now, so a bad path fails at start-up
// (Error io/corrupt/bad_input from the database).
std::unique_ptr<FarmLog> open_farm_log(const std::string& path);

}  // namespace atvoss::rpc
