#include "tuner/local_measurer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backend/backend.hpp"
#include "host/machine.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

namespace atvoss::tuner {
namespace {

MeasureRequest item(std::int64_t tag) {
  MeasureRequest in{Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 256}, {"N", 256}, {"K", 256}}}}),
                    simulator::preset("ascend910"), Schedule({{"tag", tag}}), 1, 0};
  return in;
}

Measurement ok_with_time(double t) {
  Measurement m;
  m.time_us = t;
  m.repeats = {t};
  return m;
}

TEST(LocalMeasurer, AnswersInInputOrder) {
  LocalMeasurerOptions o;
  o.threads = 3;
  LocalMeasurer m(o, [](const MeasureRequest& in, double) {
    std::this_thread::sleep_for(std::chrono::milliseconds(in.schedule.at("tag") % 3));
    return ok_with_time(double(in.schedule.at("tag")));
  });
  std::vector<MeasureRequest> batch;
  for (int i = 0; i < 20; ++i) batch.push_back(item(i));
  const auto out = m.measure(batch);
  ASSERT_EQ(out.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(out[i].time_us, i);
  EXPECT_EQ(m.name(), "local:3");
}

TEST(LocalMeasurer, StuckItemTimesOutAndPoolKeepsWorking) {
  LocalMeasurerOptions o;
  o.threads = 1;
  o.timeout = std::chrono::milliseconds(50);
  std::atomic<bool> release{false};
  LocalMeasurer m(o, [&](const MeasureRequest& in, double) {
    if (in.schedule.at("tag") == 0) {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return ok_with_time(1);
  });
  const auto out = m.measure({item(0), item(1), item(2)});
  release = true;
  EXPECT_EQ(out[0].status, Status::timeout);
  EXPECT_TRUE(out[1].ok());  // served by the replacement thread
  EXPECT_TRUE(out[2].ok());
}

// A backend that enforces its own limits (the host's compile and run timeouts) gets them: a
// host item taking longer than the measurer's timeout is measured, the same wait on the
// simulator is a timeout naming the limit.
TEST(LocalMeasurer, AnItemGetsItsBackendsOwnLimit) {
  LocalMeasurerOptions o;
  o.threads = 2;
  o.timeout = std::chrono::milliseconds(50);
  LocalMeasurer m(o, [](const MeasureRequest&, double) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return ok_with_time(1);
  });
  MeasureRequest on_host = item(0);
  on_host.target = host::describe_machine();
  const auto out = m.measure({on_host, item(1)});
  EXPECT_TRUE(out[0].ok()) << out[0].message;
  EXPECT_EQ(out[1].status, Status::timeout);
  EXPECT_NE(out[1].message.find("50 ms"), std::string::npos) << out[1].message;
  EXPECT_GE(backend::traits_for(on_host.workload, on_host.target).own_limit, std::chrono::seconds(60));
}

TEST(LocalMeasurer, InfrastructureErrorsAreRetried) {
  LocalMeasurerOptions o;
  o.threads = 2;
  o.retries = 2;
  std::atomic<int> calls{0};
  LocalMeasurer m(o, [&](const MeasureRequest&, double) -> Measurement {
    if (calls++ < 2) throw std::runtime_error("simulated crash");
    return ok_with_time(5);
  });
  const auto out = m.measure({item(0)});
  EXPECT_TRUE(out[0].ok());
  EXPECT_EQ(calls.load(), 3);
}

TEST(LocalMeasurer, PersistentFailureIsReturnedAsInfrastructureError) {
  LocalMeasurerOptions o;
  o.retries = 1;
  std::atomic<int> calls{0};
  LocalMeasurer m(o, [&](const MeasureRequest&, double) -> Measurement {
    ++calls;
    throw std::runtime_error("always broken");
  });
  const auto out = m.measure({item(0)});
  EXPECT_EQ(out[0].status, Status::error);
  EXPECT_TRUE(is_infrastructure_error(out[0].status));
  EXPECT_EQ(calls.load(), 2);
}

TEST(LocalMeasurer, CandidateErrorsAreNotRetried) {
  std::atomic<int> calls{0};
  LocalMeasurer m({}, [&](const MeasureRequest&, double) {
    ++calls;
    return Measurement::failed(Status::invalid, "L0A overflow");
  });
  const auto out = m.measure({item(0)});
  EXPECT_EQ(out[0].status, Status::invalid);
  EXPECT_EQ(calls.load(), 1);
}

TEST(LocalMeasurer, DefaultRunsTheSimulatorDeterministically) {
  const Target t = simulator::preset("ascend910");
  const Workload w = Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 512}, {"N", 512}, {"K", 512}}}});
  MeasureRequest in{w, t, simulator::default_schedule(w, t), 3, 7};
  LocalMeasurer m;
  const auto a = m.measure({in, in});
  ASSERT_TRUE(a[0].ok()) << a[0].message;
  EXPECT_EQ(a[0].time_us, a[1].time_us);  // same seed, same measurement
  EXPECT_EQ(a[0].repeats.size(), 3u);
}

}  // namespace
}  // namespace atvoss::tuner
