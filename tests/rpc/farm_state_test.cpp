// FarmState (rpc/farm_state.hpp) driven event by event with a fake clock: every farm rule
// (leases, retries, de-duplication, heartbeats, reclaiming a departed client's entries) is
// checked exactly, with no sockets, threads or sleeps. The coordinator tests
// (coordinator_test.cpp) check the same rules end to end over loopback.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "rpc/farm_state.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {
namespace {

using namespace std::chrono_literals;

constexpr SessionId kWorkerA = 1, kWorkerB = 2, kClient = 10, kClient2 = 11;

class FarmStateTest : public testing::Test {
 protected:
  void SetUp() override { set_log_enabled(false); }

  FarmState& make(FarmRules rules = {100ms, 3, 3}) {
    state_ = std::make_unique<FarmState>(
        rules, [this] { return now_; }, metrics_);
    return *state_;
  }
  void advance(std::chrono::milliseconds d) { now_ += d; }

  FarmActions worker(SessionId id, int slots, const std::string& target = "T") {
    state_->on_connected(id, Role::worker, "127.0.0.1:" + std::to_string(id));
    Json reg{{"type", "register"}, {"targets", {target}}, {"slots", slots}, {"name", "w" + std::to_string(id)}};
    return state_->on_message(id, reg);
  }
  static Json item(std::uint64_t id, int n, const std::string& target = "T") {
    return Json{{"id", id},
                {"target", target},
                {"request", encode_body(Json{{"workload", {{"op", "matmul"}, {"M", n}}}, {"repeat", 1}})}};
  }
  FarmActions submit(SessionId client, Json items) {
    Json m{{"type", "submit"}, {"items", std::move(items)}};
    return state_->on_message(client, m);
  }
  static Json ok_result(const Json& task, double us = 5.0) {
    Measurement m;
    m.time_us = us;
    m.repeats = {us};
    return Json{{"id", task.at("id")}, {"status", "ok"}, {"measurement", encode_body(m.to_json())}};
  }
  FarmActions results(SessionId worker_id, Json list) {
    Json m{{"type", "results"}, {"results", std::move(list)}};
    return state_->on_message(worker_id, m);
  }
  // The entries of every `type` message ("tasks" or "results") these actions send to one
  // session: both messages carry their entries in a field named as the type.
  static std::vector<Json> sent_to(const FarmActions& a, SessionId to, const std::string& type) {
    std::vector<Json> out;
    for (const auto& s : a.sends) {
      if (s.to == to && s.message.at("type") == type) {
        for (const Json& e : s.message.at(type)) out.push_back(e);
      }
    }
    return out;
  }
  static std::vector<Json> tasks_to(const FarmActions& a, SessionId to) { return sent_to(a, to, "tasks"); }
  static std::vector<Json> answers_to(const FarmActions& a, SessionId to) { return sent_to(a, to, "results"); }

  FarmMetrics metrics_;
  FarmTime now_ = FarmTime{} + 1h;
  std::unique_ptr<FarmState> state_;
};

TEST_F(FarmStateTest, WorkerGetsNoMoreTasksThanItsSlotsAndAFreedSlotIsRefilled) {
  make();
  worker(kWorkerA, 2);
  state_->on_connected(kClient, Role::client, "c");
  const FarmActions first = submit(kClient, {item(1, 64), item(2, 65), item(3, 66)});
  const auto sent = tasks_to(first, kWorkerA);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(state_->stats().at("queue_depth"), 1);
  const FarmActions after = results(kWorkerA, {ok_result(sent[0])});
  ASSERT_EQ(answers_to(after, kClient).size(), 1u);
  EXPECT_EQ(answers_to(after, kClient)[0].at("id"), 1);
  EXPECT_EQ(tasks_to(after, kWorkerA).size(), 1u) << "exactly the freed slot is refilled";
}

TEST_F(FarmStateTest, SilentWorkerIsRemovedAtTheHeartbeatLimitAndItsTaskMovesOn) {
  make({100ms, 3, 3});
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  ASSERT_EQ(tasks_to(submit(kClient, {item(1, 64)}), kWorkerA).size(), 1u);
  worker(kWorkerB, 1);  // idle: the only task is leased to A
  advance(300ms);       // exactly the limit: not yet silent for longer than 3 intervals
  Json beat{{"type", "heartbeat"}};
  state_->on_message(kWorkerB, beat);
  FarmActions tick = state_->on_tick();
  EXPECT_TRUE(tick.closes.empty());
  advance(1ms);
  tick = state_->on_tick();
  ASSERT_EQ(tick.closes, std::vector<SessionId>{kWorkerA});
  const auto moved = tasks_to(tick, kWorkerB);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(state_->stats().at("retries"), 1);
  // A's result arrives after its lease ended: ignored, B's answer is the one relayed.
  const FarmActions late = results(kWorkerA, {ok_result(moved[0], 1.0)});
  EXPECT_TRUE(answers_to(late, kClient).empty());
  const FarmActions answered = results(kWorkerB, {ok_result(moved[0], 2.0)});
  ASSERT_EQ(answers_to(answered, kClient).size(), 1u);
}

TEST_F(FarmStateTest, ATaskUnansweredPastItsLeaseMovesOnAndTheStuckSlotStaysBusy) {
  make({100ms, 3, 3, 1000ms});
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  ASSERT_EQ(tasks_to(submit(kClient, {item(1, 64)}), kWorkerA).size(), 1u);
  worker(kWorkerB, 1);
  Json beat{{"type", "heartbeat"}};
  const auto alive_for = [&](std::chrono::milliseconds d) {  // both workers keep their heartbeats
    FarmActions last;
    for (auto t = 0ms; t < d; t += 50ms) {
      advance(50ms);
      state_->on_message(kWorkerA, beat);
      state_->on_message(kWorkerB, beat);
      last = state_->on_tick();
      if (!tasks_to(last, kWorkerB).empty()) return last;
    }
    return last;
  };
  FarmActions tick = alive_for(1000ms);  // exactly the lease: not yet taken back
  EXPECT_TRUE(tasks_to(tick, kWorkerB).empty());
  tick = alive_for(50ms);
  const auto moved = tasks_to(tick, kWorkerB);
  ASSERT_EQ(moved.size(), 1u) << "the task A sits on goes to B";
  EXPECT_TRUE(tick.closes.empty()) << "A is alive: only its task moves";
  EXPECT_EQ(state_->stats().at("retries"), 1);
  EXPECT_TRUE(tasks_to(submit(kClient, {item(2, 65)}), kWorkerA).empty()) << "A's slot still holds the stuck item";
  const FarmActions late = results(kWorkerA, {ok_result(moved[0], 1.0)});
  EXPECT_TRUE(answers_to(late, kClient).empty()) << "A no longer holds the lease";
  EXPECT_EQ(tasks_to(late, kWorkerA).size(), 1u) << "A's answer frees its slot for the queued task";
  ASSERT_EQ(answers_to(results(kWorkerB, {ok_result(moved[0], 2.0)}), kClient).size(), 1u);
}

TEST_F(FarmStateTest, HeartbeatsKeepAWorkerAndClientsGetOnePerTick) {
  make({100ms, 3, 3});
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  Json beat{{"type", "heartbeat"}};
  for (int i = 0; i < 10; ++i) {
    advance(250ms);
    state_->on_message(kWorkerA, beat);
    const FarmActions tick = state_->on_tick();
    EXPECT_TRUE(tick.closes.empty()) << "tick " << i;
    ASSERT_EQ(tick.sends.size(), 1u);
    EXPECT_EQ(tick.sends[0].to, kClient);
    EXPECT_EQ(tick.sends[0].message.at("type"), "heartbeat");
  }
  EXPECT_EQ(state_->load().workers, 1u);
}

TEST_F(FarmStateTest, TaskLostMoreThanMaxRetriesTimesIsAnsweredWorkerLost) {
  make({100ms, 3, 1});
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  ASSERT_EQ(tasks_to(submit(kClient, {item(1, 64)}), kWorkerA).size(), 1u);
  FarmActions lost = state_->on_disconnected(kWorkerA);  // retry 1: back in the queue
  EXPECT_TRUE(answers_to(lost, kClient).empty());
  EXPECT_EQ(state_->stats().at("queue_depth"), 1);
  ASSERT_EQ(tasks_to(worker(kWorkerB, 1), kWorkerB).size(), 1u) << "the requeued task goes to the next worker";
  lost = state_->on_disconnected(kWorkerB);  // retry 2 > max_retries 1
  const auto answers = answers_to(lost, kClient);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].at("status"), "worker_lost");
  EXPECT_TRUE(state_->drained());
}

TEST_F(FarmStateTest, RequeuedTaskGoesFirstInLine) {
  make();
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  const auto leased = tasks_to(submit(kClient, {item(1, 64), item(2, 65)}), kWorkerA);
  ASSERT_EQ(leased.size(), 1u);
  state_->on_disconnected(kWorkerA);
  const auto next = tasks_to(worker(kWorkerB, 1), kWorkerB);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].at("id"), leased[0].at("id"));
}

TEST_F(FarmStateTest, IdenticalItemsFromTwoClientsAreMeasuredOnceAndBothAnswered) {
  make();
  worker(kWorkerA, 4);
  state_->on_connected(kClient, Role::client, "a");
  state_->on_connected(kClient2, Role::client, "b");
  const auto sent = tasks_to(submit(kClient, {item(1, 64)}), kWorkerA);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(tasks_to(submit(kClient2, {item(7, 64)}), kWorkerA).empty());
  EXPECT_EQ(state_->stats().at("deduplicated"), 1);
  const FarmActions done = results(kWorkerA, {ok_result(sent[0])});
  ASSERT_EQ(answers_to(done, kClient).size(), 1u);
  ASSERT_EQ(answers_to(done, kClient2).size(), 1u);
  EXPECT_EQ(answers_to(done, kClient2)[0].at("id"), 7);
  EXPECT_EQ(done.records.size(), 1u) << "one measurement, logged once";
}

TEST_F(FarmStateTest, ResultFromAWorkerWithoutTheLeaseIsIgnored) {
  make();
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  const auto sent = tasks_to(submit(kClient, {item(1, 64)}), kWorkerA);
  ASSERT_EQ(sent.size(), 1u);
  worker(kWorkerB, 1);
  EXPECT_TRUE(answers_to(results(kWorkerB, {ok_result(sent[0], 999.0)}), kClient).empty());
  EXPECT_EQ(state_->stats().at("late_results_ignored"), 1);
  EXPECT_EQ(state_->load().busy, 1u) << "the holder keeps its lease";
  const auto answers = answers_to(results(kWorkerA, {ok_result(sent[0], 5.0)}), kClient);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(decode_body(answers[0].at("measurement"), "answer").at("time_us"), 5.0);
}

TEST_F(FarmStateTest, DuplicateResultForOneTaskIsAnsweredOnce) {
  make();
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  const auto sent = tasks_to(submit(kClient, {item(1, 64)}), kWorkerA);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(answers_to(results(kWorkerA, {ok_result(sent[0]), ok_result(sent[0])}), kClient).size(), 1u);
  EXPECT_TRUE(answers_to(results(kWorkerA, {ok_result(sent[0])}), kClient).empty());
  EXPECT_EQ(state_->stats().at("late_results_ignored"), 2);
}

TEST_F(FarmStateTest, DepartedClientsQueueEntriesAreReclaimedButALeasedTaskRunsOn) {
  make();
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  Json items = Json::array();
  for (int i = 0; i < 50; ++i) items.push_back(item(static_cast<std::uint64_t>(i), 64 + i));
  const auto leased = tasks_to(submit(kClient, items), kWorkerA);
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(state_->stats().at("queue_entries"), 49);
  state_->on_disconnected(kClient);
  const Json s = state_->stats();
  EXPECT_EQ(s.at("queue_entries"), 0);
  EXPECT_EQ(s.at("tasks_pending"), 1) << "the leased task is not taken from its worker";
  const FarmActions done = results(kWorkerA, {ok_result(leased[0])});
  EXPECT_TRUE(done.sends.empty()) << "nobody to answer, and nothing left to dispatch";
  EXPECT_TRUE(state_->drained());
}

TEST_F(FarmStateTest, DrainingAnswersNewItemsSessionTimeoutAndExpireAllAnswersTheRest) {
  make();
  worker(kWorkerA, 1);
  state_->on_connected(kClient, Role::client, "c");
  ASSERT_EQ(tasks_to(submit(kClient, {item(1, 64), item(2, 65)}), kWorkerA).size(), 1u);
  state_->set_draining();
  const auto refused = answers_to(submit(kClient, {item(3, 66)}), kClient);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].at("status"), "session_timeout");
  const auto expired = answers_to(state_->expire_all("shutting down"), kClient);
  EXPECT_EQ(expired.size(), 2u);
  EXPECT_TRUE(state_->drained());
  EXPECT_EQ(state_->stats().at("queue_depth"), 0);
}

TEST_F(FarmStateTest, MessageNotAllowedForTheRoleIsAProtocolError) {
  make();
  state_->on_connected(kClient, Role::client, "c");
  Json reg{{"type", "register"}, {"targets", {"T"}}, {"slots", 1}};
  EXPECT_THROW(state_->on_message(kClient, reg), Error);
  state_->on_connected(kWorkerA, Role::worker, "w");
  Json bad{{"type", "register"}, {"targets", Json::array()}, {"slots", 1}};
  EXPECT_THROW(state_->on_message(kWorkerA, bad), Error);
}

}  // namespace
}  // namespace atvoss::rpc
