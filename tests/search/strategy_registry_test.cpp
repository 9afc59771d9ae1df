// The run-time strategy registry: a registered strategy is made and listed by name, its
// can_apply restricts it, built-in names cannot be taken, and unregistering removes it.
#include "search/strategy_registry.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace atvoss::search {
namespace {

ScheduleSpace small_space() {
  return ScheduleSpace({{"a", {1, 2, 4}}, {"b", {1, 2}}}, [](const Schedule&) { return Verdict::valid(); });
}

StrategyEntry wrapped_random(const std::string& name, int* made) {
  StrategyEntry e;
  e.name = name;
  e.priority = 3;
  e.make = [made](const ScheduleSpace& space, const StrategyOptions& o) {
    ++*made;
    return make_strategy("random", space, o);
  };
  return e;
}

bool listed(const std::string& name) {
  const auto names = strategy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(StrategyRegistry, RegisteredStrategyIsMadeAndListedByName) {
  int made = 0;
  register_strategy(wrapped_random("test-wrapped", &made));
  EXPECT_TRUE(listed("test-wrapped"));
  auto s = make_strategy("test-wrapped", small_space());
  EXPECT_EQ(made, 1);
  EXPECT_EQ(s->propose(6).size(), 6u);
  ASSERT_TRUE(registered_strategy("test-wrapped"));
  EXPECT_EQ(registered_strategy("test-wrapped")->priority, 3);
  EXPECT_TRUE(unregister_strategy("test-wrapped"));
  EXPECT_FALSE(listed("test-wrapped"));
  EXPECT_FALSE(unregister_strategy("test-wrapped"));
  EXPECT_THROW(make_strategy("test-wrapped", small_space()), Error);
}

TEST(StrategyRegistry, CanApplyRestrictsAndPriorityOrders) {
  int made = 0;
  StrategyEntry picky = wrapped_random("test-picky", &made);
  picky.can_apply = [](const Workload&, const Target& t) { return t.name == "only-here"; };
  register_strategy(picky);
  StrategyEntry low = wrapped_random("test-low", &made);
  low.priority = -1;
  register_strategy(low);
  StrategyOptions o;
  o.target.name = "elsewhere";
  try {
    make_strategy("test-picky", small_space(), o);
    ADD_FAILURE() << "can_apply was not consulted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
  }
  EXPECT_EQ(made, 0);
  o.target.name = "only-here";
  EXPECT_NE(make_strategy("test-picky", small_space(), o), nullptr);
  const auto all = registered_strategies();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "test-picky");
  EXPECT_EQ(all[1].name, "test-low");
  unregister_strategy("test-picky");
  unregister_strategy("test-low");
}

TEST(StrategyRegistry, RefusesBuiltInNamesAndEmptyEntries) {
  int made = 0;
  EXPECT_THROW(register_strategy(wrapped_random("random", &made)), Error);
  EXPECT_THROW(register_strategy(wrapped_random("", &made)), Error);
  StrategyEntry no_make;
  no_make.name = "test-no-make";
  EXPECT_THROW(register_strategy(no_make), Error);
  EXPECT_FALSE(listed("test-no-make"));
}

}  // namespace
}  // namespace atvoss::search
