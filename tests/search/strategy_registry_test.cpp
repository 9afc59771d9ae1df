// The strategy registry: a registered strategy is made and listed by name, its can_apply
// restricts it, built-ins are entries of the same registry whose names cannot be taken,
// unregistering removes it, and each strategy checks its own JSON config.
#include "search/strategy_registry.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "search/ensemble_config.hpp"
#include "search/evolution_config.hpp"
#include "search/model_guided_config.hpp"
#include "search/tpe_config.hpp"

namespace atvoss::search {
namespace {

ScheduleSpace small_space() {
  return ScheduleSpace({{"a", {1, 2, 4}}, {"b", {1, 2}}}, [](const Schedule&) { return Verdict::valid(); });
}

StrategyEntry wrapped_random(const std::string& name, int* made) {
  StrategyEntry e;
  e.name = name;
  e.priority = 3;
  e.make = [made](const ScheduleSpace& space, const TuneContext& o, const Json&) {
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
  TuneContext o;
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
  const auto all = registered_strategies();  // the built-ins at priority 0 between them
  ASSERT_EQ(all.size(), built_in_strategy_names().size() + 2);
  EXPECT_EQ(all.front().name, "test-picky");
  EXPECT_EQ(all.back().name, "test-low");
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

TEST(StrategyRegistry, BuiltInsAreEntriesOfTheRegistryThatCannotBeRemoved) {
  for (const auto& name : built_in_strategy_names()) {
    SCOPED_TRACE(name);
    const auto e = registered_strategy(name);
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->built_in);
    EXPECT_THROW(unregister_strategy(name), Error);
    EXPECT_TRUE(registered_strategy(name));
  }
  // What the tuner asks the database for follows the entries, not names it knows.
  const Workload op = Workload::from_json(parse_json(R"({"op":"matmul","dims":{"M":64,"N":64,"K":64}})", "w"));
  const Workload table = Workload::from_json(parse_json(R"({"op":"recorded","table":"t.csv"})", "w"));
  EXPECT_TRUE(registered_strategy("model-guided")->uses_cost_model);
  EXPECT_FALSE(registered_strategy("tpe")->uses_cost_model);
  EXPECT_TRUE(registered_strategy("model-guided")->uses_prior(table));
  EXPECT_FALSE(registered_strategy("model-guided")->uses_prior(op));
  EXPECT_TRUE(registered_strategy("tpe")->uses_prior(op));
  EXPECT_FALSE(registered_strategy("random")->uses_prior);
}

// Each strategy takes its own keys: a key of another strategy's config, or a value out of
// range, is refused naming the field; a strategy without settings takes none.
TEST(StrategyRegistry, EachStrategyChecksItsOwnConfig) {
  const auto refused = [](const std::string& name, const Json& config, const std::string& needle) {
    SCOPED_TRACE(name + " " + config.dump());
    try {
      check_strategy_config(name, config);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("tpe", {{"population", 8}}, "tpe strategy_config: unknown field 'population'");
  refused("tpe", {{"tpe_gamma", 0}}, "field 'tpe_gamma' must be in (0, 1]");
  refused("tpe", {{"tpe_startup", "ten"}}, "field 'tpe_startup' must be an integer >= 1");
  refused("evolutionary", {{"tpe_gamma", 0.2}}, "unknown field 'tpe_gamma'; this strategy takes crossover_rate");
  refused("model-guided", {{"ensemble_arms", Json::array({"tpe"})}}, "unknown field 'ensemble_arms'");
  refused("ensemble", {{"ensemble_arms", Json::array({"tpe"})}, {"tpe_gamma", 2}}, "'tpe_gamma'");
  refused("random", {{"population", 8}},
          "random strategy_config: unknown field 'population'; this strategy takes no fields");
  refused("grid", Json::array(), "grid strategy_config: expected a JSON object");
  EXPECT_NO_THROW(check_strategy_config(
      "ensemble",
      {{"ensemble_arms", Json::array({"tpe"})}, {"tpe_gamma", 0.3}, {"model_population", 64}, {"population", 8}}));
  EXPECT_NO_THROW(check_strategy_config("random", Json()));
  EXPECT_THROW(check_strategy_config("nope", Json::object()), Error);
}

// A config's keys reach the strategy: TPE with a longer random start proposes differently,
// and the same config twice proposes the same.
TEST(StrategyRegistry, AConfigChangesWhatTheStrategyProposes) {
  const ScheduleSpace space({{"a", {1, 2, 3, 4, 5, 6, 7, 8}}, {"b", {1, 2, 3, 4, 5, 6, 7, 8}}},
                            [](const Schedule&) { return Verdict::valid(); });
  const auto proposals = [&](const Json& config) {
    TuneContext c;
    c.seed = 5;
    auto s = make_strategy("tpe", space, c, config);
    std::vector<Schedule> all;
    for (int r = 0; r < 6; ++r) {
      auto b = s->propose(4);
      std::vector<Trial> results;
      for (const auto& x : b) results.push_back({x, Status::ok, double(x.at("a") * 10 + x.at("b"))});
      s->update(results);
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  };
  EXPECT_EQ(proposals({{"tpe_startup", 2}}), proposals({{"tpe_startup", 2}}));
  EXPECT_NE(proposals({{"tpe_startup", 2}}), proposals({{"tpe_startup", 20}}));
}

// Each config's JSON reads back as itself, so what a job stored is what it ran.
TEST(StrategyRegistry, ConfigsReadBackTheirOwnJson) {
  TpeConfig tpe;
  tpe.tpe_gamma = 0.3;
  tpe.tpe_local_pair = 0.5;
  EXPECT_EQ(TpeConfig::from_json(tpe.to_json()).to_json(), tpe.to_json());
  EXPECT_EQ(TpeConfig::from_json(tpe.to_json()).tpe_gamma, 0.3);  // the values, not only their absence
  EXPECT_EQ(tpe.to_json().size(), 17u);                           // every key the strategy takes
  ModelGuidedConfig model;
  model.model_stall = 7;
  model.evolution.mutation_doubling = 0.25;
  EXPECT_EQ(ModelGuidedConfig::from_json(model.to_json()).to_json(), model.to_json());
  EnsembleConfig ensemble;
  ensemble.ensemble_arms = {"evolution", "tpe"};
  EXPECT_EQ(EnsembleConfig::from_json(ensemble.to_json()).to_json(), ensemble.to_json());
  EXPECT_EQ(EvolutionConfig::from_json({{"population", 9}}).population, 9);
}

}  // namespace
}  // namespace atvoss::search
