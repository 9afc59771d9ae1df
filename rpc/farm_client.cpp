#include "rpc/farm_client.hpp"

#include <thread>

#include "core/error.hpp"
#include "rpc/internal/client_batch.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {

using Clock = std::chrono::steady_clock;

namespace {

Json batch_item(const FarmRequest& r) {
  Json request{{"workload", r.workload}, {"schedule", r.schedule}, {"repeat", r.repeat}, {"seed", r.seed}};
  // Only when there are any: a request under the built-ins alone keeps the bytes it always had.
  if (!r.fusion_rules.empty()) request["fusion_rules"] = r.fusion_rules;
  return Json{{"target", r.target_key}, {"request", encode_body(request)}};
}

}  // namespace

FarmClient::FarmClient(FarmClientOptions options) : options_(std::move(options)) {}
FarmClient::~FarmClient() = default;

std::vector<Measurement> FarmClient::measure(const std::vector<FarmRequest>& requests) {
  std::vector<Json> items;  // encoded once, resubmitted as they are
  items.reserve(requests.size());
  for (const FarmRequest& r : requests) items.push_back(batch_item(r));
  ClientBatch batch(std::move(items), options_, channel_ != nullptr, Clock::now(), next_id_, counters_);
  for (;;) {
    try {
      switch (batch.step()) {
        case ClientBatch::Step::connect: {
          ChannelOptions co;
          co.role = Role::client;
          co.token = options_.token;
          channel_ = Channel::open(options_.farm, co);
          batch.connected();
          break;
        }
        case ClientBatch::Step::submit:
          channel_->send(batch.submission());
          break;
        case ClientBatch::Step::receive:
          if (const std::optional<Json> message = channel_->receive(options_.silence_timeout)) {
            batch.received(*message, Clock::now());
          } else {
            batch.silent(Clock::now());
          }
          break;
        case ClientBatch::Step::back_off:
          channel_.reset();
          log_line("farm-client", batch.last_error() + "; reconnecting");
          std::this_thread::sleep_for(batch.delay());
          batch.waited();
          break;
        case ClientBatch::Step::done:
          if (!batch.all_answered()) channel_.reset();  // it gave up on this connection
          return batch.take_results();
      }
    } catch (const Error& e) {
      if (is_permanent_refusal(e)) throw;  // wrong token or version: reconnecting cannot fix it
      batch.failed(e.what(), Clock::now());
    }
  }
}

}  // namespace atvoss::rpc
