// The cost-model registry: a model registered from the test is made by name, exactly
// where a built-in one would be; built-ins cannot be shadowed.
#include "costmodel/model_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "synthetic.hpp"

namespace atvoss::costmodel {
namespace {

// Scores every schedule by its first feature: enough to tell it apart from the built-ins.
class FirstFeatureModel : public CostModel {
 public:
  std::string kind() const override { return "test-first-feature"; }
  void train(std::span<const WorkloadGroup>) override {}
  std::vector<double> predict_features(const FeatureMatrix& rows) const override {
    std::vector<double> out;
    for (std::size_t i = 0; i < rows.rows; ++i) out.push_back(rows.row(i)[0]);
    return out;
  }
  bool trained() const override { return true; }
  std::vector<std::uint8_t> save() const override { return {}; }
  void load(std::span<const std::uint8_t>) override {}
};

class CostModelRegistryTest : public ::testing::Test {
 protected:
  void TearDown() override { unregister_cost_model("test-first-feature"); }
};

TEST_F(CostModelRegistryTest, RegisteredModelIsMadeByName) {
  EXPECT_THROW(make_cost_model("test-first-feature"), Error);
  register_cost_model({"test-first-feature", "first feature as score",
                       [](const ModelOptions&) { return std::make_unique<FirstFeatureModel>(); }});
  auto model = make_cost_model("test-first-feature");
  EXPECT_EQ(model->kind(), "test-first-feature");
  const auto names = cost_model_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-first-feature"), names.end());
  EXPECT_TRUE(unregister_cost_model("test-first-feature"));
  EXPECT_THROW(make_cost_model("test-first-feature"), Error);
}

TEST_F(CostModelRegistryTest, BuiltInsAreListedFirstAndCannotBeReplaced) {
  const auto names = cost_model_names();
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 4),
            (std::vector<std::string>{"xgboost", "xgboost-reg", "linear", "heuristic"}));
  EXPECT_THROW(
      register_cost_model({"linear", "", [](const ModelOptions&) { return std::make_unique<FirstFeatureModel>(); }}),
      Error);
  EXPECT_EQ(make_cost_model("linear")->kind(), "linear");
  EXPECT_THROW(register_cost_model({"", "", nullptr}), Error);
  EXPECT_FALSE(unregister_cost_model("linear"));
}

TEST_F(CostModelRegistryTest, UnknownNameIsBadInputNamingTheFieldAndTheChoices) {
  try {
    require_cost_model("forest", "job spec: field 'cost_model'");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_THAT(e.what(), ::testing::HasSubstr("field 'cost_model'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("xgboost, xgboost-reg, linear, heuristic"));
  }
  EXPECT_NO_THROW(require_cost_model("heuristic", "x"));
}

}  // namespace
}  // namespace atvoss::costmodel
