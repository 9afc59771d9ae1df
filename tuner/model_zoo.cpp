// Model zoo. Shapes per layer are computed from each architecture's published
// configuration table, not typed in, so the counts stay consistent:
//   resnet50: stages of (3, 4, 6, 3) bottlenecks, widths 64..512, stride in the 3x3 (v1.5)
//   mobilenet-v2: the (t, c, n, s) table of the paper, width multiplier 1.0
//   bert-base: 12 layers, hidden 768, 12 heads, FFN 3072
#include "tuner/model_zoo.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace atvoss::tuner {
namespace {

using Epilogue = std::vector<std::string>;

Workload conv(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t rs,
              std::int64_t stride, const Epilogue& epilogue) {
  return Workload::from_json(Json{{"op", "conv2d"},
                                  {"dims",
                                   {{"N", n}, {"C", c}, {"H", hw}, {"W", hw}, {"K", k},
                                    {"R", rs}, {"S", rs}, {"stride", stride}, {"pad", rs / 2}}},
                                  {"epilogue", epilogue}});
}

Workload depthwise(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t stride,
                   const Epilogue& epilogue) {
  return Workload::from_json(Json{{"op", "depthwise_conv2d"},
                                  {"dims",
                                   {{"N", n}, {"C", c}, {"H", hw}, {"W", hw}, {"R", 3},
                                    {"S", 3}, {"stride", stride}, {"pad", 1}}},
                                  {"epilogue", epilogue}});
}

Workload matmul(std::int64_t m, std::int64_t n, std::int64_t k, const Epilogue& epilogue) {
  return Workload::from_json(
      Json{{"op", "matmul"}, {"dims", {{"M", m}, {"N", n}, {"K", k}}}, {"epilogue", epilogue}});
}

Workload batch_matmul(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k) {
  return Workload::from_json(
      Json{{"op", "batch_matmul"}, {"dims", {{"B", b}, {"M", m}, {"N", n}, {"K", k}}}});
}

Workload row_op(const std::string& op, std::int64_t m, std::int64_t n) {
  return Workload::from_json(Json{{"op", op}, {"dims", {{"M", m}, {"N", n}}}});
}

TaskSet resnet50(int batch) {
  TaskSet set(batch == 1 ? "resnet50" : "resnet50-b" + std::to_string(batch), batch);
  const Epilogue bn_relu{"batchnorm", "relu"};
  set.add(conv(batch, 3, 224, 64, 7, 2, bn_relu), "conv1");
  set.add_unsupported("MaxPool");
  const int blocks[4] = {3, 4, 6, 3};
  std::int64_t in_ch = 64, hw = 56;
  for (int s = 0; s < 4; ++s) {
    const std::int64_t width = 64LL << s, out_ch = 4 * width;
    for (int b = 0; b < blocks[s]; ++b) {
      const std::string layer = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
      const std::int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const std::int64_t out_hw = hw / stride;
      set.add(conv(batch, in_ch, hw, width, 1, 1, bn_relu), layer + ".conv1");
      set.add(conv(batch, width, hw, width, 3, stride, bn_relu), layer + ".conv2");
      set.add(conv(batch, width, out_hw, out_ch, 1, 1, {"batchnorm", "add", "relu"}),
              layer + ".conv3");
      if (b == 0) set.add(conv(batch, in_ch, hw, out_ch, 1, stride, {"batchnorm"}),
                          layer + ".downsample");
      in_ch = out_ch;
      hw = out_hw;
    }
  }
  set.add_unsupported("GlobalAveragePool");
  set.add(matmul(batch, 1000, 2048, {"bias"}), "fc");
  return set;
}

TaskSet bert_base() {
  constexpr std::int64_t seq = 128, hidden = 768, heads = 12, ffn = 3072, layers = 12;
  TaskSet set("bert-base", 1);
  set.add_unsupported("Gather", 3);  // word, position and token-type embeddings
  set.add(row_op("layernorm", seq, hidden), "embeddings.layernorm");
  for (int l = 0; l < layers; ++l) {
    const std::string p = "encoder." + std::to_string(l) + ".";
    for (const char* proj : {"query", "key", "value"}) {
      set.add(matmul(seq, hidden, hidden, {"bias"}), p + "attention." + proj);
    }
    set.add(batch_matmul(heads, seq, seq, hidden / heads), p + "attention.scores");
    set.add(row_op("softmax", heads * seq, seq), p + "attention.softmax");
    set.add(batch_matmul(heads, seq, hidden / heads, seq), p + "attention.context");
    set.add(matmul(seq, hidden, hidden, {"bias", "add", "layernorm"}), p + "attention.output");
    set.add(matmul(seq, ffn, hidden, {"bias", "gelu"}), p + "intermediate");
    set.add(matmul(seq, hidden, ffn, {"bias", "add", "layernorm"}), p + "output");
  }
  set.add_unsupported("Transpose", 4 * layers);
  return set;
}

TaskSet mobilenet_v2() {
  TaskSet set("mobilenet-v2", 1);
  const Epilogue bn_relu{"batchnorm", "relu"};  // ReLU6 clamps like ReLU on the vector unit
  set.add(conv(1, 3, 224, 32, 3, 2, bn_relu), "features.0");
  struct Row { int t, c, n, s; };
  const Row table[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::int64_t in_ch = 32, hw = 112;
  int index = 1;
  for (const Row& r : table) {
    for (int i = 0; i < r.n; ++i, ++index) {
      const std::string layer = "features." + std::to_string(index);
      const std::int64_t stride = i == 0 ? r.s : 1;
      const std::int64_t hidden = in_ch * r.t;
      if (r.t != 1) set.add(conv(1, in_ch, hw, hidden, 1, 1, bn_relu), layer + ".expand");
      set.add(depthwise(1, hidden, hw, stride, bn_relu), layer + ".depthwise");
      hw /= stride;
      const bool residual = stride == 1 && in_ch == r.c;
      set.add(conv(1, hidden, hw, r.c, 1, 1,
                   residual ? Epilogue{"batchnorm", "add"} : Epilogue{"batchnorm"}),
              layer + ".project");
      in_ch = r.c;
    }
  }
  set.add(conv(1, 320, 7, 1280, 1, 1, bn_relu), "features.18");
  set.add_unsupported("GlobalAveragePool");
  set.add(matmul(1, 1000, 1280, {"bias"}), "classifier");
  return set;
}

TaskSet mlp() {
  TaskSet set("mlp", 64);
  set.add(matmul(64, 512, 784, {"bias", "relu"}), "fc1");
  set.add(matmul(64, 256, 512, {"bias", "relu"}), "fc2");
  set.add(matmul(64, 10, 256, {"bias"}), "fc3");
  return set;
}

}  // namespace

const std::vector<std::string>& zoo_names() {
  static const std::vector<std::string> names = {"resnet50", "resnet50-b32", "bert-base",
                                                 "mobilenet-v2", "mlp"};
  return names;
}

bool is_zoo_model(const std::string& name) {
  return std::find(zoo_names().begin(), zoo_names().end(), name) != zoo_names().end();
}

TaskSet zoo_model(const std::string& name) {
  if (name == "resnet50") return resnet50(1);
  if (name == "resnet50-b32") return resnet50(32);
  if (name == "bert-base") return bert_base();
  if (name == "mobilenet-v2") return mobilenet_v2();
  if (name == "mlp") return mlp();
  std::string list;
  for (const auto& n : zoo_names()) list += (list.empty() ? "" : ", ") + n;
  throw_bad_input("model: unknown model '" + name + "'; expected an .onnx file or one of: " + list);
}

}  // namespace atvoss::tuner
