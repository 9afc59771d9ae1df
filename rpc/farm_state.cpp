// FarmState. Read in this order: events (on_connected .. expire_all), then the rules they
// share: on_submit -> dispatch -> on_results -> relay; remove_worker requeues.
#include "rpc/farm_state.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

namespace {

Json failure_body(Status status, std::string message) {
  return encode_body(Measurement::failed(status, std::move(message)).to_json());
}

// The backends a worker says it measures with: optional (workers before the field
// existed send none), at most 16 names of at most 64 bytes each.
std::vector<std::string> registered_backends(const Json& message) {
  std::vector<std::string> out;
  const auto it = message.find("backends");
  if (it == message.end()) return out;
  if (!it->is_array() || it->size() > 16) {
    throw Error(ErrorKind::protocol, "register: 'backends' must be an array of at most 16 names");
  }
  for (const Json& b : *it) {
    if (!b.is_string() || b.get<std::string>().empty() || b.get<std::string>().size() > 64) {
      throw Error(ErrorKind::protocol, "register: 'backends' must hold names of 1..64 bytes");
    }
    out.push_back(b.get<std::string>());
  }
  return out;
}

}  // namespace

FarmState::FarmState(FarmRules rules, FarmClock clock, FarmMetrics& metrics)
    : rules_(rules), clock_(std::move(clock)), metrics_(metrics) {}

// ---------------------------------------------------------------- events

FarmActions FarmState::on_connected(SessionId id, Role role, std::string peer) {
  peers_[id] = role;
  if (role == Role::worker) {
    WorkerInfo& w = workers_[id];
    w.peer = std::move(peer);
    w.last_seen = clock_();
  }
  return {};
}

FarmActions FarmState::on_message(SessionId id, Json& message) {
  FarmActions out;
  const auto peer = peers_.find(id);
  if (peer == peers_.end()) return out;  // gone already; nothing it says counts
  const Role role = peer->second;
  const std::string& type = message.at("type").get_ref<const std::string&>();
  if (type == "heartbeat") {
    if (auto it = workers_.find(id); it != workers_.end()) it->second.last_seen = clock_();
    return out;
  }
  if (role == Role::worker && (type == "register" || type == "results")) {
    const auto it = workers_.find(id);
    if (it == workers_.end()) return out;  // already removed (missed heartbeats): its lease is gone
    it->second.last_seen = clock_();
    if (type == "register") {
      on_register(it->second, message, out);
    } else {
      on_results(id, it->second, message, out);
    }
    flush_outbox(out);
    return out;
  }
  if (role == Role::client && type == "submit") {
    on_submit(id, message, out);
    flush_outbox(out);
    return out;
  }
  throw Error(ErrorKind::protocol,
              "message type '" + type + "' is not allowed for role " + std::string(to_string(role)));
}

FarmActions FarmState::on_disconnected(SessionId id) {
  FarmActions out;
  const auto peer = peers_.find(id);
  if (peer == peers_.end()) return out;
  const Role role = peer->second;
  peers_.erase(peer);
  if (role == Role::worker) remove_worker(id, out);
  if (role == Role::client) drop_client(id);
  outbox_.erase(id);
  flush_outbox(out);
  return out;
}

FarmActions FarmState::on_tick() {
  FarmActions out;
  const FarmTime now = clock_();
  const auto limit = rules_.heartbeat_interval * rules_.missed_heartbeats;
  std::vector<SessionId> silent;
  for (const auto& [id, w] : workers_) {
    if (now - w.last_seen > limit) silent.push_back(id);
  }
  for (const SessionId id : silent) {
    log_line("farm",
             "worker " + workers_[id].name + " missed " + std::to_string(rules_.missed_heartbeats) + " heartbeats");
    remove_worker(id, out);  // its lease ends now; anything it sends later is late
    out.closes.push_back(id);
  }
  take_back_expired_leases(now, out);
  flush_outbox(out);
  for (const auto& [id, role] : peers_) {
    if (role == Role::client) out.sends.push_back({id, Json{{"type", "heartbeat"}}});
  }
  return out;
}

FarmActions FarmState::expire_all(std::string_view why) {
  FarmActions out;
  std::vector<std::uint64_t> ids;
  for (const auto& [id, t] : tasks_) ids.push_back(id);
  const Json body = failure_body(Status::session_timeout, std::string(why));
  for (const std::uint64_t id : ids) relay(id, "session_timeout", body, out);
  queues_.clear();  // every task was answered, queued ones included
  for (auto& [id, w] : workers_) w.in_flight.clear();
  flush_outbox(out);
  return out;
}

// ---------------------------------------------------------------- rules

void FarmState::on_register(WorkerInfo& w, const Json& message, FarmActions& out) {
  const auto targets = message.find("targets");
  const auto slots = message.find("slots");
  if (targets == message.end() || !targets->is_array() || targets->empty() || slots == message.end() ||
      !slots->is_number_integer() || *slots < 1 || *slots > 4096) {
    throw Error(ErrorKind::protocol,
                "register: needs 'targets' (non-empty array of target keys) and 'slots' (1..4096)");
  }
  std::vector<std::string> keys;
  for (const Json& t : *targets) {
    if (!t.is_string()) throw Error(ErrorKind::protocol, "register: 'targets' must hold strings");
    keys.push_back(t.get<std::string>());
  }
  w.backends = registered_backends(message);
  w.targets = std::move(keys);
  w.slots = slots->get<int>();
  w.name = message.value("name", std::string("worker"));
  w.registered = true;
  if (const auto d = message.find("descriptions"); d != message.end() && d->is_array()) {
    for (const Json& entry : *d) {
      if (entry.is_object() && entry.value("key", Json()).is_string() && entry.value("name", Json()).is_string()) {
        out.targets.push_back({entry["key"].get<std::string>(), entry["name"].get<std::string>(),
                               entry.value("description", Json::object())});
      }
    }
  }
  log_line("farm", "worker " + w.name + " (" + w.peer + ") registered " + std::to_string(w.slots) + " slots");
  for (const std::string& t : w.targets) dispatch(t, out);
}

void FarmState::on_submit(SessionId client, Json& message, FarmActions& out) {
  const auto items = message.find("items");
  if (items == message.end() || !items->is_array()) {
    throw Error(ErrorKind::protocol, "submit: field 'items' must be an array");
  }
  const FarmTime now = clock_();
  std::unordered_set<std::string> touched;
  for (Json& item : *items) {
    const Json item_id = item.is_object() ? item.value("id", Json()) : Json();
    if (draining_) {
      answer_now(client, item_id, Status::session_timeout, "coordinator is shutting down");
      continue;
    }
    const auto target = item.is_object() ? item.find("target") : item.end();
    const auto request = item.is_object() ? item.find("request") : item.end();
    if (item_id.is_null() || target == item.end() || !target->is_string() || request == item.end() ||
        !request->is_binary()) {
      answer_now(client, item_id, Status::error, "submit: an item needs an id, a target key and a request body (bin)");
      continue;
    }
    // Identity = target + the request bytes: canonical, exact, and no JSON tree to build.
    std::string identity = target->get_ref<const std::string&>();
    identity += '\n';
    identity += body_bytes(*request);
    Waiter waiter{client, item_id, now};
    metrics_.count_submitted();
    if (const auto found = by_identity_.find(identity); found != by_identity_.end()) {
      tasks_[found->second].waiters.push_back(std::move(waiter));
      metrics_.count_deduplicated();
      continue;
    }
    const std::uint64_t id = next_task_++;
    Task& task = tasks_[id];
    task.identity = identity;
    task.target = target->get<std::string>();
    task.request = std::move(*request);
    task.waiters.push_back(std::move(waiter));
    by_identity_.emplace(std::move(identity), id);
    queues_[task.target].push_back(id);
    touched.insert(task.target);
  }
  for (const std::string& t : touched) dispatch(t, out);
}

void FarmState::dispatch(const std::string& target, FarmActions& out) {
  auto queue_it = queues_.find(target);
  if (queue_it == queues_.end() || queue_it->second.empty()) return;
  std::deque<std::uint64_t>& queue = queue_it->second;
  struct Assigned {
    SessionId worker;
    WorkerInfo* info;
    Json tasks = Json::array();
  };
  std::vector<Assigned> assigned;
  for (auto& [id, w] : workers_) {
    if (!w.registered || std::find(w.targets.begin(), w.targets.end(), target) == w.targets.end()) continue;
    if (busy_slots(w) < w.slots) assigned.push_back({id, &w});
  }
  // Round robin, one task per worker per turn: spreads a batch over the free slots
  // instead of filling the first worker, and never past a worker's slot count.
  bool progress = true;
  while (!queue.empty() && progress) {
    progress = false;
    for (Assigned& a : assigned) {
      if (queue.empty()) break;
      if (busy_slots(*a.info) >= a.info->slots) continue;
      const std::uint64_t id = queue.front();
      queue.pop_front();
      progress = true;
      const auto t = tasks_.find(id);
      if (t == tasks_.end() || t->second.worker != 0) continue;  // cancelled or stale entry
      t->second.worker = a.worker;
      t->second.leased_at = clock_();
      a.info->in_flight.insert(id);
      a.tasks.push_back(Json{{"id", id}, {"target", target}, {"request", t->second.request}});
    }
  }
  for (Assigned& a : assigned) {
    if (!a.tasks.empty()) out.sends.push_back({a.worker, Json{{"type", "tasks"}, {"tasks", std::move(a.tasks)}}});
  }
  // Targets come from clients: an empty queue left behind per target would grow forever.
  if (queue.empty()) queues_.erase(queue_it);
}

void FarmState::on_results(SessionId worker_id, WorkerInfo& w, const Json& message, FarmActions& out) {
  const auto results = message.find("results");
  if (results == message.end() || !results->is_array()) {
    throw Error(ErrorKind::protocol, "results: field 'results' must be an array");
  }
  for (const Json& r : *results) {
    if (!r.is_object() || !r.contains("id") || !r["id"].is_number_unsigned() || !r.contains("status") ||
        !r["status"].is_string() || !r.contains("measurement") || !r["measurement"].is_binary()) {
      throw Error(ErrorKind::protocol,
                  "results: each entry needs an unsigned 'id', a string "
                  "'status' and a 'measurement' body (bin)");
    }
    const std::uint64_t id = r["id"].get<std::uint64_t>();
    w.taken_back.erase(id);  // a late answer frees the slot its stuck item held
    const auto t = tasks_.find(id);
    if (t == tasks_.end() || t->second.worker != worker_id) {
      metrics_.count_late_result();  // the lease moved on: another worker owns this task now
      continue;
    }
    w.in_flight.erase(id);
    relay(id, r["status"].get_ref<const std::string&>(), r["measurement"], out);
  }
  for (const std::string& target : w.targets) dispatch(target, out);
}

void FarmState::relay(std::uint64_t task_id, const std::string& status, const Json& measurement, FarmActions& out) {
  const auto t = tasks_.find(task_id);
  if (t == tasks_.end()) return;
  const FarmTime now = clock_();
  metrics_.count_measured(status);
  for (const Waiter& waiter : t->second.waiters) {
    metrics_.add_latency(std::chrono::duration<double, std::micro>(now - waiter.since).count());
    Json& batch = outbox_[waiter.client];
    if (batch.is_null()) batch = Json::array();
    batch.push_back(Json{{"id", waiter.item_id}, {"status", status}, {"measurement", measurement}});
  }
  out.records.push_back({t->second.target, t->second.request, measurement});
  by_identity_.erase(t->second.identity);
  tasks_.erase(t);
}

void FarmState::answer_now(SessionId client, const Json& item_id, Status status, const std::string& why) {
  metrics_.count_measured(to_string(status));
  Json& batch = outbox_[client];
  if (batch.is_null()) batch = Json::array();
  batch.push_back(Json{{"id", item_id}, {"status", to_string(status)}, {"measurement", failure_body(status, why)}});
}

void FarmState::flush_outbox(FarmActions& out) {
  for (auto& [client, results] : outbox_) {
    if (!peers_.contains(client)) continue;  // the client left; its answers go nowhere
    out.sends.push_back({client, Json{{"type", "results"}, {"results", std::move(results)}}});
  }
  outbox_.clear();
}

void FarmState::drop_queued(const Cancelled& cancelled) {
  for (const auto& [target, ids] : cancelled) {
    const auto q = queues_.find(target);
    if (q == queues_.end()) continue;
    std::erase_if(q->second, [&ids](std::uint64_t id) { return ids.contains(id); });
    if (q->second.empty()) queues_.erase(q);
  }
}

void FarmState::remove_worker(SessionId id, FarmActions& out) {
  const auto it = workers_.find(id);
  if (it == workers_.end()) return;
  WorkerInfo w = std::move(it->second);
  workers_.erase(it);
  metrics_.count_worker_lost();
  log_line("farm", "worker " + w.name + " removed; requeueing " + std::to_string(w.in_flight.size()) + " tasks");
  std::unordered_set<std::string> touched;
  for (const std::uint64_t task_id : w.in_flight) {
    const auto t = tasks_.find(task_id);
    if (t != tasks_.end() && requeue(task_id, "lost with", out)) touched.insert(t->second.target);
  }
  for (const std::string& t : touched) dispatch(t, out);
}

bool FarmState::requeue(std::uint64_t task_id, const std::string& why, FarmActions& out) {
  Task& task = tasks_.at(task_id);
  task.worker = 0;
  if (++task.retries > rules_.max_retries) {
    relay(task_id, "worker_lost",
          failure_body(Status::worker_lost,
                       why + " " + std::to_string(task.retries) + " workers in turn; not a property of the schedule"),
          out);
    return false;
  }
  metrics_.count_retry();
  queues_[task.target].push_front(task_id);  // first in line: it has waited longest
  return true;
}

void FarmState::take_back_expired_leases(FarmTime now, FarmActions& out) {
  if (rules_.task_lease.count() <= 0) return;
  std::unordered_set<std::string> touched;
  for (auto& [worker_id, w] : workers_) {
    std::vector<std::uint64_t> expired;
    for (const std::uint64_t id : w.in_flight) {
      const auto t = tasks_.find(id);
      if (t != tasks_.end() && now - t->second.leased_at > rules_.task_lease) expired.push_back(id);
    }
    for (const std::uint64_t id : expired) {
      log_line("farm", "worker " + w.name + " gave no answer for task " + std::to_string(id) + " within its " +
                           std::to_string(rules_.task_lease.count()) + " ms lease; taking it back");
      w.in_flight.erase(id);
      w.taken_back.insert(id);
      const std::string target = tasks_.at(id).target;
      if (requeue(id, "no answer within the lease from", out)) touched.insert(target);
    }
  }
  for (const std::string& t : touched) dispatch(t, out);
}

void FarmState::drop_client(SessionId id) {
  // A queued task nobody waits for any more is cancelled, and so is its queue entry
  // (else queues_ grows with every client that leaves). A leased one runs to its end.
  Cancelled cancelled;
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    auto& waiters = it->second.waiters;
    std::erase_if(waiters, [id](const Waiter& w) { return w.client == id; });
    if (waiters.empty() && it->second.worker == 0) {
      cancelled[it->second.target].insert(it->first);
      by_identity_.erase(it->second.identity);
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
  drop_queued(cancelled);
}

// ---------------------------------------------------------------- reading

Json FarmState::stats() const {
  Json workers = Json::array();
  std::size_t slots = 0, busy = 0;
  for (const auto& [id, w] : workers_) {
    workers.push_back(Json{{"session", id},
                           {"name", w.name},
                           {"targets", w.targets},
                           {"backends", w.backends},
                           {"slots", w.slots},
                           {"in_flight", w.in_flight.size()}});
    slots += static_cast<std::size_t>(w.slots);
    busy += w.in_flight.size();
  }
  std::size_t queued = 0;
  for (const auto& [target, q] : queues_) queued += q.size();
  Json out = metrics_.to_json();
  out["workers"] = std::move(workers);
  out["slots_total"] = slots;
  out["slots_busy"] = busy;
  out["tasks_pending"] = tasks_.size();
  out["queue_depth"] = tasks_.size() - busy;
  out["queue_entries"] = queued;
  out["draining"] = draining_;
  return out;
}

FarmLoad FarmState::load() const {
  FarmLoad l;
  l.workers = workers_.size();
  for (const auto& [id, w] : workers_) {
    l.slots += static_cast<std::size_t>(w.slots);
    l.busy += w.in_flight.size();
  }
  l.tasks = tasks_.size();
  return l;
}

}  // namespace atvoss::rpc
