// Other tables carried over by knob name (search/prior_space.hpp): which tables count,
// how values map, what a capped carry keeps.
#include "search/prior_space.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

namespace atvoss::search {
namespace {

Knob knob(const std::string& name, std::vector<std::int64_t> values) { return {name, std::move(values)}; }

Schedule config(std::map<std::string, std::int64_t> values) { return Schedule(std::move(values)); }

TEST(PriorSpaceTest, NearestValueIsOnALogScaleForPositiveValues) {
  // 48 is as far from 32 as from 64 by difference, nearer 64 by ratio.
  EXPECT_EQ(nearest_value({16, 32, 64, 128}, 48), 64);
  EXPECT_EQ(nearest_value({1, 2, 3, 4}, 8), 4);
  EXPECT_EQ(nearest_value({0, 1}, 1), 1);
  EXPECT_EQ(nearest_value({0, 1}, 0), 0);
  EXPECT_EQ(nearest_value({-1, 0, 1}, 5), 1);  // by difference when a value is not positive
  EXPECT_EQ(nearest_value({1, 4}, 2), 1);      // a tie takes the smaller
}

TEST(PriorSpaceTest, ATableCountsWhenItVariesEnoughOfTheseKnobs) {
  const std::vector<Knob> to = {knob("a", {1, 2}), knob("b", {1, 2}), knob("c", {1, 2}), knob("fixed", {7})};
  EXPECT_EQ(shared_varying_knobs({knob("a", {1, 2}), knob("b", {4, 8})}, to), 2u);
  EXPECT_TRUE(shares_enough({knob("a", {1, 2}), knob("b", {4, 8})}, to));
  // One shared knob says nothing about the rest; a knob the other table holds fixed is not shared.
  EXPECT_FALSE(shares_enough({knob("a", {1, 2}), knob("fixed", {7, 8})}, to));
  EXPECT_FALSE(shares_enough({knob("a", {1, 2}), knob("b", {5})}, to));
  // Two of six varying knobs is less than half.
  std::vector<Knob> wide = to;
  for (const char* n : {"d", "e", "f"}) wide.push_back(knob(n, {1, 2}));
  EXPECT_FALSE(shares_enough({knob("a", {1, 2}), knob("b", {1, 2})}, wide));
  EXPECT_TRUE(
      map_prior({"unrelated", {knob("a", {1, 2})}, {{config({{"a", 1}}), Status::ok, 1.0}}}, ScheduleSpace(to, {}), 1)
          .empty());
}

TEST(PriorSpaceTest, AtMostTheLimitOfRelatedTablesAreTakenTheClosestFirst) {
  const std::vector<Knob> to = {knob("a", {1, 2}), knob("b", {1, 2}), knob("c", {1, 2}), knob("d", {1, 2})};
  const auto table = [](std::vector<Knob> knobs) { return PriorSpace{"t", std::move(knobs), {}}; };
  const std::vector<PriorSpace> tables = {
      table({knob("a", {1, 2}), knob("b", {1, 2})}),                                        // 2 of 4
      table({knob("a", {1, 2})}),                                                           // 1: unrelated
      table({knob("a", {1, 2}), knob("b", {1, 2}), knob("c", {1, 2}), knob("d", {1, 2})}),  // 4
      table({knob("b", {1, 2}), knob("c", {1, 2}), knob("d", {1, 2})}),                     // 3
      table({knob("c", {1, 2}), knob("d", {1, 2})}),                                        // 2
  };
  EXPECT_EQ(related_tables(tables, to, 8), (std::vector<std::size_t>{0, 2, 3, 4}));
  EXPECT_EQ(related_tables(tables, to, 3), (std::vector<std::size_t>{0, 2, 3}));  // 4 ties with 0 and comes later
  EXPECT_EQ(related_tables(tables, to, 2), (std::vector<std::size_t>{2, 3}));
  EXPECT_TRUE(related_tables({tables[1]}, to, 8).empty());
}

TEST(PriorSpaceTest, SharedKnobsMapByNameAndTheOthersTakeSeededValues) {
  const std::vector<Knob> from = {knob("bx", {16, 48, 128}), knob("ty", {1, 8}), knob("theirs", {0, 1})};
  const ScheduleSpace to({knob("bx", {32, 64, 256}), knob("ty", {1, 2, 3, 4}), knob("flag", {0, 1})}, {});
  PriorSpace prior{"other", from, {}};
  for (int i = 0; i < 40; ++i) {
    prior.trials.push_back({config({{"bx", 48}, {"ty", 8}, {"theirs", i % 2}}), Status::ok, 10.0 + i});
    prior.trials.push_back({config({{"bx", 16}, {"ty", 1}, {"theirs", i % 2}}), Status::ok, 100.0 + i});
  }
  const auto mapped = map_prior(prior, to, 5);
  std::set<std::int64_t> flags;
  for (const auto& t : mapped) {
    ASSERT_EQ(t.schedule.values().size(), 3u);
    EXPECT_TRUE(to.check(t.schedule).ok) << t.schedule.to_json().dump();
    flags.insert(t.schedule.at("flag"));
    if (t.time_us < 100) {
      EXPECT_EQ(t.schedule.at("bx"), 64);
      EXPECT_EQ(t.schedule.at("ty"), 4);
    } else {
      EXPECT_EQ(t.schedule.at("bx"), 32);
      EXPECT_EQ(t.schedule.at("ty"), 1);
    }
  }
  EXPECT_EQ(flags, (std::set<std::int64_t>{0, 1}));  // the prior says nothing about flag
  // One row per schedule, the best result of those mapped to it: the table's best is kept.
  ASSERT_EQ(mapped.size(), 4u);
  double best = HUGE_VAL;
  for (const auto& t : mapped) best = std::min(best, t.time_us);
  EXPECT_EQ(best, 10.0);
  EXPECT_EQ(map_prior(prior, to, 5).size(), mapped.size());
  for (std::size_t i = 0; i < mapped.size(); ++i) EXPECT_EQ(map_prior(prior, to, 5)[i].schedule, mapped[i].schedule);
}

TEST(PriorSpaceTest, ASuccessOutranksAFailureInACollision) {
  const std::vector<Knob> knobs = {knob("a", {1, 2}), knob("b", {1, 2})};
  PriorSpace prior{"other", {knob("a", {1, 2, 4}), knob("b", {1, 2})}, {}};
  prior.trials.push_back({config({{"a", 2}, {"b", 1}}), Status::invalid, 0});
  prior.trials.push_back({config({{"a", 4}, {"b", 1}}), Status::ok, 7.0});
  prior.trials.push_back({config({{"a", 1}, {"b", 2}}), Status::invalid, 0});
  const auto mapped = map_prior(prior, ScheduleSpace(knobs, {}), 1);
  ASSERT_EQ(mapped.size(), 2u);
  EXPECT_EQ(mapped[0].schedule, config({{"a", 2}, {"b", 1}}));
  EXPECT_EQ(mapped[0].status, Status::ok);
  EXPECT_EQ(mapped[0].time_us, 7.0);
  EXPECT_EQ(mapped[1].status, Status::invalid);
}

TEST(PriorSpaceTest, ACappedCarryKeepsTheBestTenthAndASeededSample) {
  std::vector<std::int64_t> values(40);
  for (int i = 0; i < 40; ++i) values[i] = i + 1;
  const std::vector<Knob> knobs = {knob("a", values), knob("b", values)};
  PriorSpace prior{"same knobs", knobs, {}};
  for (int a = 1; a <= 40; ++a) {
    for (int b = 1; b <= 40; ++b)
      prior.trials.push_back({config({{"a", a}, {"b", b}}), Status::ok, double(a * 100 + b)});
  }
  const ScheduleSpace space(knobs, {});
  const auto one = map_prior(prior, space, 1, 100), same = map_prior(prior, space, 1, 100),
             other = map_prior(prior, space, 2, 100);
  ASSERT_EQ(one.size(), 100u);
  std::vector<double> times;
  for (const auto& t : one) times.push_back(t.time_us);
  std::sort(times.begin(), times.end());
  // The ten best of the table: a=1, b=1..10.
  for (int b = 1; b <= 10; ++b) EXPECT_EQ(times[b - 1], 100.0 + b);
  EXPECT_GT(times.back(), 1000.0);  // the rest spread over the table
  const auto schedules = [](const std::vector<costmodel::Trial>& v) {
    std::vector<Schedule> s;
    for (const auto& t : v) s.push_back(t.schedule);
    return s;
  };
  EXPECT_EQ(schedules(one), schedules(same));
  EXPECT_NE(schedules(one), schedules(other));
}

}  // namespace
}  // namespace atvoss::search
