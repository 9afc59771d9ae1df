// Coordinator rules, driven in-process over loopback by scripted fake workers and clients
// (rpc::Channel), so each rule is checked without the simulator's timing in the way.
#include <map>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/measurement.hpp"
#include "eventually.hpp"
#include "rpc/channel.hpp"
#include "rpc/coordinator.hpp"
#include "rpc/farm_client.hpp"
#include "rpc/log.hpp"
#include "rpc/protocol.hpp"

namespace atvoss::rpc {
namespace {

using namespace std::chrono_literals;

class CoordinatorTest : public testing::Test {
 protected:
  void SetUp() override { set_log_enabled(std::getenv("ATVOSS_TEST_LOG") != nullptr); }

  void start(CoordinatorOptions o = {}) {
    o.port = 0;
    o.heartbeat_interval = 100ms;
    if (o.grace == CoordinatorOptions{}.grace) o.grace = 300ms;
    farm_ = std::make_unique<Coordinator>(o);
    farm_->start();
  }
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", farm_->port()}; }

  std::unique_ptr<Channel> connect(Role role, std::optional<std::string> token = std::nullopt) {
    ChannelOptions o;
    o.role = role;
    o.token = std::move(token);
    return Channel::open(endpoint(), o);
  }
  // A scripted worker: the test reads its tasks and sends its results; a thread keeps
  // its heartbeat going (unless silent) so only the tests about liveness see it removed.
  struct FakeWorker {
    std::unique_ptr<Channel> channel;
    std::atomic<bool> stop{false};
    std::thread beat;
    ~FakeWorker() {
      stop = true;
      if (beat.joinable()) beat.join();
    }
    void send(const Json& m) { channel->send(m); }
    std::optional<Json> receive(std::chrono::milliseconds t) { return channel->receive(t); }
  };
  std::unique_ptr<FakeWorker> fake_worker(int slots, const std::string& target = "T", bool silent = false) {
    auto w = std::make_unique<FakeWorker>();
    w->channel = connect(Role::worker);
    w->channel->send(Json{{"type", "register"}, {"targets", {target}}, {"slots", slots}, {"name", "fake"}});
    if (!silent) {
      w->beat = std::thread([raw = w.get()] {
        while (!raw->stop) {
          try {
            raw->channel->send(Json{{"type", "heartbeat"}});
          } catch (const Error&) {
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
        }
      });
    }
    return w;
  }
  static Json item(std::uint64_t id, int n, const std::string& target = "T") {
    return Json{
        {"id", id},
        {"target", target},
        {"request",
         encode_body(Json{
             {"workload", {{"op", "matmul"}, {"M", n}}}, {"schedule", {{"tile_m", 16}}}, {"repeat", 1}, {"seed", 7}})}};
  }
  // Waits for the next message of type (skipping heartbeats); fails the test on timeout.
  template <typename Peer>
  static Json next_of(Peer& c, const std::string& type, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto m = c.receive(100ms); m && m->at("type") == type) return *m;
    }
    // Throwing ends the test (gtest reports it) instead of letting a caller's loop spin.
    throw std::runtime_error("no '" + type + "' message within the timeout");
  }
  static Json ok_result(const Json& task, double us = 5.0) {
    Measurement m;
    m.time_us = us;
    m.repeats = {us};
    return Json{{"id", task.at("id")}, {"status", "ok"}, {"measurement", encode_body(m.to_json())}};
  }
  template <typename Pred>
  bool eventually(Pred pred) {
    return rpc::eventually(*farm_, pred);
  }
  Json stats() {
    auto q = connect(Role::query);
    q->send(Json{{"type", "stats"}});
    return next_of(*q, "stats").at("stats");
  }
  // One item submitted by a client and leased to a one-slot worker (holder); then a second
  // one-slot worker (other) registers, with nothing to do unless the lease moves.
  struct LeasedTask {
    std::unique_ptr<FakeWorker> holder;
    std::unique_ptr<Channel> client;
    Json task;
    std::unique_ptr<FakeWorker> other;
  };
  LeasedTask lease_one_task() {
    LeasedTask s;
    s.holder = fake_worker(1);
    s.client = connect(Role::client);
    s.client->send(Json{{"type", "submit"}, {"items", {item(1, 64)}}});
    s.task = next_of(*s.holder, "tasks").at("tasks").at(0);
    s.other = fake_worker(1);
    return s;
  }

  std::unique_ptr<Coordinator> farm_;
};

TEST_F(CoordinatorTest, BatchIsAnsweredOnceAndNeverExceedsWorkerSlots) {
  start();
  auto worker = fake_worker(2);
  auto client = connect(Role::client);
  Json items = Json::array();
  for (int i = 0; i < 9; ++i) items.push_back(item(100 + i, 64 + i));
  client->send(Json{{"type", "submit"}, {"items", items}});
  std::size_t in_flight = 0, max_in_flight = 0, answered = 0;
  std::vector<Json> held;
  std::map<std::uint64_t, int> answers;
  while (answered < 9) {
    const Json tasks = next_of(*worker, "tasks");
    if (tasks.at("tasks").empty()) break;
    for (const Json& t : tasks["tasks"]) held.push_back(t);
    in_flight += tasks["tasks"].size();
    max_in_flight = std::max(max_in_flight, in_flight);
    // Answer one at a time: the coordinator refills exactly the freed slot.
    worker->send(Json{{"type", "results"}, {"results", {ok_result(held.front())}}});
    held.erase(held.begin());
    --in_flight;
    ++answered;
    if (answered == 9) break;
    if (held.size() == 2 || answered + held.size() == 9) {
      // Both slots busy (or nothing left to send): drain the held ones without waiting.
      while (!held.empty() && answered < 9) {
        worker->send(Json{{"type", "results"}, {"results", {ok_result(held.front())}}});
        held.erase(held.begin());
        --in_flight;
        ++answered;
      }
    }
  }
  EXPECT_LE(max_in_flight, 2u);
  int got = 0;
  while (got < 9) {
    const Json r = next_of(*client, "results");
    if (r.at("results").empty()) break;
    for (const Json& a : r["results"]) {
      ++answers[a.at("id").get<std::uint64_t>()];
      EXPECT_EQ(a.at("status"), "ok");
      ++got;
    }
  }
  EXPECT_EQ(answers.size(), 9u);
  for (const auto& [id, n] : answers) EXPECT_EQ(n, 1) << "item " << id;
}

TEST_F(CoordinatorTest, IdenticalItemsFromTwoClientsAreMeasuredOnce) {
  start();
  auto worker = fake_worker(16);
  auto a = connect(Role::client);
  auto b = connect(Role::client);
  a->send(Json{{"type", "submit"}, {"items", {item(1, 64), item(2, 128)}}});
  const Json tasks = next_of(*worker, "tasks");
  ASSERT_EQ(tasks.at("tasks").size(), 2u);
  b->send(Json{{"type", "submit"}, {"items", {item(50, 128), item(51, 256)}}});
  const Json more = next_of(*worker, "tasks");
  ASSERT_EQ(more.at("tasks").size(), 1u) << "only the new shape may be dispatched";
  Json results = Json::array();
  for (const Json& t : tasks["tasks"]) results.push_back(ok_result(t));
  results.push_back(ok_result(more["tasks"][0]));
  worker->send(Json{{"type", "results"}, {"results", results}});
  std::set<std::uint64_t> got_a, got_b;
  while (got_a.size() < 2) {
    const Json m = next_of(*a, "results");  // named: a temporary would die before the loop body
    for (const Json& r : m["results"]) got_a.insert(r["id"].get<std::uint64_t>());
  }
  while (got_b.size() < 2) {
    const Json m = next_of(*b, "results");
    for (const Json& r : m["results"]) got_b.insert(r["id"].get<std::uint64_t>());
  }
  EXPECT_EQ(got_a, (std::set<std::uint64_t>{1, 2}));
  EXPECT_EQ(got_b, (std::set<std::uint64_t>{50, 51}));
  EXPECT_EQ(stats().at("deduplicated"), 1);
}

TEST_F(CoordinatorTest, ResultFromAWorkerWithoutTheLeaseIsIgnored) {
  start();
  auto [w1, client, task, w2] = lease_one_task();
  w2->send(Json{{"type", "results"}, {"results", {ok_result(task, 999.0)}}});  // not its lease
  ASSERT_TRUE(eventually([](const Json& s) { return s.at("late_results_ignored") == 1; }));
  // Counted as late under the farm's lock, before any answer it could have caused is sent.
  EXPECT_FALSE(client->receive(100ms).value_or(Json{{"type", "none"}}).at("type") == "results");
  w1->send(Json{{"type", "results"}, {"results", {ok_result(task, 5.0)}}});
  const Json answer = next_of(*client, "results").at("results").at(0);
  EXPECT_EQ(decode_body(answer.at("measurement"), "answer").at("time_us"), 5.0);
  EXPECT_EQ(stats().at("late_results_ignored"), 1);
}

TEST_F(CoordinatorTest, TaskOfADisconnectedWorkerGoesToAnotherWorker) {
  start();
  auto [w1, client, task, w2] = lease_one_task();
  w1.reset();  // drops the connection with the lease
  const Json again = next_of(*w2, "tasks").at("tasks").at(0);
  EXPECT_EQ(again.at("request"), task.at("request"));
  w2->send(Json{{"type", "results"}, {"results", {ok_result(again)}}});
  EXPECT_EQ(next_of(*client, "results").at("results").at(0).at("status"), "ok");
  EXPECT_EQ(stats().at("retries"), 1);
}

TEST_F(CoordinatorTest, SilentWorkerIsRemovedAfterMissedHeartbeats) {
  start();
  auto silent = fake_worker(1, "T", /*silent=*/true);
  auto client = connect(Role::client);
  client->send(Json{{"type", "submit"}, {"items", {item(1, 64)}}});
  next_of(*silent, "tasks");
  auto live = fake_worker(1);
  // 3 missed 100 ms heartbeats: the lease moves to the live worker.
  const Json again = next_of(*live, "tasks", 3s).at("tasks").at(0);
  live->send(Json{{"type", "results"}, {"results", {ok_result(again)}}});
  EXPECT_EQ(next_of(*client, "results").at("results").at(0).at("status"), "ok");
  EXPECT_THROW(for (int i = 0; i < 50; ++i) silent->receive(100ms), Error);  // closed by the farm
}

TEST_F(CoordinatorTest, TaskLostTooOftenIsAnsweredWorkerLost) {
  CoordinatorOptions o;
  o.max_retries = 3;
  start(o);
  auto client = connect(Role::client);
  client->send(Json{{"type", "submit"}, {"items", {item(1, 64)}}});
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto w = fake_worker(1);
    next_of(*w, "tasks");
  }  // each fake worker disconnects holding the task
  const Json answer = next_of(*client, "results").at("results").at(0);
  EXPECT_EQ(answer.at("status"), "worker_lost");
  EXPECT_EQ(Measurement::from_json(decode_body(answer.at("measurement"), "answer")).status, Status::worker_lost);
}

// A worker names the backends it measures with; the farm shows them and refuses a
// malformed list as a protocol error of that peer.
TEST_F(CoordinatorTest, WorkerBackendsAreRegisteredAndShown) {
  start();
  auto w = connect(Role::worker);
  w->send(Json{{"type", "register"},
               {"targets", {"T"}},
               {"backends", Json::array({"npu-sim", "recorded"})},
               {"slots", 1},
               {"name", "with-backends"}});
  Json shown;
  for (int i = 0; i < 100 && shown.is_null(); ++i) {
    w->send(Json{{"type", "heartbeat"}});  // a silent worker is dropped after 3 intervals
    const Json st = stats();
    for (const Json& worker : st.at("workers")) {
      if (worker.at("name") == "with-backends") shown = worker.at("backends");
    }
    if (shown.is_null()) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(shown, Json::array({"npu-sim", "recorded"}));
  auto bad = connect(Role::worker);
  bad->send(Json{{"type", "register"}, {"targets", {"T"}}, {"backends", "npu-sim"}, {"slots", 1}});
  EXPECT_THROW(for (int i = 0; i < 50; ++i) bad->receive(100ms), Error);
}

TEST_F(CoordinatorTest, GarbageClosesOnlyThatConnection) {
  start();
  auto worker = fake_worker(4);
  auto client = connect(Role::client);
  {
    auto bad = connect(Role::client);
    bad->send_raw(std::string("\x00\x00\x00\x03\xc1\xc1\xc1", 7));
    EXPECT_THROW(for (int i = 0; i < 50; ++i) bad->receive(100ms), Error);
  }
  client->send(Json{{"type", "submit"}, {"items", {item(1, 64)}}});
  const Json task = next_of(*worker, "tasks").at("tasks").at(0);
  worker->send(Json{{"type", "results"}, {"results", {ok_result(task)}}});
  EXPECT_EQ(next_of(*client, "results").at("results").at(0).at("status"), "ok");
  EXPECT_EQ(stats().at("rejected_connections").at("protocol"), 1);
}

TEST_F(CoordinatorTest, MalformedItemIsAnsweredWithAnErrorNotDropped) {
  start();
  auto client = connect(Role::client);
  client->send(Json{{"type", "submit"}, {"items", {Json{{"id", 9}, {"target", "T"}}}}});
  const Json answer = next_of(*client, "results").at("results").at(0);
  EXPECT_EQ(answer.at("id"), 9);
  EXPECT_EQ(answer.at("status"), "error");
}

TEST_F(CoordinatorTest, WrongTokenWrongVersionAndWrongRoleAreRefused) {
  CoordinatorOptions o;
  o.token = "s3cret-farm-token-01";
  start(o);
  EXPECT_NO_THROW(connect(Role::client, "s3cret-farm-token-01"));
  const auto refused = [&](ChannelOptions co, const char* code) {
    try {
      Channel::open(endpoint(), co);
      ADD_FAILURE() << "login accepted, expected " << code;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), testing::HasSubstr(code));
    }
  };
  ChannelOptions co;
  co.token = "wrong-token-0123456789";
  refused(co, "auth_failed");
  co.token.reset();
  refused(co, "auth_failed");
  co.token = "s3cret-farm-token-01";
  co.version = 99;
  refused(co, "version_mismatch");
  // A client may not pose as a worker's message stream.
  auto client = connect(Role::client, "s3cret-farm-token-01");
  client->send(Json{{"type", "results"}, {"results", Json::array()}});
  EXPECT_THROW(for (int i = 0; i < 50; ++i) client->receive(100ms), Error);
}

TEST_F(CoordinatorTest, ShutdownAnswersUnfinishedTasksSessionTimeout) {
  start();
  auto worker = fake_worker(1);
  auto client = connect(Role::client);
  client->send(Json{{"type", "submit"}, {"items", {item(1, 64), item(2, 128)}}});
  next_of(*worker, "tasks");  // held, never answered
  std::thread stopper([&] { farm_->shutdown(); });
  std::set<std::uint64_t> timed_out;
  try {
    while (timed_out.size() < 2) {
      const Json m = next_of(*client, "results");
      for (const Json& r : m["results"]) {
        EXPECT_EQ(r.at("status"), "session_timeout");
        timed_out.insert(r.at("id").get<std::uint64_t>());
      }
    }
  } catch (const Error&) {
    // the shutting_down error frame after the answers
  }
  stopper.join();
  EXPECT_EQ(timed_out.size(), 2u);
}

// Shutdown drains: it waits for the task in flight, and returns once it is answered, not
// after the grace period (30 s here), since every answer wakes it.
TEST_F(CoordinatorTest, ShutdownReturnsOnceTheLastTaskInFlightIsAnswered) {
  CoordinatorOptions o;
  o.grace = 30s;
  start(o);
  auto worker = fake_worker(1);
  auto client = connect(Role::client);
  client->send(Json{{"type", "submit"}, {"items", {item(1, 64)}}});
  const Json task = next_of(*worker, "tasks").at("tasks").at(0);
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    farm_->shutdown();
    returned = true;
  });
  std::this_thread::sleep_for(200ms);  // shutdown is draining now; nothing wakes it but the answer
  EXPECT_FALSE(returned);
  const auto answered = std::chrono::steady_clock::now();
  worker->send(Json{{"type", "results"}, {"results", {ok_result(task)}}});
  EXPECT_EQ(next_of(*client, "results").at("results").at(0).at("status"), "ok");
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - answered, 10s);
}

TEST_F(CoordinatorTest, MetricsExposeWorkersQueueAndLatency) {
  start();
  auto worker = fake_worker(3);
  ASSERT_TRUE(eventually([](const Json& s) { return s.at("slots_total") == 3; }));
  const std::string text = farm_->metrics_text();
  EXPECT_THAT(text, testing::HasSubstr("atvoss_farm_workers 1"));
  EXPECT_THAT(text, testing::HasSubstr("atvoss_farm_slots 3"));
  EXPECT_THAT(text, testing::HasSubstr("atvoss_farm_queue_depth 0"));
  EXPECT_THAT(text, testing::HasSubstr("atvoss_farm_latency_seconds{quantile=\"0.99\"}"));
  EXPECT_THAT(text, testing::HasSubstr("atvoss_farm_measurements_per_second"));
}

TEST_F(CoordinatorTest, FarmClientResubmitsAfterSessionTimeout) {
  // A client whose coordinator shuts down gracefully finds the next one on the same port.
  start();
  const std::uint16_t port = farm_->port();
  auto worker = fake_worker(1);
  std::vector<Measurement> got;
  std::thread client([&] {
    FarmClientOptions o;
    o.farm = Endpoint{"127.0.0.1", port};
    o.reconnect_for = 10s;
    FarmClient c(o);
    got = c.measure({FarmRequest{"T", Json{{"op", "matmul"}}, Json{{"tile_m", 16}}, 1, 1}});
  });
  next_of(*worker, "tasks");
  farm_->shutdown();
  worker.reset();
  CoordinatorOptions o;
  o.port = port;
  o.heartbeat_interval = 100ms;
  Coordinator second(o);
  second.start();
  ChannelOptions co;
  co.role = Role::worker;
  auto w2 = Channel::open(Endpoint{"127.0.0.1", port}, co);
  w2->send(Json{{"type", "register"}, {"targets", {"T"}}, {"slots", 1}});
  const Json task = next_of(*w2, "tasks", 10s).at("tasks").at(0);
  w2->send(Json{{"type", "results"}, {"results", {ok_result(task)}}});
  client.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, Status::ok);
}

}  // namespace
}  // namespace atvoss::rpc
