#include "search/search_strategy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/recorded_space.hpp"

namespace atvoss::search {
namespace {

// Synthetic landscape: 5 knobs of 8 values; time is a smooth bowl around a fixed optimum
// plus a knob interaction, and a diagonal band of points is invalid.
constexpr int kDims = 5;
constexpr std::int64_t kBest[kDims] = {5, 2, 6, 1, 3};

ScheduleSpace synthetic_space() {
  std::vector<Knob> knobs;
  for (int d = 0; d < kDims; ++d) knobs.push_back({"k" + std::to_string(d), {0, 1, 2, 3, 4, 5, 6, 7}});
  return ScheduleSpace(std::move(knobs), [](const Schedule& s) {
    return (s.at("k0") + s.at("k1")) % 5 == 4 ? Verdict::invalid("k0+k1 band") : Verdict::valid();
  });
}

double synthetic_time(const Schedule& s) {
  double t = 10;
  for (int d = 0; d < kDims; ++d) {
    const double x = static_cast<double>(s.at("k" + std::to_string(d)) - kBest[d]);
    t += (d + 1) * x * x;
  }
  t += 0.5 * std::abs(static_cast<double>(s.at("k2") - s.at("k3")));
  return t;
}

Trial measure(const ScheduleSpace& space, const Schedule& s) {
  if (!space.check(s).ok) return {s, Status::invalid, 0};
  return {s, Status::ok, synthetic_time(s)};
}

// Stands in for costmodel/ in unit tests: scores are the negated true time (a perfect
// model), but only after train(); counts fits so the retrain policy can be checked.
class FakeModel final : public costmodel::CostModel {
 public:
  explicit FakeModel(int* fits) : fits_(fits) {}
  std::string kind() const override { return "fake"; }
  void train(std::span<const costmodel::WorkloadGroup> groups) override {
    ASSERT_FALSE(groups.empty());
    last_samples_ = groups.back().samples.size();
    last_total_samples = 0;
    for (const auto& g : groups) last_total_samples += g.samples.size();
    ++*fits_;
    trained_ = true;
  }
  std::vector<double> predict(const Workload&, const Target&, std::span<const Schedule> schedules) const override {
    if (!trained_) throw Error(ErrorKind::internal, "fake model: predict before train");
    std::vector<double> out;
    for (const auto& s : schedules) out.push_back(s.has("k0") ? -synthetic_time(s) : 0.0);
    return out;
  }
  std::vector<double> predict_features(const costmodel::FeatureMatrix& rows) const override {
    return std::vector<double>(rows.rows, 0.0);
  }
  bool trained() const override { return trained_; }
  std::vector<std::uint8_t> save() const override { return {}; }
  void load(std::span<const std::uint8_t>) override { trained_ = true; }

  std::size_t last_samples_ = 0;
  // Samples of every group of the latest fit, in any FakeModel (tests run one at a time).
  static inline std::size_t last_total_samples = 0;

 private:
  int* fits_;
  bool trained_ = false;
};

// What a test hands make_for: the run's context and the strategy's config.
struct StrategySetup {
  TuneContext context;
  Json config = Json::object();
};

// model_population is the model's key, which the other strategies refuse: one setup serves
// every strategy.
std::unique_ptr<SearchStrategy> make_for(const std::string& name, const ScheduleSpace& space, const StrategySetup& s) {
  Json config = s.config;
  if (name != "model-guided" && name != "ensemble") config.erase("model_population");
  return make_strategy(name, space, s.context, config);
}

StrategySetup options_for(std::uint64_t seed, int* fits) {
  StrategySetup o;
  o.context.seed = seed;
  o.context.workload = Workload::from_json(parse_json(R"({"op":"recorded","table":"synthetic"})", "t"));
  o.config["model_population"] = 128;
  o.context.model_factory = [fits] { return std::make_unique<FakeModel>(fits); };
  return o;
}

std::vector<Trial> measure_all(const ScheduleSpace& space, const std::vector<Schedule>& batch) {
  std::vector<Trial> out;
  for (const auto& s : batch) out.push_back(measure(space, s));
  return out;
}

// Runs rounds of propose -> measure -> update; returns every proposal in order.
std::vector<Schedule> run(SearchStrategy& s, const ScheduleSpace& space, int rounds, std::size_t batch) {
  std::vector<Schedule> all;
  for (int r = 0; r < rounds; ++r) {
    auto b = s.propose(batch);
    all.insert(all.end(), b.begin(), b.end());
    s.update(measure_all(space, b));
  }
  return all;
}

double best_time(const std::vector<Schedule>& proposals, std::size_t first_n) {
  double best = HUGE_VAL;
  for (std::size_t i = 0; i < proposals.size() && i < first_n; ++i) best = std::min(best, synthetic_time(proposals[i]));
  return best;
}

// Expects call() to throw a bad_input Error whose message contains needle.
void expect_bad_input(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "expected bad_input";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr(needle));
  }
}

class EveryStrategy : public testing::TestWithParam<std::string> {
 protected:
  ScheduleSpace space_ = synthetic_space();
  int fits_ = 0;
  std::unique_ptr<SearchStrategy> make(std::uint64_t seed) {
    return make_for(GetParam(), space_, options_for(seed, &fits_));
  }
};

TEST_P(EveryStrategy, NeverProposesMeasuredDuplicateOrInvalid) {
  auto s = make(7);
  std::vector<Trial> history;
  std::mt19937_64 rng(99);
  for (int i = 0; i < 40; ++i) {
    auto p = space_.random_valid_point(rng);
    history.push_back(measure(space_, space_.schedule_at(*p)));
  }
  s->observe(history);
  std::set<Schedule> seen;
  for (const auto& t : history) seen.insert(t.schedule);
  const auto proposals = run(*s, space_, 12, 16);
  EXPECT_EQ(proposals.size(), 12u * 16u);
  for (const auto& p : proposals) {
    EXPECT_TRUE(space_.check(p).ok) << p.to_json().dump();
    EXPECT_TRUE(seen.insert(p).second) << "proposed twice or already measured: " << p.to_json().dump();
  }
  EXPECT_EQ(s->trials(), history.size() + proposals.size());
}

TEST_P(EveryStrategy, SameSeedSameProposals) {
  auto a = make(3);
  auto b = make(3);
  EXPECT_EQ(run(*a, space_, 6, 16), run(*b, space_, 6, 16));
}

TEST_P(EveryStrategy, StateRoundTripResumesIdentically) {
  for (const bool pending : {false, true}) {
    SCOPED_TRACE(pending ? "saved with a batch pending" : "saved between rounds");
    auto a = make(11);
    run(*a, space_, 4, 16);
    std::vector<Schedule> in_flight;
    if (pending) in_flight = a->propose(16);
    const Json state = parse_json(a->save_state().dump(), "state");  // through text, as a job file
    auto b = make(11);
    b->load_state(state);
    EXPECT_EQ(b->trials(), a->trials());
    if (pending) {
      a->update(measure_all(space_, in_flight));
      b->update(measure_all(space_, in_flight));
    }
    EXPECT_EQ(run(*a, space_, 3, 16), run(*b, space_, 3, 16));
  }
}

TEST_P(EveryStrategy, ExhaustsSmallSpaceWithoutRepeats) {
  ScheduleSpace tiny({{"a", {1, 2, 3, 4}}, {"b", {1, 2, 3}}}, [](const Schedule& s) {
    return s.at("a") == s.at("b") ? Verdict::invalid("a == b") : Verdict::valid();
  });
  auto s = make_for(GetParam(), tiny, options_for(5, &fits_));
  std::set<Schedule> all;
  for (int r = 0; r < 5; ++r) {
    auto b = s->propose(4);
    std::vector<Trial> results;
    for (const auto& x : b) {
      EXPECT_TRUE(all.insert(x).second);
      EXPECT_TRUE(tiny.check(x).ok);
      results.push_back({x, Status::ok, static_cast<double>(x.at("a") * 10 + x.at("b"))});
    }
    s->update(results);
  }
  EXPECT_EQ(all.size(), 9u);  // 12 points, 3 invalid
  EXPECT_TRUE(s->propose(4).empty());
}

TEST_P(EveryStrategy, CallOrderErrorsNameTheMissingCall) {
  auto s = make(1);
  try {
    s->update({});
    ADD_FAILURE() << "update() before propose() must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_THAT(e.what(), testing::HasSubstr("call propose() first"));
  }
  auto batch = s->propose(4);
  for (const char* call : {"propose()", "observe()"}) {
    SCOPED_TRACE(call);
    try {
      if (std::string(call) == "propose()")
        s->propose(4);
      else
        s->observe({});
      ADD_FAILURE() << "must throw while a batch is pending";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_THAT(e.what(), testing::HasSubstr("call update() with its results first"));
    }
  }
  try {
    Trial stranger = measure(space_, space_.schedule_at({0, 0, 0, 0, 0}));
    bool in_batch = false;
    for (const auto& b : batch) in_batch = in_batch || b == stranger.schedule;
    if (in_batch) stranger = measure(space_, space_.schedule_at({7, 7, 7, 7, 7}));
    s->update(std::vector<Trial>{stranger});
    ADD_FAILURE() << "a result outside the batch must throw";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), testing::HasSubstr("not in the pending batch"));
  }
}

TEST_P(EveryStrategy, InfrastructureErrorsMayBeProposedAgain) {
  auto s = make(2);
  const auto first = s->propose(8);
  std::vector<Trial> lost;
  for (const auto& x : first) lost.push_back({x, Status::worker_lost, 0});
  s->update(lost);
  EXPECT_EQ(s->trials(), 0u);
}

TEST_P(EveryStrategy, LoadStateRejectsOtherStrategies) {
  auto s = make(1);
  Json state = s->save_state();
  state["strategy"] = "not-" + GetParam();
  auto fresh = make(1);
  expect_bad_input([&] { fresh->load_state(state); }, "'strategy'");
}

INSTANTIATE_TEST_SUITE_P(Search, EveryStrategy, testing::ValuesIn(strategy_names()), [](const auto& info) {
  std::string n = info.param;
  for (auto& c : n) c = c == '-' ? '_' : c;
  return n;
});

TEST(SearchStrategyTest, EvolutionaryBeatsRandomOnSyntheticLandscape) {
  const auto space = synthetic_space();
  int fits = 0;
  double evo = 0, rnd = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {  // fixed seeds: deterministic
    auto e = make_for("evolutionary", space, options_for(seed, &fits));
    auto r = make_for("random", space, options_for(seed, &fits));
    evo += best_time(run(*e, space, 12, 16), 192);
    rnd += best_time(run(*r, space, 12, 16), 192);
  }
  EXPECT_LT(evo, rnd) << "evolutionary " << evo / 4 << " vs random " << rnd / 4;
}

TEST(SearchStrategyTest, ModelGuidedFollowsTheModel) {
  const auto space = synthetic_space();
  int fits = 0;
  auto s = make_for("model-guided", space, options_for(4, &fits));
  const auto proposals = run(*s, space, 8, 16);
  double optimum = HUGE_VAL;
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    const auto sch = space.schedule_at(space.point_at(i));
    if (space.check(sch).ok) optimum = std::min(optimum, synthetic_time(sch));
  }
  // A perfect model finds the optimum within a few rounds after its first fit.
  EXPECT_DOUBLE_EQ(best_time(proposals, proposals.size()), optimum);
  EXPECT_GE(fits, 1);
}

// An ensemble of one arm is that arm's strategy: the arms are the strategies' own code,
// acting on the ensemble's record, RNG and batch.
TEST(SearchStrategyTest, EnsembleOfOneArmProposesAsThatStrategy) {
  const auto space = synthetic_space();
  for (const auto& [arm, strategy] : {std::pair{"tpe", "tpe"}, std::pair{"model", "model-guided"}}) {
    SCOPED_TRACE(arm);
    int fits_a = 0, fits_b = 0;
    auto oa = options_for(7, &fits_a);
    oa.config["ensemble_arms"] = Json::array({arm});
    auto ens = make_for("ensemble", space, oa);
    auto alone = make_for(strategy, space, options_for(7, &fits_b));
    for (std::size_t batch : {1, 4, 16, 16, 16}) {
      const auto a = ens->propose(batch);
      ASSERT_EQ(a, alone->propose(batch));
      ens->update(measure_all(space, a));
      alone->update(measure_all(space, a));
    }
  }
}

// With batch 1 each slot's arm is drawn from the bandit's shares, so both arms propose
// after the model's first fit (before it, about 10 rounds, only tpe can); the state's
// per-arm use counts (model, tpe, evolution) show it.
TEST(SearchStrategyTest, EnsembleDrawsTheArmOfEachSlotOfABatchOfOne) {
  const auto space = synthetic_space();
  int fits = 0;
  auto s = make_for("ensemble", space, options_for(3, &fits));
  run(*s, space, 60, 1);
  const Json uses = s->save_state()["extra"]["uses"];
  ASSERT_EQ(uses.size(), 3u);
  EXPECT_GE(uses[0].get<double>(), 15) << uses.dump();
  EXPECT_GE(uses[1].get<double>(), 25) << uses.dump();
  EXPECT_EQ(uses[2].get<double>(), 0) << uses.dump();
}

// A prior (the same table on another target) trains the model before any own trial, so
// the first batch already follows it; the fit on the prior alone survives a resume.
TEST(SearchStrategyTest, ModelGuidedFitsOnThePriorBeforeItsOwnTrials) {
  const auto space = synthetic_space();
  std::vector<Trial> prior;
  for (std::uint64_t i = 0; i < space.size(); i += 97)
    prior.push_back(measure(space, space.schedule_at(space.point_at(i))));
  int fits = 0;
  auto with = options_for(5, &fits);
  with.context.prior_trials = prior;
  auto s = make_for("model-guided", space, with);
  const auto first = s->propose(4);
  EXPECT_EQ(fits, 1);
  EXPECT_EQ(FakeModel::last_total_samples, prior.size());
  int fits_cold = 0;
  auto cold = make_for("model-guided", space, options_for(5, &fits_cold));
  const auto cold_first = cold->propose(4);
  EXPECT_EQ(fits_cold, 0);
  // The perfect model, fitted at once, leads the first batch near the optimum (10).
  EXPECT_LT(best_time(first, first.size()), 16);
  EXPECT_LT(best_time(first, first.size()), best_time(cold_first, cold_first.size()) - 10);

  int fits_resumed = 0;
  auto again = options_for(5, &fits_resumed);
  again.context.prior_trials = prior;
  auto r = make_for("model-guided", space, again);
  r->load_state(s->save_state());
  EXPECT_EQ(fits_resumed, 1);
  s->update(measure_all(space, first));
  r->update(measure_all(space, first));
  EXPECT_EQ(run(*s, space, 2, 4), run(*r, space, 2, 4));
}

// Each fit moves the optimum of knob k0 between 0 and 7 and lowers every score, so a score
// kept from an earlier fit would outrank every fresh one. Counts the rows of each call.
class FlippingModel final : public costmodel::CostModel {
 public:
  FlippingModel(int* fits, std::vector<std::size_t>* rows, bool rows_alone)
      : fits_(fits), rows_(rows), rows_alone_(rows_alone) {}
  std::string kind() const override { return "flipping"; }
  void train(std::span<const costmodel::WorkloadGroup>) override { ++*fits_; }
  std::vector<double> predict(const Workload&, const Target&, std::span<const Schedule> schedules) const override {
    rows_->push_back(schedules.size());
    std::vector<double> out;
    for (const auto& s : schedules) out.push_back(-10.0 * *fits_ - std::abs(double(s.at("k0") - best_k0())));
    return out;
  }
  std::vector<double> predict_features(const costmodel::FeatureMatrix& rows) const override {
    return std::vector<double>(rows.rows, 0.0);
  }
  bool trained() const override { return *fits_ > 0; }
  std::vector<std::uint8_t> save() const override { return {}; }
  void load(std::span<const std::uint8_t>) override {}
  bool scores_rows_alone() const override { return rows_alone_; }
  std::int64_t best_k0() const { return *fits_ % 2 ? 7 : 0; }

 private:
  int* fits_;
  std::vector<std::size_t>* rows_;
  bool rows_alone_;
};

StrategySetup flipping_options(int* fits, std::vector<std::size_t>* rows, bool rows_alone) {
  auto o = options_for(6, fits);
  o.config["epsilon"] = 0;
  o.config["min_train_samples"] = 4;
  o.context.model_factory = [=] { return std::make_unique<FlippingModel>(fits, rows, rows_alone); };
  return o;
}

// Scores are kept between fits only: every proposal follows the latest fit's optimum.
TEST(SearchStrategyTest, ModelGuidedScoresComeFromTheLatestFit) {
  const auto space = synthetic_space();
  int fits = 0;
  std::vector<std::size_t> rows;
  auto s = make_for("model-guided", space, flipping_options(&fits, &rows, true));
  for (int r = 0; r < 40; ++r) {
    const auto b = s->propose(1);
    ASSERT_EQ(b.size(), 1u);
    if (fits > 0) EXPECT_EQ(b[0].at("k0"), fits % 2 ? 7 : 0) << "round " << r << ", fit " << fits;
    s->update(measure_all(space, b));
  }
  EXPECT_GE(fits, 4);
  // Between fits, the rounds after the first predict only points not scored before.
  const std::size_t population = 128 * 5;
  EXPECT_LT(*std::min_element(rows.begin(), rows.end()), population / 2);
}

// A model that scores each call as a whole (TransferModel standardises within the call)
// is asked for every point of every generation, as before scores were kept.
TEST(SearchStrategyTest, ModelGuidedKeepsNoScoresOfAModelThatScoresCallsAsAWhole) {
  const auto space = synthetic_space();
  int fits = 0;
  std::vector<std::size_t> rows;
  auto s = make_for("model-guided", space, flipping_options(&fits, &rows, false));
  run(*s, space, 20, 1);
  ASSERT_FALSE(rows.empty());
  for (std::size_t n : rows) EXPECT_EQ(n, 128u);
}

// Runs 40 proposals of one; expects every model pick made while far_wanted(trials since the
// best) to differ from the best trial so far in at least a third of the knobs (2 of 5),
// though the perfect model scores the best's neighbours highest. Returns how many it checked.
int expect_far_picks(const StrategySetup& o, const std::function<bool(int)>& far_wanted) {
  const auto space = synthetic_space();
  auto s = make_for("model-guided", space, o);
  double best = HUGE_VAL;
  Schedule incumbent;
  int since_best = 0, checked = 0;
  for (int r = 0; r < 40; ++r) {
    const auto b = s->propose(1);
    EXPECT_EQ(b.size(), 1u);
    if (b.size() != 1) return checked;
    if (best < HUGE_VAL && r >= 12 && far_wanted(since_best)) {  // fitted by round 12
      int differ = 0;
      for (int d = 0; d < kDims; ++d)
        differ += b[0].at("k" + std::to_string(d)) != incumbent.at("k" + std::to_string(d));
      EXPECT_GE(differ, 2) << "round " << r;
      ++checked;
    }
    const auto results = measure_all(space, b);
    ++since_best;
    if (results[0].status == Status::ok && results[0].time_us < best) {
      best = results[0].time_us;
      incumbent = b[0];
      since_best = 1;
    }
    s->update(results);
  }
  return checked;
}

TEST(SearchStrategyTest, ModelGuidedFarShareProposesAwayFromTheIncumbent) {
  int fits = 0;
  auto o = options_for(2, &fits);
  o.config["epsilon"] = 0;
  o.config["model_far_share"] = 1;
  EXPECT_GE(expect_far_picks(o, [](int) { return true; }), 15);
}

// Once the best is older than model_stall trials, every pick is a distant one.
TEST(SearchStrategyTest, ModelGuidedRestartsAwayFromAStalledIncumbent) {
  int fits = 0;
  auto o = options_for(2, &fits);
  o.config["epsilon"] = 0;
  o.config["model_stall"] = 3;
  EXPECT_GE(expect_far_picks(o, [](int since_best) { return since_best > 3; }), 5);
}

// With mutation_doubling 1, the children of two parents at block 128 on the arithmetic list
// 16, 32, .., 256 reach only its doublings and halvings; neighbour steps reach 112 or 144.
TEST(SearchStrategyTest, DoublingMutationStepsToTwiceOrHalfTheValue) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t v = 16; v <= 256; v += 16) sizes.push_back(v);
  const ScheduleSpace space({{"block", sizes}, {"flag", {0, 1}}}, [](const Schedule&) { return Verdict::valid(); });
  const std::set<std::int64_t> powers = {16, 32, 64, 128, 256};
  for (double doubling : {0.0, 1.0}) {
    StrategySetup o;
    o.context.seed = 3;
    o.config["mutation_doubling"] = doubling;
    auto s = make_for("evolutionary", space, o);
    s->observe(std::vector<Trial>{{Schedule({{"block", 128}, {"flag", 0}}), Status::ok, 1.0},
                                  {Schedule({{"block", 128}, {"flag", 1}}), Status::ok, 2.0}});
    std::set<std::int64_t> proposed;
    for (const auto& c : s->propose(6)) proposed.insert(c.at("block"));
    const bool only_powers = std::includes(powers.begin(), powers.end(), proposed.begin(), proposed.end());
    EXPECT_EQ(only_powers, doubling == 1) << "mutation_doubling " << doubling;
    if (doubling == 0) EXPECT_TRUE(proposed.count(112) || proposed.count(144));
  }
}

TEST(SearchStrategyTest, RetrainPolicyFitsOnTwentyPercentNewData) {
  const auto space = synthetic_space();
  int fits = 0;
  auto opts = options_for(4, &fits);
  opts.config["min_train_samples"] = 16;
  auto s = make_for("model-guided", space, opts);
  // Rounds of 8: first fit once 16 succeeded (round 3 sees 16 trials, all valid or not),
  // then refit whenever the new trials reach 20% of the last fit.
  std::vector<int> fits_before_round;
  for (int r = 0; r < 8; ++r) {
    auto b = s->propose(8);
    fits_before_round.push_back(fits);
    s->update(measure_all(space, b));
  }
  EXPECT_EQ(fits_before_round.front(), 0);
  // Fits at 16+ ok trials, then at >= 1.2x: never more than one fit per round.
  for (std::size_t i = 1; i < fits_before_round.size(); ++i) {
    EXPECT_LE(fits_before_round[i] - fits_before_round[i - 1], 1);
  }
  EXPECT_GE(fits, 3);
  EXPECT_LE(fits, 6);
}

TEST(SearchStrategyTest, FactoryRejectsBadInput) {
  const auto space = synthetic_space();
  const struct {
    const char* name;
    std::function<void(StrategySetup&)> edit;
    const char* error;
  } kCases[] = {
      {"nope", [](StrategySetup&) {}, "expected one of random, grid"},
      {"evolutionary", [](StrategySetup& o) { o.config["population"] = 1; }, "'population'"},
      {"model-guided", [](StrategySetup& o) { o.config["epsilon"] = 2; }, "'epsilon'"},
      {"model-guided", [](StrategySetup& o) { o.config["model_far_share"] = -0.1; }, "'model_far_share'"},
      {"model-guided", [](StrategySetup& o) { o.config["model_stall"] = -1; }, "'model_stall'"},
      {"evolutionary", [](StrategySetup& o) { o.config["mutation_doubling"] = 1.5; }, "'mutation_doubling'"},
      {"model-guided", [](StrategySetup& o) { o.context.workload = Workload(); }, "context.workload"},
      {"ensemble", [](StrategySetup& o) { o.config["ensemble_arms"] = Json::array(); },
       "'ensemble_arms' must be a non-empty"},
      {"ensemble",
       [](StrategySetup& o) {
         o.config["ensemble_arms"] = Json::array({"model", "grid"});
       },
       "(got 'grid')"},
      {"ensemble",
       [](StrategySetup& o) {
         o.config["ensemble_arms"] = Json::array({"tpe", "tpe"});
       },
       "'tpe' twice"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.error);
    int fits = 0;
    auto o = options_for(1, &fits);
    c.edit(o);
    expect_bad_input([&] { make_for(c.name, space, o); }, c.error);
  }
}

// The real cost models (costmodel/) behind model-guided search: a saved job resumes with
// the same proposals only if refitting on the saved trial prefix reproduces the fit.
TEST(SearchStrategyTest, RealModelsResumeExactly) {
  const auto space = synthetic_space();
  for (const char* kind : {"linear", "xgboost"}) {
    SCOPED_TRACE(kind);
    StrategySetup o;
    o.context.seed = 21;
    o.context.workload = Workload::from_json(parse_json(R"({"op":"recorded","table":"synthetic"})", "t"));
    o.context.cost_model = kind;
    o.context.model_threads = 1;
    o.config["model_population"] = 64;
    o.config["retrain_fraction"] = 1.0;  // fits at 8, 16, 32 trials: the save at 40 is between fits
    auto a = make_for("model-guided", space, o);
    run(*a, space, 5, 8);
    auto b = make_for("model-guided", space, o);
    b->load_state(a->save_state());
    EXPECT_EQ(run(*a, space, 3, 8), run(*b, space, 3, 8));
  }
}

// A real XGBoost model that notes, for each fit, every group's size and weight.
class GroupRecordingModel final : public costmodel::CostModel {
 public:
  using Fit = std::vector<std::pair<std::size_t, double>>;
  explicit GroupRecordingModel(std::vector<Fit>* fits) : fits_(fits) {
    costmodel::ModelOptions mo;
    mo.nthread = 1;
    inner_ = costmodel::make_cost_model(mo);
  }
  std::string kind() const override { return inner_->kind(); }
  void train(std::span<const costmodel::WorkloadGroup> groups) override {
    Fit fit;
    for (const auto& g : groups) fit.emplace_back(g.samples.size(), g.weight);
    fits_->push_back(std::move(fit));
    inner_->train(groups);
  }
  std::vector<double> predict_features(const costmodel::FeatureMatrix& rows) const override {
    return inner_->predict_features(rows);
  }
  bool trained() const override { return inner_->trained(); }
  std::vector<std::uint8_t> save() const override { return inner_->save(); }
  void load(std::span<const std::uint8_t> bytes) override { inner_->load(bytes); }

 private:
  std::vector<Fit>* fits_;
  std::unique_ptr<costmodel::CostModel> inner_;
};

// The weight of the last group but one (the prior's, the own trials being last) in each fit
// of two groups or more.
std::vector<double> prior_weights(const std::vector<GroupRecordingModel::Fit>& fits) {
  std::vector<double> out;
  for (const auto& fit : fits) {
    if (fit.size() >= 2) out.push_back(fit[fit.size() - 2].second);
  }
  return out;
}

// A model-guided setup on the synthetic table whose fits `fits` records.
StrategySetup recorded_fits_setup(std::vector<GroupRecordingModel::Fit>* fits, std::uint64_t seed) {
  StrategySetup o = options_for(seed, nullptr);
  o.config["model_population"] = 64;
  o.context.model_factory = [fits] { return std::make_unique<GroupRecordingModel>(fits); };
  return o;
}

// Proposes and measures one schedule at a time until `n` of them succeeded.
void run_until_successes(SearchStrategy& s, const ScheduleSpace& space, int n) {
  for (int ok = 0; ok < n;) {
    const auto results = measure_all(space, s.propose(1));
    ok += results[0].status == Status::ok;
    s.update(results);
  }
}

// A prior that ranks this landscape keeps weight once the own trials can judge it; one
// that ranks it backwards falls to the floor, so the search follows its own trials. Either
// way the weight comes back exactly on resume.
TEST(SearchStrategyTest, ModelGuidedWeighsThePriorByHowWellItRanksTheOwnTrials) {
  const auto space = synthetic_space();
  for (const bool backwards : {false, true}) {
    SCOPED_TRACE(backwards ? "backwards prior" : "faithful prior");
    std::vector<Trial> prior;
    for (std::uint64_t i = 0; i < space.size(); i += 37) {
      Trial t = measure(space, space.schedule_at(space.point_at(i)));
      if (backwards && t.status == Status::ok) t.time_us = 1000.0 / t.time_us;
      prior.push_back(t);
    }
    std::vector<GroupRecordingModel::Fit> fits;
    StrategySetup o = recorded_fits_setup(&fits, 8);
    o.context.prior_trials = prior;
    auto a = make_for("model-guided", space, o);
    // Below 8 own successes the prior counts in full.
    run_until_successes(*a, space, 8);
    ASSERT_FALSE(prior_weights(fits).empty());
    EXPECT_EQ(prior_weights(fits).back(), 1.0);
    // The next fit judges the prior.
    for (const std::size_t n = prior_weights(fits).size(); prior_weights(fits).size() == n;) run(*a, space, 1, 1);
    if (backwards) {
      EXPECT_EQ(prior_weights(fits).back(), 1e-3);
    } else {
      EXPECT_GT(prior_weights(fits).back(), 0.01);  // ten times the floor
    }
    const double saved_weight = prior_weights(fits).back();
    auto b = make_for("model-guided", space, o);
    b->load_state(a->save_state());
    EXPECT_EQ(prior_weights(fits).back(), saved_weight);
    EXPECT_EQ(run(*a, space, 3, 4), run(*b, space, 3, 4));
  }
}

// Another table's results (TuneContext::prior_spaces, here this landscape under the same knob
// names, or ranked backwards) stay out of the fits until 8 own trials succeeded; then each
// counts by how well it ranks the own trials, and together they weigh at most
// prior_space_cap times the own trials. A cap of 0 leaves them out.
TEST(SearchStrategyTest, ModelGuidedLetsOtherTablesJoinOnceJudgedAndCapsThem) {
  const auto space = synthetic_space();
  for (const bool backwards : {false, true}) {
    for (const double cap : {0.0, 0.5}) {
      SCOPED_TRACE(std::string(backwards ? "backwards" : "faithful") + " table, cap " + std::to_string(cap));
      PriorSpace table{"other", space.knobs(), {}};
      for (std::uint64_t i = 0; i < space.size(); i += 37) {
        Trial t = measure(space, space.schedule_at(space.point_at(i)));
        if (backwards && t.status == Status::ok) t.time_us = 1000.0 / t.time_us;
        table.trials.push_back(t);
      }
      std::vector<GroupRecordingModel::Fit> fits;
      StrategySetup o = recorded_fits_setup(&fits, 8);
      o.config["prior_space_cap"] = cap;
      o.context.prior_spaces = {table};
      auto a = make_for("model-guided", space, o);
      run_until_successes(*a, space, 8);
      run(*a, space, 40, 1);
      ASSERT_GE(fits.size(), 3u);
      for (const auto& fit : fits) {
        const std::size_t own = fit.back().first;
        if (own > 200) continue;  // the fit of a model of the table alone, which judges it
        if (cap == 0 || own < 8) {
          EXPECT_EQ(fit.size(), 1u) << own << " own trials";
          continue;
        }
        ASSERT_EQ(fit.size(), 2u) << own << " own trials";
        EXPECT_GT(fit[0].first, 500u);  // the table's rows
        EXPECT_LE(fit[0].first * fit[0].second, cap * static_cast<double>(own) * (1 + 1e-9));
        if (backwards) {
          EXPECT_LE(fit[0].second, 1e-3);
        } else {
          EXPECT_GT(fit[0].first * fit[0].second, 0.4 * static_cast<double>(own));  // held at the cap, not faded
        }
      }
    }
  }
}

// With the same kernel's prior the model fits before any own trial; another table's results
// wait for the own trials to judge them.
TEST(SearchStrategyTest, ModelGuidedFitsOnTheSameKernelsPriorBeforeOtherTablesJoin) {
  const auto space = synthetic_space();
  PriorSpace table{"other", space.knobs(), {}};
  std::vector<Trial> same_kernel;
  for (std::uint64_t i = 0; i < space.size(); i += 37)
    table.trials.push_back(measure(space, space.schedule_at(space.point_at(i))));
  for (std::uint64_t i = 5; i < space.size(); i += 401)
    same_kernel.push_back(measure(space, space.schedule_at(space.point_at(i))));
  std::vector<GroupRecordingModel::Fit> fits;
  StrategySetup o = recorded_fits_setup(&fits, 3);
  o.context.prior_trials = same_kernel;
  o.context.prior_spaces = {table};
  auto a = make_for("model-guided", space, o);
  a->propose(4);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_EQ(fits[0].size(), 2u);  // the same kernel's prior and the (empty) own trials
  EXPECT_EQ(fits[0][0].first, same_kernel.size());
  EXPECT_EQ(fits[0][1].first, 0u);
}

// One corruption of a saved state and the words the refusal must contain.
struct BadState {
  const char* name;
  std::function<void(Json&)> edit;
  const char* error;
};

// Saves `strategy` after one round of 4, then loads each corrupted copy into a fresh one.
void expect_bad_states_refused(const std::string& strategy, std::initializer_list<BadState> cases) {
  const auto space = synthetic_space();
  int fits = 0;
  auto a = make_for(strategy, space, options_for(1, &fits));
  run(*a, space, 1, 4);
  const Json good = a->save_state();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Json bad = good;
    c.edit(bad);
    auto fresh = make_for(strategy, space, options_for(1, &fits));
    expect_bad_input([&] { fresh->load_state(bad); }, c.error);
  }
}

TEST(SearchStrategyTest, LoadStateNamesTheBadField) {
  expect_bad_states_refused(
      "evolutionary", {
                          {"rng", [](Json& j) { j["rng"] = "not a state"; }, "'rng'"},
                          {"version", [](Json& j) { j["version"] = 99; }, "'version'"},
                          {"trial_knob", [](Json& j) { j["trials"][0]["schedule"]["zz"] = 1; }, "unknown knob 'zz'"},
                          {"trial_status", [](Json& j) { j["trials"][0]["status"] = "fine"; }, "'status'"},
                          {"has_pending", [](Json& j) { j["has_pending"] = 3; }, "'has_pending'"},
                          {"missing", [](Json& j) { j.erase("trials"); }, "'trials'"},
                      });
}

// The model's and the ensemble's own state fields are checked too, naming the field (one
// round leaves the ensemble's last batch in "origin").
TEST(SearchStrategyTest, LoadStateNamesTheBadFieldOfTheModelState) {
  expect_bad_states_refused("ensemble",
                            {
                                {"fitted", [](Json& j) { j["extra"]["fitted"] = "yes"; }, "'fitted' must be a boolean"},
                                {"arm", [](Json& j) { j["extra"]["origin"][0]["arm"] = 7; }, "'arm' must be 0..2"},
                                {"uses",
                                 [](Json& j) {
                                   j["extra"]["uses"] = Json::array({1, 2});
                                 },
                                 "'uses' must be 3 numbers"},
                            });
}

// Recorded spaces reject configurations absent from the table through the space's check,
// so no strategy spends an evaluation on one; every proposal has a recorded outcome.
TEST(SearchStrategyTest, RecordedSpaceProposalsAreAllRecorded) {
  std::string csv = "a,b,c,time_us,status\n";
  for (int a = 0; a < 6; ++a) {
    for (int b = 0; b < 6; ++b) {
      for (int c = 0; c < 4; ++c) {
        if ((a + b + c) % 3 == 0) continue;  // restriction: absent
        const bool failed = a == 5 && b == 5;
        csv += std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "," +
               (failed ? std::string(",runtime_error") : std::to_string(10 + (a - 2) * (a - 2) + b + c) + ",ok") + "\n";
      }
    }
  }
  const auto rs = RecordedSpace::parse(csv, "table.csv");
  for (const auto& name : strategy_names()) {
    SCOPED_TRACE(name);
    StrategySetup o;
    o.context.seed = 3;
    o.context.workload = Workload::from_json(parse_json(R"({"op":"recorded","table":"table.csv"})", "t"));
    o.context.cost_model = "linear";
    o.config["model_population"] = 64;
    auto s = make_for(name, rs->space(), o);
    std::size_t proposed = 0;
    for (int r = 0; r < 8; ++r) {
      std::vector<Trial> results;
      for (const auto& x : s->propose(12)) {
        const auto m = rs->measure(x);
        EXPECT_NE(m.status, Status::invalid) << x.to_json().dump();
        results.push_back({x, m.status, m.time_us});
      }
      proposed += results.size();
      s->update(results);
    }
    EXPECT_EQ(proposed, rs->recorded_count());  // 96 recorded: the space is exhausted exactly
  }
}

}  // namespace
}  // namespace atvoss::search
