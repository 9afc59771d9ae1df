#include "rpc/internal/client_batch.hpp"

#include <algorithm>

#include "rpc/protocol.hpp"

namespace atvoss::rpc {

ClientBatch::ClientBatch(std::vector<Json> items, const FarmClientOptions& options, bool connected, Time now,
                         std::uint64_t& next_id, FarmClientCounters& counters)
    : items_(std::move(items)),
      options_(options),
      next_id_(next_id),
      counters_(counters),
      out_(items_.size()),
      answered_(items_.size(), false),
      left_(items_.size()),
      step_(items_.empty() ? Step::done
            : connected    ? Step::submit
                           : Step::connect),
      deadline_(now + options.reconnect_for),
      connect_backoff_(options.backoff_min) {}

void ClientBatch::connected() {
  step_ = Step::submit;
  connect_backoff_ = options_.backoff_min;
}

Json ClientBatch::submission() {
  pending_.clear();
  Json items = Json::array();
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (answered_[i]) continue;
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, i);
    Json item = items_[i];
    item["id"] = id;
    items.push_back(std::move(item));
  }
  if (submissions_++ > 0) counters_.resubmitted += items.size();
  step_ = Step::receive;
  return Json{{"type", "submit"}, {"items", std::move(items)}};
}

void ClientBatch::received(const Json& message, Time now) {
  if (message.value("type", std::string()) != "results") return;  // heartbeats
  bool coordinator_leaving = false;
  for (const Json& r : message.value("results", Json::array())) {
    const Json id = r.is_object() ? r.value("id", Json()) : Json();
    if (!id.is_number_unsigned()) continue;
    ++counters_.answers;
    const auto it = pending_.find(id.get<std::uint64_t>());
    if (it == pending_.end()) {
      ++counters_.duplicate_answers;
      continue;
    }
    const std::size_t index = it->second;
    pending_.erase(it);
    Measurement m;
    try {
      m = Measurement::from_json(decode_body(r.at("measurement"), "answer 'measurement'"));
    } catch (const std::exception& e) {
      m = Measurement::failed(Status::error, std::string("unreadable answer from the farm: ") + e.what());
    }
    if (m.status == Status::session_timeout || r.value("status", std::string()) == "session_timeout") {
      coordinator_leaving = true;  // ask its successor: resubmitted after reconnecting
      continue;
    }
    answer(index, std::move(m), now);
  }
  if (left_ == 0) {
    step_ = Step::done;
  } else if (coordinator_leaving) {
    lose_connection("coordinator shutting down", now, options_.backoff_min);
  }
}

void ClientBatch::silent(Time now) {
  lose_connection("coordinator silent for " + std::to_string(options_.silence_timeout.count()) + " ms", now,
                  options_.backoff_min);
}

void ClientBatch::failed(const std::string& why, Time now) {
  if (step_ != Step::connect) {
    lose_connection(why, now, options_.backoff_min);
    return;
  }
  lose_connection(why, now, connect_backoff_);
  connect_backoff_ = std::min(connect_backoff_ * 2, options_.backoff_max);
}

void ClientBatch::waited() { step_ = Step::connect; }

std::vector<Measurement> ClientBatch::take_results() {
  for (std::size_t i = 0; i < out_.size(); ++i) {
    if (!answered_[i]) out_[i] = Measurement::failed(Status::error, "farm: " + last_error_);
  }
  return std::move(out_);
}

void ClientBatch::answer(std::size_t index, Measurement m, Time now) {
  out_[index] = std::move(m);
  answered_[index] = true;
  --left_;
  deadline_ = now + options_.reconnect_for;  // progress resets the patience
}

void ClientBatch::lose_connection(std::string why, Time now, std::chrono::milliseconds delay) {
  if (step_ != Step::connect) ++counters_.reconnects;  // a connection we had is gone
  last_error_ = std::move(why);
  step_ = now > deadline_ ? Step::done : Step::back_off;
  delay_ = delay;
}

}  // namespace atvoss::rpc
