#include "rpc/farm_log.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "db/tuning_database.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

namespace {

struct Pending {
  std::string target_key;
  Json request;
  Json measurement;
};

class DatabaseFarmLog final : public FarmLog {
 public:
  explicit DatabaseFarmLog(const std::string& path)
      : path_(path), check_(db::TuningDatabase::open(path)), thread_([this] { run(); }) {}

  ~DatabaseFarmLog() override {
    {
      const std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  void note_target(const std::string& key, const std::string& name, const Json& description) override {
    const std::lock_guard lock(mu_);
    targets_[key] = db::TargetInfo{key, name, description};
  }

  void record(const std::string& target_key, const Json& request, const Json& measurement) override {
    {
      const std::lock_guard lock(mu_);
      queue_.push_back(Pending{target_key, request, measurement});
    }
    cv_.notify_one();
  }

 private:
  void run() {
    db::TuningDatabase database = db::TuningDatabase::open(path_);
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;
      std::deque<Pending> batch;
      batch.swap(queue_);
      const auto targets = targets_;
      lock.unlock();
      store(database.records(), batch, targets);
      lock.lock();
    }
  }

  static void store(db::RecordStore& database, const std::deque<Pending>& batch,
                    const std::map<std::string, db::TargetInfo>& targets) {
    std::vector<db::Record> records;
    for (const Pending& p : batch) {
      try {
        Measurement m = Measurement::from_json(decode_body(p.measurement, "measurement"));
        if (is_infrastructure_error(m.status)) continue;  // never a property of the schedule
        const Json request = decode_body(p.request, "request");
        const auto t = targets.find(p.target_key);
        db::Record r(Workload::from_json(request.at("workload")),
                     t != targets.end() ? t->second : db::TargetInfo{p.target_key, p.target_key, Json::object()},
                     Schedule::from_json(request.at("schedule")), std::move(m));
        r.worker = "farm";
        records.push_back(std::move(r));
      } catch (const std::exception& e) {
        log_line("farm-db", std::string("skipping a result that does not parse: ") + e.what());
      }
    }
    if (records.empty()) return;
    try {
      database.insert(records);
    } catch (const std::exception& e) {
      log_line("farm-db", "could not store " + std::to_string(records.size()) + " results: " + e.what());
    }
  }

  std::string path_;
  db::TuningDatabase check_;  // opened up front so a bad --db fails at start-up
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  std::map<std::string, db::TargetInfo> targets_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<FarmLog> open_farm_log(const std::string& path) { return std::make_unique<DatabaseFarmLog>(path); }

}  // namespace atvoss::rpc
