// Precision: a job's whole-model or per-layer dtype, the int8 requantize epilogue and the
// quantise/dequantise at precision changes, the
// fp16 -> int8 -> mixed rows of the report and the labelled error estimate.
#include "frontend/precision.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "frontend/model_zoo.hpp"
#include "lowering/epilogue.hpp"
#include "report/model_evaluation.hpp"
#include "simulator/presets.hpp"

namespace atvoss::tuner {
namespace {

std::string bad_input_message(const Json& j) {
  try {
    frontend::parse_precision(j);
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    return e.what();
  }
  ADD_FAILURE() << "accepted " << j.dump();
  return "";
}

TEST(Precision, WholeModelAndPerLayer) {
  EXPECT_EQ(frontend::parse_precision(Json("int8")).rest, DType::int8);
  const frontend::PrecisionSpec s = frontend::parse_precision(
      parse_json(R"({"conv1": {"weight": 8, "act": 8}, "fc": {"weight": 16, "act": 16, "type": "bfloat16"},
                     "*": {"weight": 32, "act": 32}})",
                 "test"));
  EXPECT_EQ(s.layers.at("conv1"), DType::int8);
  EXPECT_EQ(s.layers.at("fc"), DType::bfloat16);
  EXPECT_EQ(s.rest, DType::float32);
}

TEST(Precision, BadInputNamesTheLayerAndField) {
  EXPECT_NE(bad_input_message(parse_json(R"({"conv1": {"weight": 8, "act": 16}})", "t")).find("precision.conv1"),
            std::string::npos);
  EXPECT_NE(bad_input_message(parse_json(R"({"conv1": {"weight": 12, "act": 12}})", "t")).find("'weight'"),
            std::string::npos);
  EXPECT_NE(bad_input_message(parse_json(R"({"conv1": {"weight": 8}})", "t")).find("'act'"), std::string::npos);
  // The job spec's field is named, not a workload's 'dtype'.
  EXPECT_NE(bad_input_message(Json("float8")).find("job spec: field 'precision' must be one of float16"),
            std::string::npos);
  EXPECT_NE(bad_input_message(parse_json(R"({"fc": "float8"})", "t")).find("job spec: precision.fc must be one of"),
            std::string::npos);
  EXPECT_NE(bad_input_message(parse_json(R"({"fc": {"weight": 16, "act": 16, "type": "half"}})", "t"))
                .find("precision.fc: field 'type' must be one of"),
            std::string::npos);
  const frontend::PrecisionSpec s = frontend::parse_precision(parse_json(R"({"conv99": "int8"})", "t"));
  try {
    frontend::apply_precision(frontend::zoo_model("resnet50"), s);
    ADD_FAILURE() << "accepted an unknown layer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv99"), std::string::npos);
  }
}

TEST(Precision, ALayerLeavesItsSharedTaskAndConvertsAtItsEdges) {
  const frontend::TaskSet model = frontend::zoo_model("resnet50");
  // layer1.1 and layer1.2 share their conv1 workload: one task of weight 2. The int8 layer
  // dequantises its output for the float16 layer after it, and the layer before it
  // (layer1.1.conv3, which shares its workload with layer1.2.conv3) quantises its own.
  const frontend::TaskSet mixed =
      frontend::apply_precision(model, frontend::parse_precision(parse_json(R"({"layer1.2.conv1": "int8"})", "t")));
  EXPECT_EQ(mixed.tasks().size(), model.tasks().size() + 2);
  EXPECT_EQ(mixed.total_occurrences(), model.total_occurrences());
  int int8_tasks = 0, quantizing = 0;
  for (const auto& t : mixed.tasks()) {
    if (t.workload.has_epilogue("quantize")) {
      ++quantizing;
      EXPECT_EQ(t.name, "layer1.1.conv3");
      EXPECT_EQ(t.weight, 1);
      EXPECT_EQ(t.workload.dtype(), DType::float16);
    }
    if (t.workload.dtype() != DType::int8) continue;
    ++int8_tasks;
    EXPECT_EQ(t.name, "layer1.2.conv1");
    EXPECT_EQ(t.weight, 1);
    EXPECT_EQ(t.workload.epilogue(), (std::vector<std::string>{"bias", "relu", "dequantize"}));
  }
  EXPECT_EQ(int8_tasks, 1);
  EXPECT_EQ(quantizing, 1);
}

TEST(Precision, AnInt8RunRequantizesInsideAndConvertsAtItsEnds) {
  frontend::TaskSet model("chain", 1);
  for (std::int64_t c : {16, 32, 48, 64}) {
    model.add(Workload::from_json(Json{{"op", "conv2d"},
                                       {"dims", {{"N", 1}, {"C", c}, {"H", 8}, {"W", 8}, {"K", c}, {"R", 1}, {"S", 1}}},
                                       {"epilogue", {"relu"}}}),
              "conv" + std::to_string(c));
  }
  const frontend::TaskSet q = frontend::apply_precision(
      model, frontend::parse_precision(parse_json(R"({"conv32": "int8", "conv48": "int8"})", "t")));
  ASSERT_EQ(q.tasks().size(), 4u);
  EXPECT_EQ(q.tasks()[0].workload.epilogue(), (std::vector<std::string>{"relu", "quantize"}));
  EXPECT_EQ(q.tasks()[1].workload.epilogue(), (std::vector<std::string>{"relu", "requantize"}));
  EXPECT_EQ(q.tasks()[2].workload.epilogue(), (std::vector<std::string>{"relu", "dequantize"}));
  EXPECT_EQ(q.tasks()[3].workload.epilogue(), (std::vector<std::string>{"relu"}));
  // The conversions are elementwise epilogues: fusion level 1 folds them in.
  EXPECT_TRUE(lowering::split_epilogue(q.tasks()[0].workload.op(), {"relu", "quantize"}, 1).unfused.empty());
  EXPECT_TRUE(lowering::split_epilogue(q.tasks()[2].workload.op(), {"relu", "dequantize"}, 1).unfused.empty());
  // Back in float16 the layer loses its conversion.
  EXPECT_EQ(frontend::with_dtype(q.tasks()[2].workload, DType::float16).epilogue(), std::vector<std::string>{"relu"});
}

TEST(Precision, WholeModelInt8KeepsSoftmaxAndPoolsInFloatAndPaysTheConversions) {
  // conv -> max pool -> conv -> softmax: the convs go int8; the pool and the softmax stay
  // float16, so the first conv dequantises its output, the pool (which takes no epilogue)
  // gets a quantize kernel of its own, and the second conv dequantises for the softmax.
  frontend::TaskSet model("net", 1);
  auto conv = [](std::int64_t c) {
    return Workload::from_json(Json{{"op", "conv2d"},
                                    {"dims", {{"N", 1}, {"C", c}, {"H", 8}, {"W", 8}, {"K", 16}, {"R", 1}, {"S", 1}}},
                                    {"epilogue", {"relu"}}});
  };
  model.add(conv(8), "conv1");
  model.add(
      Workload::from_json(Json{{"op", "max_pool2d"},
                               {"dims", {{"N", 1}, {"C", 16}, {"H", 8}, {"W", 8}, {"R", 2}, {"S", 2}, {"stride", 2}}}}),
      "pool");
  model.add(conv(16), "conv2");
  model.add(Workload::from_json(Json{{"op", "softmax"}, {"dims", {{"M", 64}, {"N", 16}}}}), "softmax");
  model.set_graph(frontend::chain_graph(model));
  const frontend::TaskSet q = frontend::apply_precision(model, frontend::PrecisionSpec::whole(DType::int8));
  // The graph's nodes run the kernels the tasks now hold.
  const frontend::Graph& g = q.graph();
  EXPECT_EQ(g.nodes()[g.node_index("conv1")].kernel->dtype(), DType::int8);
  EXPECT_EQ(g.nodes()[g.node_index("conv1")].kernel->epilogue(), (std::vector<std::string>{"relu", "dequantize"}));
  EXPECT_EQ(g.nodes()[g.node_index("softmax")].kernel->dtype(), DType::float16);
  std::vector<std::string> names;
  for (const auto& step : q.layer_order()) names.push_back(step.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "pool", "pool.quantize", "conv2", "softmax"}));
  const auto& tasks = q.tasks();
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(tasks[0].workload.dtype(), DType::int8);
  EXPECT_EQ(tasks[0].workload.epilogue(), (std::vector<std::string>{"relu", "dequantize"}));
  EXPECT_EQ(tasks[1].workload.dtype(), DType::float16);  // the pool
  EXPECT_EQ(tasks[2].workload.op(), "map");
  EXPECT_EQ(tasks[2].workload.epilogue(), std::vector<std::string>{"quantize"});
  EXPECT_DOUBLE_EQ(tasks[2].workload.out_elements(), tasks[1].workload.out_elements());
  EXPECT_EQ(tasks[3].workload.epilogue(), (std::vector<std::string>{"relu", "dequantize"}));
  EXPECT_EQ(tasks[4].workload.dtype(), DType::float16);
  EXPECT_EQ(frontend::int8_error_estimate(tasks[4].workload), 0);  // no softmax error: it is not quantised
  // A layer the spec names is quantised all the same.
  const frontend::TaskSet forced = frontend::apply_precision(
      model, frontend::parse_precision(parse_json(R"({"*": "int8", "softmax": "int8"})", "t")));
  EXPECT_EQ(forced.tasks().back().workload.dtype(), DType::int8);
}

TEST(Precision, ADtypeTheMatrixUnitLacksFallsBackByNameWithAWarning) {
  std::vector<std::string> warnings;
  const auto spec = frontend::parse_precision(parse_json(R"({"*": "bfloat16", "fc": "int8"})", "t"));
  const frontend::PrecisionSpec on910 = frontend::fit_precision(spec, simulator::preset("ascend910"), warnings);
  EXPECT_EQ(on910.rest, DType::float16);
  EXPECT_EQ(on910.layers.at("fc"), DType::int8);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("bfloat16 is not supported by ascend910's matrix unit (it runs float16, int8)"),
            std::string::npos);
  EXPECT_NE(warnings[0].find("runs float16 instead"), std::string::npos);
  warnings.clear();
  const frontend::PrecisionSpec on910b = frontend::fit_precision(spec, simulator::preset("ascend910b"), warnings);
  EXPECT_EQ(on910b.rest, DType::bfloat16);
  EXPECT_TRUE(warnings.empty());
}

TEST(Precision, EachDtypeFollowsTheTargetsRates) {
  // fp32 is tuned as fp32 (a quarter of the fp16 cube rate on the 910), int8 at twice it.
  const frontend::TaskSet model = frontend::zoo_model("resnet50");
  const Target t = simulator::preset("ascend910");
  const auto rows = report::evaluate_precisions(model, frontend::PrecisionSpec::whole(DType::float32), t);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "float16");
  EXPECT_EQ(rows[1].name, "int8");
  EXPECT_LT(rows[1].default_us, rows[0].default_us);
  EXPECT_GT(rows[2].default_us, rows[0].default_us);
  EXPECT_EQ(report::evaluate_precisions(model, {}, t).size(), 2u);  // no job precision: no third row
}

TEST(Precision, ErrorEstimateGrowsWithFanInAndOnlyForInt8) {
  const Workload small =
      Workload::from_json(parse_json(R"({"op":"matmul","dims":{"M":64,"N":64,"K":64},"dtype":"int8"})", "t"));
  const Workload big =
      Workload::from_json(parse_json(R"({"op":"matmul","dims":{"M":64,"N":64,"K":4096},"dtype":"int8"})", "t"));
  EXPECT_DOUBLE_EQ(frontend::int8_error_estimate(big), 8 * frontend::int8_error_estimate(small));
  EXPECT_EQ(frontend::int8_error_estimate(frontend::with_dtype(big, DType::float16)), 0);
}

}  // namespace
}  // namespace atvoss::tuner
