#include "tuner/job_spec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "costmodel/model_registry.hpp"

namespace atvoss::tuner {
namespace {

Json minimal() { return Json{{"name", "j"}, {"target", "ascend910"}, {"model", "mlp"}, {"trials", 10}}; }

TEST(JobSpec, DefaultsFollowTheName) {
  const JobSpec s = JobSpec::from_json(minimal());
  EXPECT_EQ(s.database, "j.db");
  EXPECT_EQ(s.export_path, "j-table.json");
  EXPECT_EQ(s.report_path, "j-report.html");
  EXPECT_EQ(s.strategy, "model-guided");
  EXPECT_EQ(s.repeat, 3);
  EXPECT_TRUE(s.farm.empty());
}

TEST(JobSpec, ReadsWeightedWorkloadsAndInlineTarget) {
  Json j = minimal();
  j.erase("model");
  j["target"] = Json{{"preset", "ascend910b"}};
  j["workloads"] =
      Json::array({{{"weight", 3}, {"workload", {{"op", "matmul"}, {"dims", {{"M", 64}, {"N", 64}, {"K", 64}}}}}}});
  const JobSpec s = JobSpec::from_json(j);
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0].weight, 3);
  EXPECT_NE(s.target.find("ascend910b"), std::string::npos);
}

// mode and batch: the model as it is at its own batch unless told; a training step needs a model.
TEST(JobSpec, ReadsModeAndBatch) {
  const JobSpec plain = JobSpec::from_json(minimal());
  EXPECT_EQ(plain.mode, "inference");
  EXPECT_EQ(plain.batch, 0);
  Json j = minimal();
  j["mode"] = "training";
  j["batch"] = 32;
  const JobSpec step = JobSpec::from_json(j);
  EXPECT_EQ(step.mode, "training");
  EXPECT_EQ(step.batch, 32);
  EXPECT_EQ(step.training.optimizer, frontend::TrainingSetup::Optimizer::sgd);
  EXPECT_FALSE(step.training.mixed_precision);
  j["optimizer"] = "adam";
  j["mixed_precision"] = true;
  const JobSpec adam = JobSpec::from_json(j);
  EXPECT_EQ(adam.training.optimizer, frontend::TrainingSetup::Optimizer::adam);
  EXPECT_TRUE(adam.training.mixed_precision);
  j.erase("model");
  j["workloads"] = Json::array({{{"workload", {{"op", "matmul"}, {"dims", {{"M", 64}, {"N", 64}, {"K", 64}}}}}}});
  EXPECT_THROW(JobSpec::from_json(j), Error);
}

TEST(JobSpec, ReadsPrecision) {
  Json j = minimal();
  j["precision"] = {{"fc1", {{"weight", 8}, {"act", 8}}}};
  EXPECT_EQ(JobSpec::from_json(j).precision.layers.at("fc1"), DType::int8);
  EXPECT_TRUE(JobSpec::from_json(minimal()).precision.empty());
}

struct BadCase {
  const char* name;
  Json patch;
  const char* mentions;
};

TEST(JobSpec, EveryBadFieldIsNamed) {
  const BadCase cases[] = {
      {"trials_string", {{"trials", "many"}}, "trials"},
      {"trials_zero", {{"trials", 0}}, "trials"},
      {"seed_negative", {{"seed", -1}}, "seed"},
      {"repeat_float", {{"repeat", 1.5}}, "repeat"},
      {"name_number", {{"name", 5}}, "name"},
      {"model_array", {{"model", Json::array()}}, "model"},
      {"farm_no_port", {{"farm", "localhost"}}, "farm"},
      {"unknown_field", {{"trails", 5}}, "trails"},
      {"scheduler", {{"scheduler", "lottery"}}, "scheduler"},
      {"cost_model", {{"cost_model", "forest"}}, "cost_model"},
      {"workloads_object", {{"workloads", Json::object()}}, "workloads"},
      {"workload_bad_op", {{"workloads", Json::array({{{"workload", {{"op", "fft"}}}}})}}, "workloads[0]"},
      {"early_stopping", {{"early_stopping", true}}, "early_stopping"},
      {"precision_number", {{"precision", 8}}, "precision"},
      {"precision_bits", {{"precision", {{"conv1", {{"weight", 8}, {"act", 16}}}}}}, "precision.conv1"},
      {"mode", {{"mode", "train"}}, "field 'mode'"},
      {"optimizer", {{"mode", "training"}, {"optimizer", "lamb"}}, "field 'optimizer'"},
      {"mixed_precision", {{"mode", "training"}, {"mixed_precision", "yes"}}, "field 'mixed_precision'"},
      {"optimizer_inference", {{"optimizer", "adam"}}, "training step"},
      {"batch_zero", {{"batch", 0}}, "field 'batch'"},
      {"training_inference_parallel",
       {{"mode", "training"}, {"parallel", {{"devices", 8}, {"mode", "inference"}}}},
       "parallel.mode"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Json j = minimal();
    j.update(c.patch);
    try {
      JobSpec::from_json(j);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_THAT(e.what(), testing::HasSubstr(c.mentions));
    }
  }
}

TEST(JobSpec, CostModelNamesAnyRegisteredModel) {
  Json j = minimal();
  j["cost_model"] = "test-registered-model";
  EXPECT_THROW(JobSpec::from_json(j), Error);
  costmodel::register_cost_model(
      {"test-registered-model", "the linear model under another name", [](const costmodel::ModelOptions& o) {
         costmodel::ModelOptions linear = o;
         linear.kind = "linear";
         return costmodel::make_cost_model(linear);
       }});
  EXPECT_EQ(JobSpec::from_json(j).cost_model, "test-registered-model");
  costmodel::unregister_cost_model("test-registered-model");
}

TEST(JobSpec, MissingRequiredFieldsAreBadInput) {
  for (const char* field : {"name", "target", "trials"}) {
    SCOPED_TRACE(field);
    Json j = minimal();
    j.erase(field);
    EXPECT_THROW(JobSpec::from_json(j), Error);
  }
  Json j = minimal();
  j.erase("model");
  EXPECT_THROW(JobSpec::from_json(j), Error);  // neither model nor workloads
}

TEST(JobSpec, MissingFileIsBadInput) {
  try {
    JobSpec::load("/nonexistent/job.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
  }
}

}  // namespace
}  // namespace atvoss::tuner
