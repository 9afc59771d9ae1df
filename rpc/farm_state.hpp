// FarmState: every rule of the tuning farm (leases, retries, de-duplication, heartbeats,
// queue bookkeeping) as a state machine with no sockets, threads or clock of its own.
// The coordinator (its Farm, rpc/internal/farm_session.hpp) is a shell around it: it turns what happens on its
// connections into events (a peer logged in, a message arrived, a peer went away, time
// passed), feeds them in, and carries out the FarmActions each event returns (messages to
// send, connections to close, results to log). Time is read only from the injected clock,
// so tests drive every rule deterministically (tests/rpc/farm_state_test.cpp).
// The rules (docs/protocol.md, "Worker messages" and "Client messages", has the wire side):
//   - a worker never holds more tasks than its slots (backpressure lives in the queue);
//   - a worker silent for missed_heartbeats intervals, or gone, is removed and its tasks
//     are requeued at the front; after max_retries losses a task is answered worker_lost;
//   - a task leased longer than task_lease (a worker alive but silent on that item) is taken
//     back and requeued the same way; until that worker answers the item late, its slot
//     stays counted as busy, so nothing more queues behind the stuck item;
//   - a result from a worker that no longer holds the task's lease is ignored (late);
//   - identical requests in flight from different clients are measured once;
//   - a client that goes away gives up its waiters; tasks nobody waits for any more and
//     that no worker holds are cancelled, with their queue entries;
//   - while draining, new items are answered session_timeout at once.
// Threading: not thread-safe; the coordinator calls it under one mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/json.hpp"
#include "core/measurement.hpp"
#include "rpc/auth.hpp"
#include "rpc/metrics.hpp"

namespace atvoss::rpc {

using SessionId = std::uint64_t;
using FarmTime = std::chrono::steady_clock::time_point;
using FarmClock = std::function<FarmTime()>;

struct FarmRules {
  std::chrono::milliseconds heartbeat_interval{1000};  // clients get a heartbeat per on_tick
  int missed_heartbeats = 3;                           // a worker silent this many intervals is removed
  int max_retries = 3;                                 // requeues of one task before worker_lost
  std::chrono::milliseconds task_lease{600000};        // one task's longest run on a worker (0: no limit)
};

// What the shell must do after an event, in this order: sends, closes, log writes.
struct FarmActions {
  struct Send {
    SessionId to;
    Json message;  // a whole farm message ({"type": ...}); the shell frames it
  };
  struct Record {  // one relayed result for the farm log (rpc/farm_log.hpp)
    std::string target;
    Json request, measurement;  // bodies (bin)
  };
  struct TargetNote {  // a target description from a worker's register message
    std::string key, name;
    Json description;
  };
  std::vector<Send> sends;
  std::vector<SessionId> closes;
  std::vector<Record> records;
  std::vector<TargetNote> targets;
};

// Sizes of the farm for /metrics.
struct FarmLoad {
  std::size_t workers = 0, slots = 0, busy = 0, tasks = 0;
};

class FarmState {
 public:
  // metrics: counted into (FarmMetrics is thread-safe, so the shell may read it meanwhile).
  FarmState(FarmRules rules, FarmClock clock, FarmMetrics& metrics);

  // A peer logged in. peer: its address, for log lines.
  FarmActions on_connected(SessionId id, Role role, std::string peer);
  // A message from a logged-in peer (a "stats" request is the shell's: it counts the
  // connections). Throws Error(protocol) naming the field for a message its role may not
  // send or that breaks the protocol; the shell then closes that peer.
  FarmActions on_message(SessionId id, Json& message);
  // A logged-in peer went away (either side closed it).
  FarmActions on_disconnected(SessionId id);
  // Time passed (the shell calls it every heartbeat interval): removes silent workers and
  // sends each client a heartbeat, so it knows the coordinator is alive while tasks run.
  FarmActions on_tick();
  // From now on new items are answered session_timeout (graceful shutdown).
  void set_draining() { draining_ = true; }
  // Answers every task, queued or leased, with session_timeout (why) and empties the queues.
  FarmActions expire_all(std::string_view why);

  bool drained() const { return tasks_.empty(); }
  // /v1/stats without "sessions" (the shell counts connections, logged in or not).
  Json stats() const;
  FarmLoad load() const;

 private:
  struct Waiter {
    SessionId client = 0;
    Json item_id;  // the client's id for this item, echoed back
    FarmTime since;
  };
  struct Task {
    std::string identity;  // target + request bytes: what de-duplication compares
    std::string target;
    Json request;  // the request body (bin): opaque here
    int retries = 0;
    SessionId worker = 0;  // holder of the lease; 0 while queued
    FarmTime leased_at;
    std::vector<Waiter> waiters;
  };
  struct WorkerInfo {
    std::vector<std::string> targets;
    std::vector<std::string> backends;  // as registered; empty from workers that name none
    std::string name = "worker";
    std::string peer;
    int slots = 1;
    std::unordered_set<std::uint64_t> in_flight;
    std::unordered_set<std::uint64_t> taken_back;  // leases that ran out here, not answered yet
    FarmTime last_seen;
    bool registered = false;
  };
  using Cancelled = std::unordered_map<std::string, std::unordered_set<std::uint64_t>>;

  void on_register(WorkerInfo& w, const Json& message, FarmActions& out);
  void on_submit(SessionId client, Json& message, FarmActions& out);
  void on_results(SessionId worker_id, WorkerInfo& w, const Json& message, FarmActions& out);
  void dispatch(const std::string& target, FarmActions& out);
  void remove_worker(SessionId id, FarmActions& out);
  void take_back_expired_leases(FarmTime now, FarmActions& out);
  // Requeues a task whose lease ended (worker lost, or lease run out) at the front, or
  // answers it worker_lost past max_retries. Returns whether it was requeued.
  bool requeue(std::uint64_t task_id, const std::string& why, FarmActions& out);
  int busy_slots(const WorkerInfo& w) const { return static_cast<int>(w.in_flight.size() + w.taken_back.size()); }
  void drop_client(SessionId id);
  // Answers every waiter of the task into the outbox and forgets the task.
  void relay(std::uint64_t task_id, const std::string& status, const Json& measurement, FarmActions& out);
  void answer_now(SessionId client, const Json& item_id, Status status, const std::string& why);
  // Moves the outbox into one results message per client still connected.
  void flush_outbox(FarmActions& out);
  // Removes cancelled tasks' queue entries and queues left empty (one pass per queue).
  void drop_queued(const Cancelled& cancelled);

  const FarmRules rules_;
  const FarmClock clock_;
  FarmMetrics& metrics_;
  std::unordered_map<SessionId, Role> peers_;  // logged in
  std::map<SessionId, WorkerInfo> workers_;
  std::unordered_map<std::uint64_t, Task> tasks_;
  std::unordered_map<std::string, std::uint64_t> by_identity_;
  std::unordered_map<std::string, std::deque<std::uint64_t>> queues_;
  std::unordered_map<SessionId, Json> outbox_;  // client -> results array
  std::uint64_t next_task_ = 1;
  bool draining_ = false;
};

}  // namespace atvoss::rpc
