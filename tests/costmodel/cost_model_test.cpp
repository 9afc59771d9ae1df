#include "costmodel/cost_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.hpp"
#include "costmodel/features.hpp"
#include "costmodel/internal/model_envelope.hpp"
#include "costmodel/metrics.hpp"
#include "synthetic.hpp"

namespace atvoss::costmodel {
namespace {

using testing::matmul;
using testing::synthetic_group;

// Three training workloads of different scale, one held-out workload to rank.
std::vector<WorkloadGroup> training_groups(std::size_t per_group = 250) {
  return {synthetic_group(matmul(1024, 1024, 1024), per_group, 1),
          synthetic_group(matmul(4096, 512, 2048), per_group, 2),
          synthetic_group(matmul(256, 8192, 512), per_group, 3)};
}

WorkloadGroup held_out() { return synthetic_group(matmul(2048, 2048, 256), 300, 99); }

std::vector<WorkloadGroup> shuffled(std::vector<WorkloadGroup> groups) {
  std::mt19937_64 rng(7);
  for (auto& g : groups) {
    std::vector<double> times;
    for (const auto& s : g.samples) times.push_back(s.time_us);
    std::shuffle(times.begin(), times.end(), rng);
    for (std::size_t i = 0; i < times.size(); ++i) g.samples[i].time_us = times[i];
  }
  return groups;
}

ModelOptions options_for(const std::string& kind) {
  ModelOptions o;
  o.kind = kind;
  o.seed = 5;
  if (kind == "xgboost-reg") {
    o.kind = "xgboost";
    o.objective = "reg:squarederror";
  }
  return o;
}

// Every trainable implementation runs the same checks (STYLE.md: kTestArgList).
class TrainableModelTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<CostModel> make() const { return make_cost_model(options_for(GetParam())); }
};

TEST_P(TrainableModelTest, LearnsASyntheticRankingAndNotShuffledLabels) {
  const WorkloadGroup test = held_out();
  auto model = make();
  EXPECT_FALSE(model->trained());
  model->train(training_groups());
  ASSERT_TRUE(model->trained());
  const ModelMetrics good = evaluate(*model, std::span(&test, 1));
  EXPECT_GT(good.pairwise, 0.75);
  EXPECT_GT(good.peak_at_5, 0.8);

  auto noise = make();
  noise->train(shuffled(training_groups()));
  const ModelMetrics bad = evaluate(*noise, std::span(&test, 1));
  EXPECT_LT(bad.pairwise, 0.65);
  EXPECT_LT(bad.pairwise, good.pairwise - 0.15);
}

// The training groups twice, once with every time inverted (the fastest made slowest): the
// model follows whichever copy weighs more.
TEST_P(TrainableModelTest, GroupWeightsDecideBetweenConflictingGroups) {
  const WorkloadGroup test = held_out();
  for (const double inverted_weight : {0.01, 100.0}) {
    SCOPED_TRACE(inverted_weight);
    std::vector<WorkloadGroup> groups = training_groups(120);
    for (WorkloadGroup g : training_groups(120)) {
      for (auto& s : g.samples) s.time_us = 1e6 / s.time_us;
      g.weight = inverted_weight;
      groups.push_back(std::move(g));
    }
    auto model = make();
    model->train(groups);
    const double pairwise = evaluate(*model, std::span(&test, 1)).pairwise;
    if (inverted_weight < 1) {
      EXPECT_GT(pairwise, 0.7);
    } else {
      EXPECT_LT(pairwise, 0.3);
    }
  }
  std::vector<WorkloadGroup> zero = training_groups(20);
  zero[1].weight = 0;
  auto model = make();
  try {
    model->train(zero);
    ADD_FAILURE() << "a group of weight 0 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("'weight'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(model->trained());
}

TEST_P(TrainableModelTest, SaveLoadRoundTripPredictsIdentically) {
  auto model = make();
  model->train(training_groups(120));
  const WorkloadGroup test = held_out();
  std::vector<Schedule> schedules;
  for (const auto& s : test.samples) schedules.push_back(s.schedule);
  const auto before = model->predict(test.workload, test.target, schedules);
  const auto bytes = model->save();
  auto copy = make();
  copy->load(bytes);
  EXPECT_TRUE(copy->trained());
  EXPECT_EQ(copy->predict(test.workload, test.target, schedules), before);
  EXPECT_EQ(copy->save(), bytes);
}

TEST_P(TrainableModelTest, SameSeedSameModel) {
  auto a = make(), b = make();
  a->train(training_groups(120));
  b->train(training_groups(120));
  EXPECT_EQ(a->save(), b->save());
}

TEST_P(TrainableModelTest, GarbageBytesAreCorruptAndKeepThePreviousFit) {
  auto model = make();
  model->train(training_groups(60));
  const auto good = model->save();
  std::vector<std::uint8_t> truncated(good.begin(), good.begin() + good.size() / 2);
  std::vector<std::uint8_t> flipped = good;
  for (std::size_t i = good.size() / 2; i < good.size(); i += 7) flipped[i] ^= 0x5a;
  const std::vector<std::vector<std::uint8_t>> kGarbage = {
      {}, {1, 2, 3}, std::vector<std::uint8_t>(100, 0xff), truncated, flipped};
  for (const auto& bytes : kGarbage) {
    SCOPED_TRACE(bytes.size());
    try {
      model->load(bytes);
      FAIL() << "expected a corrupt error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::corrupt) << e.what();
    }
  }
  EXPECT_TRUE(model->trained());
  EXPECT_EQ(model->save(), good);
}

TEST_P(TrainableModelTest, InvalidRecordsRankLast) {
  // A region of the space (tile_k 256) fails: the model must learn to avoid it.
  auto groups = training_groups(300);
  for (auto& g : groups) {
    for (auto& s : g.samples) {
      if (s.schedule.at("tile_k") == 256) s.status = Status::invalid, s.time_us = 0;
    }
  }
  auto model = make();
  model->train(groups);
  WorkloadGroup test = held_out();
  std::vector<Schedule> ok, bad;
  for (const auto& s : test.samples) (s.schedule.at("tile_k") == 256 ? bad : ok).push_back(s.schedule);
  const auto ok_scores = model->predict(test.workload, test.target, ok);
  const auto bad_scores = model->predict(test.workload, test.target, bad);
  const double ok_best = *std::max_element(ok_scores.begin(), ok_scores.end());
  const double bad_best = *std::max_element(bad_scores.begin(), bad_scores.end());
  EXPECT_GT(ok_best, bad_best);
}

TEST_P(TrainableModelTest, NothingToLearnIsBadInputAndUntrainedPredictFails) {
  auto model = make();
  WorkloadGroup g = held_out();
  for (auto& s : g.samples) s.status = Status::worker_lost;
  try {
    model->train(std::span(&g, 1));
    FAIL() << "expected bad_input";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input()) << e.what();
  }
  EXPECT_FALSE(model->trained());
  const std::vector<Schedule> one = {g.samples[0].schedule};
  EXPECT_THROW(model->predict(g.workload, g.target, one), Error);
}

TEST_P(TrainableModelTest, ImportanceNamesRealFeatures) {
  auto model = make();
  model->train(training_groups(120));
  const auto scores = model->feature_importance();
  ASSERT_FALSE(scores.empty());
  EXPECT_NO_THROW(feature_index(scores.front().feature));
  EXPECT_GE(scores.front().score, scores.back().score);
}

INSTANTIATE_TEST_SUITE_P(Kinds, TrainableModelTest, ::testing::Values("xgboost", "xgboost-reg", "linear"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(CostModelFactoryTest, RejectsUnknownKindsAndOptions) {
  EXPECT_THROW(make_cost_model("forest"), Error);
  ModelOptions o;
  o.objective = "rank:ndcg_typo";
  EXPECT_THROW(make_cost_model(o), Error);
  o = ModelOptions{};
  o.rounds = 0;
  EXPECT_THROW(make_cost_model(o), Error);
  EXPECT_EQ(make_cost_model("linear")->kind(), "linear");
  EXPECT_EQ(make_cost_model("xgboost")->kind(), "xgboost");
  EXPECT_EQ(make_cost_model("xgboost-reg")->kind(), "xgboost");  // same stored kind
}

TEST(CostModelFactoryTest, RegressionAliasLoadsAsXGBoost) {
  auto reg = make_cost_model("xgboost-reg", 3);
  reg->train(training_groups(60));
  auto plain = make_cost_model("xgboost");
  plain->load(reg->save());  // the objective travels inside the model
  const WorkloadGroup test = held_out();
  std::vector<Schedule> s;
  for (const auto& x : test.samples) s.push_back(x.schedule);
  EXPECT_EQ(plain->predict(test.workload, test.target, s), reg->predict(test.workload, test.target, s));
}

TEST(CostModelFactoryTest, ModelOfAnotherKindIsCorrupt) {
  auto linear = make_cost_model("linear");
  linear->train(training_groups(60));
  auto xgb = make_cost_model("xgboost");
  try {
    xgb->load(linear->save());
    FAIL() << "expected corrupt";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt);
    EXPECT_NE(std::string(e.what()).find("linear"), std::string::npos);
  }
}

// A measured table of knobs a, b, c (1..8) whose time depends on b alone: the booster reads
// only the columns that vary (six of the layout's), and still names the features by the layout.
WorkloadGroup table_timed_by_b() {
  WorkloadGroup g{Workload::from_json(Json{{"op", "recorded"}, {"table", "by_b"}}), testing::test_target(), {}};
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> v(1, 8);
  for (int i = 0; i < 200; ++i) {
    Schedule s;
    s.set("a", v(rng));
    s.set("b", v(rng));
    s.set("c", v(rng));
    g.samples.push_back({s, Status::ok, 100.0 + 10.0 * double(s.at("b"))});
  }
  return g;
}

TEST(XGBoostColumnsTest, ImportanceNamesTheFeatureTheTimeDependsOn) {
  auto model = make_cost_model("xgboost", 1);
  const WorkloadGroup g = table_timed_by_b();
  model->train(std::span(&g, 1));
  const auto scores = model->feature_importance();
  ASSERT_FALSE(scores.empty());
  // b is the second knob in name order: generic slot 1, as its value or its log.
  EXPECT_TRUE(scores.front().feature == "gen_knob_1" || scores.front().feature == "gen_log2_1")
      << scores.front().feature;
}

TEST(XGBoostColumnsTest, ASavedModelKeepsItsColumnsAndRefusesBadOnes) {
  auto model = make_cost_model("xgboost", 1);
  const WorkloadGroup g = table_timed_by_b();
  model->train(std::span(&g, 1));
  std::vector<Schedule> rows;
  for (const auto& t : g.samples) rows.push_back(t.schedule);
  const std::vector<std::uint8_t> saved = model->save();
  ModelEnvelope env = unwrap_model(saved, "xgboost");
  ASSERT_TRUE(env.header.contains("columns"));
  EXPECT_EQ(env.header["columns"].size(), 6u) << env.header.dump();  // a, b, c: value and log each
  auto loaded = make_cost_model("xgboost");
  loaded->load(saved);
  EXPECT_EQ(loaded->predict(g.workload, g.target, rows), model->predict(g.workload, g.target, rows));
  for (const Json& bad : {Json::array({5, 3}), Json::array({feature_count()}), Json("all")}) {
    Json header = env.header;
    header["columns"] = bad;
    try {
      make_cost_model("xgboost")->load(wrap_model("xgboost", header, env.payload));
      FAIL() << "expected corrupt for " << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::corrupt);
      EXPECT_NE(std::string(e.what()).find("field 'columns'"), std::string::npos) << e.what();
    }
  }
}

TEST(HeuristicModelTest, PrefersTheAnalyticallyFasterSchedule) {
  auto model = make_cost_model("heuristic");
  EXPECT_TRUE(model->trained());
  const Workload w = matmul(4096, 4096, 4096);
  const std::vector<Schedule> s = {
      Schedule({{"tile_m", 16}, {"tile_n", 16}, {"tile_k", 16}, {"k_steps", 1}, {"async_copy_depth", 1}}),
      Schedule({{"tile_m", 128}, {"tile_n", 128}, {"tile_k", 64}, {"k_steps", 4}, {"async_copy_depth", 2}})};
  const auto scores = model->predict(w, testing::test_target(), s);
  EXPECT_GT(scores[1], scores[0]);
}

}  // namespace
}  // namespace atvoss::costmodel
