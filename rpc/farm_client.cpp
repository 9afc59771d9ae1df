#include "rpc/farm_client.hpp"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "core/error.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

using Clock = std::chrono::steady_clock;

namespace {

Json request_body(const FarmRequest& r) {
  return encode_body(Json{{"workload", r.workload}, {"schedule", r.schedule}, {"repeat", r.repeat}, {"seed", r.seed}});
}

}  // namespace

FarmClient::FarmClient(FarmClientOptions options) : options_(std::move(options)) {}
FarmClient::~FarmClient() = default;

void FarmClient::ensure_connected(Clock::time_point deadline) {
  auto backoff = options_.backoff_min;
  for (;;) {
    try {
      ChannelOptions co;
      co.role = Role::client;
      co.token = options_.token;
      channel_ = Channel::open(options_.farm, co);
      return;
    } catch (const Error& e) {
      if (is_permanent_refusal(e)) throw;
      if (Clock::now() + backoff > deadline) throw;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
  }
}

std::vector<Measurement> FarmClient::measure(const std::vector<FarmRequest>& requests) {
  std::vector<Measurement> out(requests.size());
  std::unordered_map<std::uint64_t, std::size_t> pending;  // item id -> request index
  std::vector<bool> answered(requests.size(), false);
  std::size_t left = requests.size();
  auto deadline = Clock::now() + options_.reconnect_for;
  bool need_submit = true;
  bool first_submission = true;
  std::string last_error = "coordinator unreachable";
  std::vector<Json> bodies;  // encoded once, resubmitted as they are
  bodies.reserve(requests.size());
  for (const FarmRequest& r : requests) bodies.push_back(request_body(r));

  while (left > 0) {
    try {
      if (!channel_) {
        if (connected_once_) ++counters_.reconnects;
        ensure_connected(deadline);
        connected_once_ = true;
        need_submit = true;
      }
      if (need_submit) {
        // Fresh ids per submission: an answer to an id from a previous connection can
        // then never be mistaken for the answer to the resubmitted request.
        pending.clear();
        Json items = Json::array();
        for (std::size_t i = 0; i < requests.size(); ++i) {
          if (answered[i]) continue;
          const std::uint64_t id = next_id_++;
          pending.emplace(id, i);
          items.push_back(Json{{"id", id}, {"target", requests[i].target_key}, {"request", bodies[i]}});
        }
        if (!first_submission) counters_.resubmitted += items.size();
        first_submission = false;
        channel_->send(Json{{"type", "submit"}, {"items", std::move(items)}});
        need_submit = false;
      }
      const std::optional<Json> message = channel_->receive(options_.silence_timeout);
      if (!message) throw Error(ErrorKind::io, "coordinator silent for " +
                                                   std::to_string(options_.silence_timeout.count()) + " ms");
      if (message->at("type") != "results") continue;  // heartbeats
      bool retry_later = false;
      for (const Json& r : message->value("results", Json::array())) {
        const auto id = r.value("id", Json());
        if (!id.is_number_unsigned()) continue;
        const auto it = pending.find(id.get<std::uint64_t>());
        ++counters_.answers;
        if (it == pending.end() || answered[it->second]) {
          ++counters_.duplicate_answers;
          continue;
        }
        if (r.value("status", std::string()) == "session_timeout") {
          retry_later = true;  // the coordinator is going away; ask its successor
          pending.erase(it);
          continue;
        }
        Measurement m;
        try {
          m = Measurement::from_json(decode_body(r.at("measurement"), "answer 'measurement'"));
        } catch (const std::exception& e) {
          m = Measurement::failed(Status::error, std::string("unreadable answer from the farm: ") + e.what());
        }
        if (m.status == Status::session_timeout) {
          retry_later = true;  // the coordinator is going away; ask its successor
          pending.erase(it);
          continue;
        }
        out[it->second] = std::move(m);
        answered[it->second] = true;
        pending.erase(it);
        --left;
        deadline = Clock::now() + options_.reconnect_for;  // progress resets the patience
      }
      if (retry_later) throw Error(ErrorKind::io, "coordinator shutting down");
    } catch (const Error& e) {
      if (is_permanent_refusal(e)) throw;
      last_error = e.what();
      channel_.reset();
      need_submit = true;
      if (Clock::now() > deadline) break;
      log_line("farm-client", last_error + "; reconnecting");
      std::this_thread::sleep_for(options_.backoff_min);
    }
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!answered[i]) out[i] = Measurement::failed(Status::error, "farm: " + last_error);
  }
  return out;
}

}  // namespace atvoss::rpc
