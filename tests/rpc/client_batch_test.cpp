// ClientBatch (rpc/internal/client_batch.hpp), FarmClient::measure's rules, driven step by
// step with a fake clock: resubmission under fresh ids, duplicate answers, the coordinator
// leaving (session_timeout), silence, connect backoff and giving up. The farm tests
// (tests/integration/farm_faults_test.cpp) check the same with real processes.
#include <gtest/gtest.h>

#include "core/measurement.hpp"
#include "rpc/internal/client_batch.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {
namespace {

using namespace std::chrono_literals;
using Step = ClientBatch::Step;

class ClientBatchTest : public testing::Test {
 protected:
  ClientBatchTest() {
    options_.reconnect_for = 1000ms;
    options_.silence_timeout = 100ms;
    options_.backoff_min = 10ms;
    options_.backoff_max = 40ms;
  }
  ClientBatch make(int n, bool connected = false) {
    std::vector<Json> items;
    for (int i = 0; i < n; ++i) items.push_back(Json{{"target", "T"}, {"request", encode_body(Json{{"n", i}})}});
    return ClientBatch(std::move(items), options_, connected, now_, next_id_, counters_);
  }
  static Json answer(const Json& id, Status status, double us = 3.0) {
    Measurement m = status == Status::ok ? Measurement{} : Measurement::failed(status, "x");
    if (status == Status::ok) {
      m.time_us = us;
      m.repeats = {us};
    }
    return Json{{"id", id}, {"status", to_string(status)}, {"measurement", encode_body(m.to_json())}};
  }
  static Json results(std::vector<Json> list) { return Json{{"type", "results"}, {"results", list}}; }
  static std::vector<Json> ids(const Json& submission) {
    std::vector<Json> out;
    for (const Json& item : submission.at("items")) out.push_back(item.at("id"));
    return out;
  }

  FarmClientOptions options_;
  FarmClientCounters counters_;
  std::uint64_t next_id_ = 1;
  ClientBatch::Time now_ = ClientBatch::Time{} + 1h;
};

TEST_F(ClientBatchTest, AnsweredBatchIsDoneWithResultsInRequestOrder) {
  ClientBatch b = make(2);
  ASSERT_EQ(b.step(), Step::connect);
  b.connected();
  const auto sent = ids(b.submission());
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_EQ(b.step(), Step::receive);
  b.received(Json{{"type", "heartbeat"}}, now_);
  b.received(results({answer(sent[1], Status::ok, 7.0)}), now_);
  EXPECT_EQ(b.step(), Step::receive);
  b.received(results({answer(sent[0], Status::ok, 5.0)}), now_);
  ASSERT_EQ(b.step(), Step::done);
  const auto out = b.take_results();
  EXPECT_DOUBLE_EQ(out[0].time_us, 5.0);
  EXPECT_DOUBLE_EQ(out[1].time_us, 7.0);
  EXPECT_EQ(counters_.duplicate_answers, 0u);
}

TEST_F(ClientBatchTest, SecondAnswerForAnItemIsCountedAndDropped) {
  ClientBatch b = make(2, /*connected=*/true);
  const auto sent = ids(b.submission());
  b.received(results({answer(sent[0], Status::ok, 5.0), answer(sent[0], Status::ok, 9.0)}), now_);
  EXPECT_EQ(counters_.duplicate_answers, 1u);
  b.received(results({answer(sent[1], Status::ok)}), now_);
  ASSERT_EQ(b.step(), Step::done);
  EXPECT_DOUBLE_EQ(b.take_results()[0].time_us, 5.0);
}

TEST_F(ClientBatchTest, SessionTimeoutMeansReconnectAndResubmitTheUnansweredUnderFreshIds) {
  ClientBatch b = make(3, true);
  const auto first = ids(b.submission());
  b.received(results({answer(first[0], Status::ok), answer(first[1], Status::session_timeout)}), now_);
  ASSERT_EQ(b.step(), Step::back_off);
  EXPECT_EQ(b.delay(), 10ms);
  b.waited();
  ASSERT_EQ(b.step(), Step::connect);
  b.connected();
  const auto second = ids(b.submission());
  ASSERT_EQ(second.size(), 2u) << "the answered item is not submitted again";
  for (const Json& id : second) {
    EXPECT_TRUE(std::find(first.begin(), first.end(), id) == first.end()) << "id " << id << " reused";
  }
  EXPECT_EQ(counters_.resubmitted, 2u);
  EXPECT_EQ(counters_.reconnects, 1u);
  // An answer under an id of the old connection is not taken for the resubmitted item.
  b.received(results({answer(first[2], Status::ok, 99.0)}), now_);
  EXPECT_EQ(counters_.duplicate_answers, 1u);
  b.received(results({answer(second[0], Status::ok, 1.0), answer(second[1], Status::ok, 2.0)}), now_);
  ASSERT_EQ(b.step(), Step::done);
  const auto out = b.take_results();
  EXPECT_DOUBLE_EQ(out[1].time_us, 1.0);
  EXPECT_DOUBLE_EQ(out[2].time_us, 2.0);
}

TEST_F(ClientBatchTest, FailedConnectsBackOffDoublingUpToTheMaximum) {
  ClientBatch b = make(1);
  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(b.step(), Step::connect);
    b.failed("refused", now_);
    ASSERT_EQ(b.step(), Step::back_off);
    delays.push_back(b.delay());
    b.waited();
  }
  EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{10ms, 20ms, 40ms, 40ms}));
  EXPECT_EQ(counters_.reconnects, 0u) << "never connected: nothing was lost";
  b.connected();
  (void)b.submission();
  b.failed("reset", now_);
  EXPECT_EQ(b.delay(), 10ms) << "a connection that worked starts the backoff afresh";
}

TEST_F(ClientBatchTest, SilenceCountsAsALostCoordinator) {
  ClientBatch b = make(1, true);
  (void)b.submission();
  b.silent(now_);
  ASSERT_EQ(b.step(), Step::back_off);
  EXPECT_NE(b.last_error().find("silent"), std::string::npos);
}

TEST_F(ClientBatchTest, NoProgressForReconnectForAnswersTheRestError) {
  ClientBatch b = make(2, true);
  const auto sent = ids(b.submission());
  now_ += 900ms;
  b.received(results({answer(sent[0], Status::ok)}), now_);  // progress: patience restarts here
  now_ += 900ms;
  b.silent(now_);
  ASSERT_EQ(b.step(), Step::back_off) << "900 ms since the last answer is within reconnect_for";
  b.waited();
  now_ += 101ms;
  b.failed("refused", now_);
  ASSERT_EQ(b.step(), Step::done);
  EXPECT_FALSE(b.all_answered());
  const auto out = b.take_results();
  EXPECT_EQ(out[0].status, Status::ok);
  EXPECT_EQ(out[1].status, Status::error);
  EXPECT_NE(out[1].message.find("farm: refused"), std::string::npos) << out[1].message;
}

TEST_F(ClientBatchTest, EmptyBatchIsDoneAtOnce) {
  ClientBatch b = make(0);
  EXPECT_EQ(b.step(), Step::done);
  EXPECT_TRUE(b.take_results().empty());
}

}  // namespace
}  // namespace atvoss::rpc
