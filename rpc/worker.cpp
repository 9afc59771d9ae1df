#include "rpc/worker.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/launch_mode.hpp"
#include "lowering/fusion_rule_scope.hpp"
#include "lowering/fusion_rules.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

namespace {

std::string default_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "worker") + "-" + std::to_string(::getpid());
}

// Tuning batches repeat one workload many times; parsing (validation + key hash) once per
// slot thread for a run of equal workloads saves most of a task's decode cost.
const Workload& parse_workload(const Json& j) {
  thread_local Json last_json;
  thread_local std::optional<Workload> last;
  if (!last || j != last_json) {
    last = Workload::from_json(j);
    last_json = j;
  }
  return *last;
}

// The rules a request asks its item to be lowered under, over this process's own (which hold
// the same built-ins): null when it sends none. bad_input naming the field on a bad declaration
// or a built-in's name; at most kMaxRequestRules, checked before any is read.
constexpr std::size_t kMaxRequestRules = 64;
lowering::FusionRuleSet request_fusion_rules(const Json& request) {
  const auto it = request.find("fusion_rules");
  if (it == request.end() || (it->is_array() && it->empty())) return nullptr;
  if (!it->is_array() || it->size() > kMaxRequestRules) {
    throw_bad_input("request: field 'fusion_rules' must be an array of at most " + std::to_string(kMaxRequestRules) +
                    " rule declarations");
  }
  std::vector<lowering::FusionRule> rules;
  for (std::size_t i = 0; i < it->size(); ++i) {
    rules.push_back(lowering::fusion_rule_from_json((*it)[i], "request: fusion_rules[" + std::to_string(i) + "]"));
  }
  return lowering::fusion_rule_set_with(std::move(rules));
}

// The slots a worker registers: as asked (0: 1), except that a target whose backend limits
// the measurements one machine takes at once (BackendTraits::max_concurrent: the host's
// physical cores, one timed kernel each) sets the default and the cap (docs/host-backend.md
// "A host farm"). A target this machine cannot measure (another CPU's host target) is
// refused here, before the farm could route its work to this machine.
int worker_slots(int asked, const std::vector<Target>& targets) {
  int limit = 0;
  for (const Target& t : targets) {
    backend::check_target(t);
    const int most = backend::target_traits(t).max_concurrent;
    if (most > 0) limit = limit > 0 ? std::min(limit, most) : most;
  }
  if (limit == 0) return asked == 0 ? 1 : asked;
  if (asked > limit) {
    log_line("worker", "--slots " + std::to_string(asked) + " capped at " + std::to_string(limit) +
                           ": its backend measures at most that many at once on this machine");
  }
  return asked == 0 ? limit : std::min(asked, limit);
}

}  // namespace

MeasureFunction backend_measure(double noise) {
  return [noise](const Target& t, const Workload& w, const Schedule& s, int repeat, std::uint64_t seed) {
    return backend::measure_one(backend::MeasureRequest{w, t, s, repeat, seed}, backend::MeasureOptions{noise});
  };
}

namespace {

// A --recorded-dir anyone may write to lets anyone on the machine plant the tables this
// worker measures and the farm stores: refused, as the compile cache refuses an open one
// (docs/protocol.md, "Recorded tables"). Owned by another user is fine: tables are data.
void require_closed_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw_bad_input("--recorded-dir '" + dir + "': not a directory");
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 07777);
    throw_bad_input("--recorded-dir '" + dir + "' is writable by others (mode " + mode.str() +
                    "): anyone could plant a table there; chmod o-w it");
  }
}

}  // namespace

Worker::Worker(WorkerOptions options, MeasureFunction measure)
    : options_(std::move(options)), measure_(measure ? std::move(measure) : backend_measure(options_.noise)) {
  if (options_.targets.empty()) throw_bad_input("worker: at least one --target is needed");
  if (options_.slots < 0 || options_.slots > 4096) throw_bad_input("--slots must be 1..4096");
  options_.slots = worker_slots(options_.slots, options_.targets);
  for (const auto& dir : options_.recorded_dirs) require_closed_dir(dir);
  if (options_.name.empty()) options_.name = default_name();
  if (options_.backends.empty()) {
    options_.backends = backend::backend_names();
  } else {
    // A backend asked for by name must serve one of the targets: `--backend host --target
    // ascend910` started a worker that could measure nothing.
    for (const auto& b : options_.backends) {
      const backend::Backend& named = backend::backend_named(b);  // bad_input if unknown
      const bool serves = std::any_of(options_.targets.begin(), options_.targets.end(),
                                      [&](const Target& t) { return named.serves_target(t); });
      if (!serves) {
        std::string names;
        for (const Target& t : options_.targets) names += (names.empty() ? "" : ", ") + t.name;
        throw_bad_input("--backend " + b + ": serves none of the targets (" + names + "); it serves " +
                        named.targets_served());
      }
    }
  }
  // A part that runs sunk graphs serves jobs of either launch mode: a sunk job's target is
  // another key (core/launch_mode.hpp). Added after the checks above, which name the targets
  // as given.
  for (std::size_t i = 0, given = options_.targets.size(); i < given; ++i) {
    const Target t = options_.targets[i];
    if (t.sunk_launch_us > 0 && launch_mode_of(t) == LaunchMode::host) {
      options_.targets.push_back(launched(t, LaunchMode::sunk, "--target"));
    }
  }
  for (const Target& t : options_.targets) target_keys_.push_back(farm_target_key(t));
  // No deadline or retries here: the coordinator owns both (leases, max_retries).
  slots_ = std::make_unique<backend::MeasurePool>(backend::MeasurePoolOptions{options_.slots, {}, 0});
  writer_ = std::thread([this] { writer_loop(); });
}

Worker::~Worker() {
  stop();
  {
    const std::lock_guard lock(mu_);
    channel_.reset();
  }
  results_cv_.notify_all();
  writer_.join();  // first: it reads the slots' queue
  slots_.reset();
}

void Worker::stop() {
  stopping_ = true;
  std::shared_ptr<Channel> channel;
  {
    const std::lock_guard lock(mu_);
    channel = channel_;
  }
  if (channel) channel->close();
  results_cv_.notify_all();
  stop_cv_.notify_all();
}

void Worker::run() {
  auto backoff = options_.backoff_min;
  int attempts = 0;
  while (!stopping_) {
    std::shared_ptr<Channel> channel;
    try {
      ChannelOptions co;
      co.role = Role::worker;
      co.token = options_.token;
      channel = Channel::open(options_.farm, co);
    } catch (const Error& e) {
      if (is_permanent_refusal(e)) throw;  // wrong token or version: retrying cannot help
      ++attempts;
      if (options_.max_connect_attempts > 0 && attempts >= options_.max_connect_attempts) throw;
      log_line("worker", std::string(e.what()) + "; retrying in " + std::to_string(backoff.count()) + " ms");
      std::unique_lock lock(mu_);
      stop_cv_.wait_for(lock, backoff, [this] { return stopping_.load(); });
      backoff = std::min(backoff * 2, options_.backoff_max);
      continue;
    }
    attempts = 0;
    backoff = options_.backoff_min;
    std::uint64_t generation = 0;
    {
      const std::lock_guard lock(mu_);
      generation = ++generation_;
      channel_ = channel;
      results_ = Json::array();
    }
    if (stopping_) channel->close();
    serve(*channel, generation);
    {
      const std::lock_guard lock(mu_);
      ++generation_;  // whatever is still queued or running belongs to a dead lease
      channel_.reset();
      results_ = Json::array();
    }
  }
}

void Worker::serve(Channel& channel, std::uint64_t generation) {
  Json targets = Json::array(), descriptions = Json::array();
  for (std::size_t i = 0; i < options_.targets.size(); ++i) {
    const Target& t = options_.targets[i];
    targets.push_back(target_keys_[i]);
    descriptions.push_back(Json{{"key", target_keys_[i]}, {"name", t.name}, {"description", t.to_json()}});
  }
  try {
    channel.send(Json{{"type", "register"},
                      {"targets", targets},
                      {"descriptions", descriptions},
                      {"backends", options_.backends},
                      {"slots", options_.slots},
                      {"name", options_.name}});
    log_line("worker", options_.name + " connected to " + options_.farm.to_string() + " with " +
                           std::to_string(options_.slots) + " slots");
    while (!stopping_) {
      std::optional<Json> message = channel.receive(std::chrono::milliseconds(500));
      if (!message || message->at("type") != "tasks") continue;
      for (const Json& task : message->value("tasks", Json::array())) assign(task, generation);
    }
  } catch (const Error& e) {
    if (!stopping_) log_line("worker", std::string("connection lost: ") + e.what());
  }
}

Measurement Worker::measure_task(const Json& task) {
  bool table = false;  // a recorded table's errors are not passed on (table_refusal)
  try {
    const std::string target_key = task.at("target").get<std::string>();
    const auto key = std::find(target_keys_.begin(), target_keys_.end(), target_key);
    if (key == target_keys_.end()) {
      // Defence in depth: the farm routes by these keys, so only a faulty farm gets here.
      std::string served;
      for (const std::string& k : target_keys_) served += (served.empty() ? "" : ", ") + k;
      return Measurement::failed(Status::error,
                                 "worker has no target with key " + target_key + " (it serves " + served + ")");
    }
    const Json request = decode_body(task.at("request"), "task 'request'");
    // In force while this item is lowered and measured, on this slot's thread only.
    const lowering::FusionRuleScope rules(request_fusion_rules(request));
    const Workload& workload = parse_workload(request.at("workload"));
    const Schedule schedule = Schedule::from_json(request.at("schedule"));
    const int repeat = request.value("repeat", 1);
    if (repeat < 1 || repeat > 1000) throw_bad_input("request: field 'repeat' must be 1..1000");
    table = workload.is_recorded();
    if (table) {
      if (const auto why = table_refusal(workload.table())) return Measurement::failed(Status::error, *why);
    }
    const Target& target = options_.targets[static_cast<std::size_t>(key - target_keys_.begin())];
    const std::string served_by = backend::backend_for(workload, target).name();
    if (std::find(options_.backends.begin(), options_.backends.end(), served_by) == options_.backends.end()) {
      return Measurement::failed(Status::error, "worker does not serve backend " + served_by);
    }
    const Measurement m = measure_(target, workload, schedule, repeat, request.value("seed", std::uint64_t{0}));
    if (options_.emulate_device_latency) {
      const double us = options_.compile_ms * 1000.0 + (m.ok() ? static_cast<double>(repeat) * m.time_us : 0.0);
      std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(us));
    }
    return m;
  } catch (const std::exception& e) {
    // A request this worker cannot read (e.g. an op a newer client knows) says nothing
    // about the schedule: report it as an infrastructure error so it is never stored. A
    // table's parse error may quote its lines: the client gets none of them.
    return Measurement::failed(Status::error, table ? std::string("worker: the recorded table could not be read")
                                                    : std::string("worker: ") + e.what());
  }
}

std::optional<std::string> Worker::table_refusal(const std::string& path) const {
  namespace fs = std::filesystem;
  const std::string refused = "worker: recorded table '" + path + "' is not served here";
  if (options_.recorded_dirs.empty()) return refused + " (this worker serves none: start it with --recorded-dir)";
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec || fs::status(real, ec).type() != fs::file_type::regular) return refused + " (not a regular file)";
  for (const auto& dir : options_.recorded_dirs) {
    const fs::path root = fs::canonical(dir, ec);
    if (ec) continue;
    const auto rel = real.lexically_relative(root);
    if (!rel.empty() && *rel.begin() != "..") return std::nullopt;
  }
  return refused + " (outside its --recorded-dir)";
}

void Worker::assign(const Json& task, std::uint64_t generation) {
  auto stale = [this, generation] {
    const std::lock_guard lock(mu_);
    return generation != generation_;
  };
  slots_->submit(
      [this, task, stale]() -> Measurement {
        // Queued before the connection was lost: the coordinator has requeued it already.
        if (stale()) return Measurement::failed(Status::error, "lease lost with the connection");
        Measurement m = measure_task(task);
        measured_.fetch_add(1);
        return m;
      },
      [this, id = task.value("id", Json()), generation](Measurement m) {
        Json result{
            {"id", id}, {"status", std::string(to_string(m.status))}, {"measurement", encode_body(m.to_json())}};
        {
          const std::lock_guard lock(mu_);
          if (generation != generation_) return;  // the lease died with the old connection
          results_.push_back(std::move(result));
        }
        results_cv_.notify_one();
      });
}

void Worker::writer_loop() {
  auto next_heartbeat = std::chrono::steady_clock::now() + options_.heartbeat_interval;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    results_cv_.wait_until(lock, next_heartbeat, [this] { return stopping_ || !results_.empty(); });
    if (stopping_) return;
    if (!results_.empty() && slots_->queued() > 0) {
      // More results are seconds away from ready: let the slots finish them so one frame
      // carries several (fewer syscalls and wake-ups on both ends of the connection).
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    std::shared_ptr<Channel> channel = channel_;
    Json batch = Json::array();
    batch.swap(results_);
    const bool heartbeat_due = std::chrono::steady_clock::now() >= next_heartbeat;
    lock.unlock();
    if (channel) {
      try {
        if (!batch.empty()) channel->send(Json{{"type", "results"}, {"results", std::move(batch)}});
        if (heartbeat_due) channel->send(Json{{"type", "heartbeat"}});
      } catch (const Error&) {
        channel->close();  // the reader notices and reconnects
      }
    }
    if (heartbeat_due) next_heartbeat = std::chrono::steady_clock::now() + options_.heartbeat_interval;
    lock.lock();
  }
}

}  // namespace atvoss::rpc
