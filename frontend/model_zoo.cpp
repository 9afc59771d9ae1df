// Model zoo. Shapes per layer are computed from each architecture's published
// configuration table, not typed in, so the counts stay consistent:
//   resnet50: stages of (3, 4, 6, 3) bottlenecks, widths 64..512, stride in the 3x3 (v1.5)
//   mobilenet-v2: the (t, c, n, s) table of the paper, width multiplier 1.0
//   bert-base: 12 layers, hidden 768, 12 heads, FFN 3072
#include "frontend/model_zoo.hpp"

#include "frontend/training.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

#include "core/error.hpp"

namespace atvoss::frontend {
namespace {

using Epilogue = std::vector<std::string>;

// A conv's epilogue as inference runs it: a leading BatchNormalization folds into the
// weights and becomes the conv's bias (docs/job-spec.md, "Fusion and the vendor default").
Epilogue folded(Epilogue e) {
  if (!e.empty() && e.front() == "batchnorm") e.front() = "bias";
  return e;
}

Workload conv(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t rs, std::int64_t stride,
              const Epilogue& epilogue) {
  return Workload::from_json(Json{
      {"op", "conv2d"},
      {"dims",
       {{"N", n}, {"C", c}, {"H", hw}, {"W", hw}, {"K", k}, {"R", rs}, {"S", rs}, {"stride", stride}, {"pad", rs / 2}}},
      {"epilogue", folded(epilogue)}});
}

Workload depthwise(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t stride, const Epilogue& epilogue) {
  return Workload::from_json(
      Json{{"op", "depthwise_conv2d"},
           {"dims", {{"N", n}, {"C", c}, {"H", hw}, {"W", hw}, {"R", 3}, {"S", 3}, {"stride", stride}, {"pad", 1}}},
           {"epilogue", folded(epilogue)}});
}

Workload matmul(std::int64_t m, std::int64_t n, std::int64_t k, const Epilogue& epilogue) {
  return Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", m}, {"N", n}, {"K", k}}}, {"epilogue", epilogue}});
}

Workload batch_matmul(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k) {
  return Workload::from_json(Json{{"op", "batch_matmul"}, {"dims", {{"B", b}, {"M", m}, {"N", n}, {"K", k}}}});
}

Workload row_op(const std::string& op, std::int64_t m, std::int64_t n, const Epilogue& epilogue = {}) {
  return Workload::from_json(Json{{"op", op}, {"dims", {{"M", m}, {"N", n}}}, {"epilogue", epilogue}});
}

Workload pool(const std::string& op, std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t rs,
              std::int64_t stride, std::int64_t pad) {
  return Workload::from_json(Json{
      {"op", op},
      {"dims", {{"N", n}, {"C", c}, {"H", hw}, {"W", hw}, {"R", rs}, {"S", rs}, {"stride", stride}, {"pad", pad}}}});
}

// Averages each channel's hw x hw map: batch x channels rows of hw^2.
Workload global_avg_pool(std::int64_t n, std::int64_t c, std::int64_t hw) {
  return row_op("global_avg_pool", n * c, hw * hw);
}

// [m, n / inner, inner] -> [n / inner, m, inner].
Workload transpose(std::int64_t m, std::int64_t n, std::int64_t inner) {
  return Workload::from_json(Json{{"op", "transpose"}, {"dims", {{"M", m}, {"N", n}, {"inner", inner}}}});
}

TaskSet resnet50(int batch) {
  TaskSet set("resnet50", batch);
  const Epilogue bn_relu{"batchnorm", "relu"};
  set.add(conv(batch, 3, 224, 64, 7, 2, bn_relu), "conv1");
  set.add(pool("max_pool2d", batch, 64, 112, 3, 2, 1), "maxpool");
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
      set.add(conv(batch, width, out_hw, out_ch, 1, 1, {"batchnorm", "add", "relu"}), layer + ".conv3");
      if (b == 0) set.add(conv(batch, in_ch, hw, out_ch, 1, stride, {"batchnorm"}), layer + ".downsample");
      in_ch = out_ch;
      hw = out_hw;
    }
  }
  set.add(global_avg_pool(batch, 2048, 7), "avgpool");
  set.add(matmul(batch, 1000, 2048, {"bias"}), "fc");
  return set;
}

// A BERT encoder: `layers` blocks of hidden size `hidden` with `heads` heads and an FFN of
// `ffn`, over `batch` sequences of `seq` tokens (the rows of every matmul are the batch's tokens).
struct BertShape {
  std::int64_t layers, hidden, heads, ffn, seq;
};
constexpr BertShape kBertBase{12, 768, 12, 3072, 128};
constexpr BertShape kBertLarge{24, 1024, 16, 4096, 128};

TaskSet bert(const std::string& name, const BertShape& b, int batch) {
  const std::int64_t rows = batch * b.seq, head_dim = b.hidden / b.heads, hidden = b.hidden;
  TaskSet set(name, batch);
  // Word, position and token-type embeddings: three row gathers, summed.
  set.add(row_op("gather", rows, hidden), "embeddings.gather", 3);
  set.add(row_op("elementwise", rows, hidden), "embeddings.add", 2);
  set.add(row_op("layernorm", rows, hidden), "embeddings.layernorm");
  for (int l = 0; l < b.layers; ++l) {
    const std::string p = "encoder." + std::to_string(l) + ".";
    for (const char* proj : {"query", "key", "value"}) {
      set.add(matmul(rows, hidden, hidden, {"bias"}), p + "attention." + proj);
    }
    // Q, K, V split into heads and the context merged back: [seq, heads, d] <-> [heads, seq, d]
    // per sequence; the batch's sequences side by side move the same bytes.
    set.add(transpose(rows, hidden, head_dim), p + "attention.heads", 4);
    set.add(batch_matmul(batch * b.heads, b.seq, b.seq, head_dim), p + "attention.scores");
    set.add(row_op("softmax", batch * b.heads * b.seq, b.seq), p + "attention.softmax");
    set.add(batch_matmul(batch * b.heads, b.seq, head_dim, b.seq), p + "attention.context");
    set.add(matmul(rows, hidden, hidden, {"bias", "add", "layernorm"}), p + "attention.output");
    set.add(matmul(rows, b.ffn, hidden, {"bias", "gelu"}), p + "intermediate");
    set.add(matmul(rows, hidden, b.ffn, {"bias", "add", "layernorm"}), p + "output");
  }
  return set;
}

TaskSet mobilenet_v2(int batch) {
  TaskSet set("mobilenet-v2", batch);
  const Epilogue bn_relu{"batchnorm", "relu"};  // ReLU6 clamps like ReLU on the vector unit
  set.add(conv(batch, 3, 224, 32, 3, 2, bn_relu), "features.0");
  struct Row {
    int t, c, n, s;
  };
  const Row table[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::int64_t in_ch = 32, hw = 112;
  int index = 1;
  for (const Row& r : table) {
    for (int i = 0; i < r.n; ++i, ++index) {
      const std::string layer = "features." + std::to_string(index);
      const std::int64_t stride = i == 0 ? r.s : 1;
      const std::int64_t hidden = in_ch * r.t;
      if (r.t != 1) set.add(conv(batch, in_ch, hw, hidden, 1, 1, bn_relu), layer + ".expand");
      set.add(depthwise(batch, hidden, hw, stride, bn_relu), layer + ".depthwise");
      hw /= stride;
      const bool residual = stride == 1 && in_ch == r.c;
      set.add(conv(batch, hidden, hw, r.c, 1, 1, residual ? Epilogue{"batchnorm", "add"} : Epilogue{"batchnorm"}),
              layer + ".project");
      in_ch = r.c;
    }
  }
  set.add(conv(batch, 320, 7, 1280, 1, 1, bn_relu), "features.18");
  set.add(global_avg_pool(batch, 1280, 7), "pool");
  set.add(matmul(batch, 1000, 1280, {"bias"}), "classifier");
  return set;
}

// YOLOv7-tiny (yolov7-tiny.yaml of the reference implementation) at 640 x 640: convs
// with LeakyReLU(0.1), ELAN blocks (two 1x1 branches, two 3x3 in a row, concat of four,
// 1x1 merge), 2x2 max pools, the SPP-CSP neck (5/9/13 max pools), two nearest 2x
// upsamplings, and three 1x1 detect convs to 3 x (80 + 5) = 255 channels.
TaskSet yolov7_tiny(int batch) {
  TaskSet set("yolov7-tiny", batch);
  const Epilogue bn_leaky{"batchnorm", "leaky_relu"};
  auto cbl = [&](std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t rs, std::int64_t stride,
                 const std::string& name) { set.add(conv(batch, c, hw, k, rs, stride, bn_leaky), name); };
  auto concat = [&](std::int64_t channels, std::int64_t hw, const std::string& name) {
    set.add(row_op("concat", batch * channels, hw * hw), name);
  };
  // Nearest-neighbour 2x upsample of channels x hw x hw (rows of hw pixels).
  auto upsample2x = [&](std::int64_t channels, std::int64_t hw, const std::string& name) {
    set.add(Workload::from_json(
                Json{{"op", "upsample"}, {"dims", {{"M", batch * channels * hw}, {"N", hw}, {"scale", 2}}}}),
            name);
  };
  // ELAN: c_in -> four branches of c -> concat 4c -> 1x1 to out.
  auto elan = [&](const std::string& name, std::int64_t c_in, std::int64_t c, std::int64_t out, std::int64_t hw) {
    cbl(c_in, hw, c, 1, 1, name + ".cv1");
    cbl(c_in, hw, c, 1, 1, name + ".cv2");
    cbl(c, hw, c, 3, 1, name + ".cv3");
    cbl(c, hw, c, 3, 1, name + ".cv4");
    concat(4 * c, hw, name + ".concat");
    cbl(4 * c, hw, out, 1, 1, name + ".merge");
  };
  auto maxpool = [&](std::int64_t c, std::int64_t hw, const std::string& name) {
    set.add(pool("max_pool2d", batch, c, hw, 2, 2, 0), name);
  };
  cbl(3, 640, 32, 3, 2, "backbone.0");
  cbl(32, 320, 64, 3, 2, "backbone.1");
  elan("backbone.elan1", 64, 32, 64, 160);
  maxpool(64, 160, "backbone.mp1");
  elan("backbone.elan2", 64, 64, 128, 80);
  maxpool(128, 80, "backbone.mp2");
  elan("backbone.elan3", 128, 128, 256, 40);
  maxpool(256, 40, "backbone.mp3");
  elan("backbone.elan4", 256, 256, 512, 20);
  // SPP-CSP: two 1x1 branches; max pools 5, 9, 13 at stride 1; concat; merge.
  cbl(512, 20, 256, 1, 1, "neck.sppcsp.cv1");
  cbl(512, 20, 256, 1, 1, "neck.sppcsp.cv2");
  for (std::int64_t k : {5, 9, 13}) {
    set.add(pool("max_pool2d", batch, 256, 20, k, 1, k / 2), "neck.sppcsp.pool" + std::to_string(k));
  }
  concat(1024, 20, "neck.sppcsp.concat1");
  cbl(1024, 20, 256, 1, 1, "neck.sppcsp.cv3");
  concat(512, 20, "neck.sppcsp.concat2");
  cbl(512, 20, 256, 1, 1, "neck.sppcsp.cv4");
  // Top-down: upsample 20 -> 40 -> 80, each joined with the backbone's lateral 1x1.
  cbl(256, 20, 128, 1, 1, "neck.up1.cv");
  upsample2x(128, 20, "neck.up1.upsample");
  cbl(256, 40, 128, 1, 1, "neck.up1.lateral");
  concat(256, 40, "neck.up1.concat");
  elan("neck.elan5", 256, 64, 128, 40);
  cbl(128, 40, 64, 1, 1, "neck.up2.cv");
  upsample2x(64, 40, "neck.up2.upsample");
  cbl(128, 80, 64, 1, 1, "neck.up2.lateral");
  concat(128, 80, "neck.up2.concat");
  elan("neck.elan6", 128, 32, 64, 80);
  // Bottom-up: stride-2 3x3 convs joined with the top-down outputs.
  cbl(64, 80, 128, 3, 2, "neck.down1.cv");
  concat(256, 40, "neck.down1.concat");
  elan("neck.elan7", 256, 64, 128, 40);
  cbl(128, 40, 256, 3, 2, "neck.down2.cv");
  concat(512, 20, "neck.down2.concat");
  elan("neck.elan8", 512, 128, 256, 20);
  // Heads: a 3x3 conv per scale, then the 1x1 detect conv (bias, no activation).
  const std::int64_t heads[3][3] = {{64, 80, 128}, {128, 40, 256}, {256, 20, 512}};
  for (int i = 0; i < 3; ++i) {
    const auto [c, hw, k] = std::tuple(heads[i][0], heads[i][1], heads[i][2]);
    cbl(c, hw, k, 3, 1, "head." + std::to_string(i) + ".cv");
    set.add(conv(batch, k, hw, 255, 1, 1, {"bias"}), "head." + std::to_string(i) + ".detect");
  }
  return set;
}

// ESRGAN's RRDB body (Wang et al. 2018, RRDBNet: nf 64, gc 32, 23 blocks) on a 128 x 128
// input: the first conv, 23 residual-in-residual dense blocks of three dense blocks of
// five 3x3 convs (LeakyReLU(0.2) on the first four, whose inputs are the concatenation
// of all earlier outputs), residual scaling by 0.2 at both levels, the trunk conv and
// the long skip.
TaskSet esrgan_rrdb(int batch) {
  constexpr std::int64_t nf = 64, gc = 32, hw = 128, blocks = 23;
  TaskSet set("esrgan-rrdb", batch);
  set.add(conv(batch, 3, hw, nf, 3, 1, {"bias"}), "conv_first");
  for (int b = 0; b < blocks; ++b) {
    for (int r = 0; r < 3; ++r) {
      const std::string p = "body." + std::to_string(b) + ".rdb" + std::to_string(r + 1) + ".";
      for (int i = 0; i < 4; ++i) {
        const std::int64_t in = nf + i * gc;
        if (i > 0) set.add(row_op("concat", batch * in, hw * hw), p + "cat" + std::to_string(i + 1));
        set.add(conv(batch, in, hw, gc, 3, 1, {"bias", "leaky_relu"}), p + "conv" + std::to_string(i + 1));
      }
      set.add(row_op("concat", batch * (nf + 4 * gc), hw * hw), p + "cat5");
      // x + 0.2 * conv5(x): the scaled residual rides on the conv as its epilogue.
      set.add(conv(batch, nf + 4 * gc, hw, nf, 3, 1, {"bias", "add"}), p + "conv5");
    }
    set.add(row_op("elementwise", batch * nf, hw * hw), "body." + std::to_string(b) + ".residual");
  }
  set.add(conv(batch, nf, hw, nf, 3, 1, {"bias", "add"}), "trunk_conv");
  return set;
}

// A Mixtral-style MoE transformer block (Jiang et al. 2024: hidden 4096, 32 query and
// 8 key/value heads of 128, 8 experts with SwiGLU FFN 14336, top-2 gating) over 512
// tokens. Attention is the fused op. The router's top-2 choice per token is drawn
// from a fixed seed (kRoutingSeed): each expert's GEMMs get the token count the
// routing gives it, so the experts' tasks differ as they would in a real batch.
TaskSet moe_block(int batch) {
  const std::int64_t tokens = 512 * std::int64_t{batch};
  constexpr std::int64_t hidden = 4096, heads = 32, kv_heads = 8, head_dim = 128;
  constexpr std::int64_t ffn = 14336, experts = 8;
  constexpr std::uint64_t kRoutingSeed = 20240108;
  TaskSet set("moe-block", batch);
  set.add(row_op("layernorm", tokens, hidden), "attention_norm");  // RMSNorm: same template
  set.add(matmul(tokens, heads * head_dim, hidden, {}), "attention.wq");
  set.add(matmul(tokens, kv_heads * head_dim, hidden, {}), "attention.wk", 2);  // wk, wv
  set.add(transpose(tokens, heads * head_dim, head_dim), "attention.heads");
  set.add(Workload::from_json(
              Json{{"op", "attention"}, {"dims", {{"B", heads}, {"S", tokens}, {"L", tokens}, {"D", head_dim}}}}),
          "attention.core");
  set.add(transpose(heads, tokens * head_dim, head_dim), "attention.merge");
  set.add(matmul(tokens, hidden, heads * head_dim, {"add"}), "attention.wo");
  set.add(row_op("layernorm", tokens, hidden), "ffn_norm");
  set.add(matmul(tokens, experts, hidden, {}), "moe.gate");
  set.add(row_op("softmax", tokens, experts), "moe.router_softmax");
  std::mt19937_64 rng(kRoutingSeed);
  std::normal_distribution<double> logit(0.0, 1.0);
  std::vector<std::int64_t> routed(experts, 0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<double> l(experts);
    for (auto& x : l) x = logit(rng);
    std::vector<int> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int a, int b) { return l[a] > l[b]; });
    ++routed[order[0]];
    ++routed[order[1]];
  }
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t n = routed[e];
    if (n == 0) continue;
    const std::string p = "moe.expert" + std::to_string(e) + ".";
    set.add(matmul(n, ffn, hidden, {"silu"}), p + "w1");
    set.add(matmul(n, ffn, hidden, {}), p + "w3");
    set.add(row_op("elementwise", n, ffn), p + "gate_mul");
    set.add(matmul(n, hidden, ffn, {}), p + "w2");
  }
  // Each token's two expert outputs, weighted by the router, and the block's residual.
  set.add(row_op("elementwise", tokens, hidden), "moe.combine", 2);
  return set;
}

TaskSet mlp(int batch) {
  TaskSet set("mlp", batch);
  set.add(matmul(batch, 512, 784, {"bias", "relu"}), "fc1");
  set.add(matmul(batch, 256, 512, {"bias", "relu"}), "fc2");
  set.add(matmul(batch, 10, 256, {"bias"}), "fc3");
  return set;
}

// Each zoo name: the builder of its model at a batch, the batch it has unless told, and
// whether the name is the model's training step (frontend/training.hpp).
struct ZooEntry {
  const char* name;
  TaskSet (*build)(int batch);
  int batch;
  bool training;
};

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> entries = {
      {"resnet50", resnet50, 1, false},
      {"resnet50-b32", resnet50, 32, false},
      {"bert-base", [](int b) { return bert("bert-base", kBertBase, b); }, 1, false},
      {"bert-large", [](int b) { return bert("bert-large", kBertLarge, b); }, 1, false},
      {"bert-large-s512",
       [](int b) {
         BertShape s = kBertLarge;
         s.seq = 512;
         return bert("bert-large-s512", s, b);
       },
       1, false},
      {"mobilenet-v2", mobilenet_v2, 1, false},
      {"mlp", mlp, 64, false},
      {"yolov7-tiny", yolov7_tiny, 1, false},
      {"esrgan-rrdb", esrgan_rrdb, 1, false},
      {"moe-block", moe_block, 1, false},
      {"resnet50-train", resnet50, 32, true},
      {"bert-base-train", [](int b) { return bert("bert-base", kBertBase, b); }, 1, true}};
  return entries;
}

}  // namespace

const std::vector<std::string>& zoo_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ZooEntry& e : zoo()) out.push_back(e.name);
    return out;
  }();
  return names;
}

bool is_zoo_model(const std::string& name) {
  return std::find(zoo_names().begin(), zoo_names().end(), name) != zoo_names().end();
}

int zoo_batch(const std::string& name) {
  for (const ZooEntry& e : zoo())
    if (name == e.name) return e.batch;
  return 0;
}

TaskSet zoo_model(const std::string& name, int batch, const TrainingSetup& setup) {
  const auto e = std::find_if(zoo().begin(), zoo().end(), [&](const ZooEntry& z) { return name == z.name; });
  if (e == zoo().end()) {
    std::string list;
    for (const auto& n : zoo_names()) list += (list.empty() ? "" : ", ") + n;
    throw_bad_input("model: unknown model '" + name + "'; expected an .onnx file or one of: " + list);
  }
  if (batch < 0 || batch > 4096) throw_bad_input("batch: must be in 1..4096, got " + std::to_string(batch));
  const int b = batch == 0 ? e->batch : batch;
  const TaskSet layers = e->build(b);
  // The zoo's own batch keeps the zoo's name; another shows in it ("mlp-b8", "resnet50-b8-train").
  const std::string model =
      b == e->batch ? std::string(e->name) : layers.model() + "-b" + std::to_string(b) + (e->training ? "-train" : "");
  if (e->training) return tasks_from_graph(training_graph(chain_graph(layers), setup), model, b);
  return tasks_from_graph(chain_graph(layers), model, b);
}

}  // namespace atvoss::frontend
