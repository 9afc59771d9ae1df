// Builds small ONNX models at test time with python3-onnx (no downloaded models)
// and checks the tasks, epilogue chains, weights and unsupported ops extracted.
#include "frontend/onnx_import.hpp"

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include <unistd.h>

#include "backend/backend.hpp"
#include "backend/targets.hpp"
#include "core/error.hpp"
#include "frontend/fallback.hpp"

namespace atvoss::frontend {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScript = R"py(
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T
out = sys.argv[1]
def init(name, *shape):
    return numpy_helper.from_array(np.ones(shape, dtype=np.float32), name)
def bn(x, y, c, p):
    return helper.make_node("BatchNormalization", [x, p+"s", p+"b", p+"m", p+"v"], [y]), \
        [init(p+"s", c), init(p+"b", c), init(p+"m", c), init(p+"v", c)]
nodes, inits = [], []
nodes.append(helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1,1,1,1], name="stem"))
inits.append(init("w1", 8, 3, 3, 3))
n, i = bn("c1", "b1", 8, "bn1"); nodes.append(n); inits += i
nodes.append(helper.make_node("Relu", ["b1"], ["r1"]))
prev = "r1"
for k in (2, 3):
    nodes.append(helper.make_node("Conv", [prev, "w%d" % k], ["c%d" % k], pads=[1,1,1,1], name="block%d" % k))
    inits.append(init("w%d" % k, 8, 8, 3, 3))
    n, i = bn("c%d" % k, "b%d" % k, 8, "bn%d" % k); nodes.append(n); inits += i
    nodes.append(helper.make_node("Add", ["b%d" % k, prev], ["a%d" % k]))
    nodes.append(helper.make_node("Relu", ["a%d" % k], ["r%d" % k]))
    prev = "r%d" % k
nodes.append(helper.make_node("MaxPool", [prev], ["p"], kernel_shape=[2,2], strides=[2,2]))
nodes.append(helper.make_node("Flatten", ["p"], ["f"]))
nodes.append(helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], transB=1, name="fc"))
inits += [init("wfc", 10, 8*16*16), init("bfc", 10)]
g = helper.make_graph(nodes, "convnet",
    [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 3, 32, 32])],
    [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/convnet.onnx")

nodes, inits = [], []
nodes.append(helper.make_node("MatMul", ["x", "wq"], ["m1"], name="attn_out"))
nodes.append(helper.make_node("Add", ["m1", "bq"], ["a1"]))
nodes.append(helper.make_node("Add", ["a1", "x"], ["a2"]))
nodes.append(helper.make_node("LayerNormalization", ["a2", "ls", "lb"], ["h"], axis=-1))
nodes.append(helper.make_node("MatMul", ["h", "wf"], ["m2"], name="ffn"))
nodes.append(helper.make_node("Add", ["m2", "bf"], ["a3"]))
nodes.append(helper.make_node("Gelu", ["a3"], ["g"], domain="com.microsoft"))
nodes.append(helper.make_node("MatMul", ["q", "k"], ["s"], name="scores"))
nodes.append(helper.make_node("Softmax", ["s"], ["sm"], axis=-1, name="softmax"))
inits += [init("wq", 32, 32), init("bq", 32), init("ls", 32), init("lb", 32),
          init("wf", 32, 64), init("bf", 64)]
g = helper.make_graph(nodes, "encoder",
    [helper.make_tensor_value_info("x", T.FLOAT, [1, 16, 32]),
     helper.make_tensor_value_info("q", T.FLOAT16, [1, 4, 16, 8]),
     helper.make_tensor_value_info("k", T.FLOAT16, [1, 4, 8, 16])],
    [helper.make_tensor_value_info("g", T.FLOAT, None), helper.make_tensor_value_info("sm", T.FLOAT16, None)],
    inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                              helper.make_opsetid("com.microsoft", 1)]),
          out + "/encoder.onnx")

# The ops of classic ImageNet networks: grouped conv (AlexNet, ShuffleNet), LRN, pooling,
# a pre-activation block (standalone BatchNormalization), a residual Sum, Mul, Concat,
# Transpose (channel shuffle), Upsample, Dropout, Flatten and Reshape, and a constant subgraph.
nodes, inits = [], []
nodes.append(helper.make_node("Conv", ["x", "wg"], ["g1"], pads=[1,1,1,1], group=4, name="grouped"))
inits.append(init("wg", 16, 2, 3, 3))
nodes.append(helper.make_node("Relu", ["g1"], ["g2"]))
nodes.append(helper.make_node("LRN", ["g2"], ["l1"], size=5, name="lrn"))
nodes.append(helper.make_node("MaxPool", ["l1"], ["p1"], kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1], name="pool"))
n, i = bn("p1", "n1", 16, "pre"); n.name = "preact"; nodes.append(n); inits += i
nodes.append(helper.make_node("Relu", ["n1"], ["n2"]))
nodes.append(helper.make_node("Conv", ["n2", "wc"], ["c1"], pads=[1,1,1,1], name="body"))
inits.append(init("wc", 16, 16, 3, 3))
nodes.append(helper.make_node("Sum", ["c1", "p1"], ["s1"]))
nodes.append(helper.make_node("Relu", ["s1"], ["s2"]))
nodes.append(helper.make_node("Mul", ["s2", "s2"], ["m1"], name="mul"))
nodes.append(helper.make_node("AveragePool", ["m1"], ["ap"], kernel_shape=[2,2], strides=[2,2], name="avg"))
nodes.append(helper.make_node("Transpose", ["ap"], ["tp"], perm=[0,2,3,1], name="to_nhwc"))
nodes.append(helper.make_node("Transpose", ["tp"], ["tq"], perm=[0,3,1,2], name="to_nchw"))
nodes.append(helper.make_node("Concat", ["tq", "ap"], ["cat"], axis=1, name="cat"))
nodes.append(helper.make_node("Upsample", ["cat", "scales"], ["up"], mode="nearest", name="up"))
inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales"))
nodes.append(helper.make_node("Dropout", ["up"], ["d1"]))
nodes.append(helper.make_node("GlobalAveragePool", ["d1"], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["f0"]))
nodes.append(helper.make_node("Reshape", ["f0", "rs"], ["f"]))
inits.append(numpy_helper.from_array(np.array([1, 32], dtype=np.int64), "rs"))
# A constant subgraph: ConstantOfShape of an Unsqueezed constant, added as a bias.
nodes.append(helper.make_node("Constant", [], ["len"], value=numpy_helper.from_array(np.array(10, dtype=np.int64))))
nodes.append(helper.make_node("Unsqueeze", ["len"], ["shp"], axes=[0]))
nodes.append(helper.make_node("ConstantOfShape", ["shp"], ["zeros"],
    value=numpy_helper.from_array(np.array([0.0], dtype=np.float32))))
nodes.append(helper.make_node("Gemm", ["f", "wfc", "zeros"], ["y"], transB=1, name="fc"))
inits.append(init("wfc", 10, 32))
g = helper.make_graph(nodes, "classic",
    [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 16, 16])],
    [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
m.ir_version = 7
onnx.save(m, out + "/classic.onnx")

# Constructs of real graphs that once aborted a job or were left untuned: a channel shuffle
# whose transposed rows are 56 x 56 = 3136 elements, pools with every window attribute
# (ceil_mode, per-side pads, dilations, auto_pad, a stride per axis), ops without a
# lowering, and a dilated conv. Sidecar files give each node's name as atvoss names it
# and each pool's output shape from ONNX's own shape inference.
def name_of(n):
    return n.name if n.name else n.op_type + ":" + n.output[0]
nodes, inits = [], []
nodes.append(helper.make_node("Reshape", ["x", "s5"], ["r5"], name="shuffle_split"))
inits.append(numpy_helper.from_array(np.array([1, 2, 4, 56, 56], dtype=np.int64), "s5"))
nodes.append(helper.make_node("Transpose", ["r5"], ["t5"], perm=[0, 2, 1, 3, 4], name="shuffle"))
nodes.append(helper.make_node("Reshape", ["t5", "s4"], ["sh"], name="shuffle_join"))
inits.append(numpy_helper.from_array(np.array([1, 8, 56, 56], dtype=np.int64), "s4"))
pools = [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), "ceil"),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]), "caffe_pads"),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 0, 0, 1], count_include_pad=0), "asym_avg"),
    ("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]), "dilated"),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), "same_upper"),
    ("AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER"), "same_lower"),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[1, 2], ceil_mode=1), "uneven_stride"),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1), "ceil_padded"),
]
outs = []
for op, attrs, nm in pools:
    nodes.append(helper.make_node(op, ["sh"], [nm], name=nm, **attrs))
    outs.append(nm)
nodes.append(helper.make_node("Erf", ["sh"], ["erf"], name="erf"))
nodes.append(helper.make_node("ArgMax", ["sh"], ["am"], axis=1))  # unnamed: atvoss names it by output
nodes.append(helper.make_node("Conv", ["sh", "wd"], ["dc"], dilations=[2, 2], pads=[2, 2, 2, 2], name="dilated_conv"))
inits.append(init("wd", 8, 8, 3, 3))
# A conv with its own bias, then BatchNormalization and Relu: the BN folds into the bias.
nodes.append(helper.make_node("Conv", ["sh", "wb", "bb"], ["bc"], pads=[1, 1, 1, 1], name="biased_conv"))
inits += [init("wb", 8, 8, 3, 3), init("bb", 8)]
n, i = bn("bc", "bn_out", 8, "bbn"); n.name = "biased_bn"; nodes.append(n); inits += i
nodes.append(helper.make_node("Relu", ["bn_out"], ["br"], name="biased_relu"))
outs += ["erf", "am", "dc", "br"]
g = helper.make_graph(nodes, "wild",
    [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 56, 56])],
    [helper.make_tensor_value_info(o, T.FLOAT if o != "am" else T.INT64, None) for o in outs], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, out + "/wild.onnx")
inferred = onnx.shape_inference.infer_shapes(m)
shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.output}
# Attributes libonnx's shape inference divides by: a zero stride must be refused, not crash.
g = helper.make_graph([helper.make_node("Conv", ["x", "w0"], ["y"], strides=[0, 0], name="zero_stride")], "bad",
    [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 8, 8])], [helper.make_tensor_value_info("y", T.FLOAT, None)],
    [init("w0", 8, 8, 3, 3)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/zero_stride.onnx")
# Weights whose channels do not match the data's: too few, too many in groups, a ConvTranspose's.
for name, op, w_dims, group in [("few_channels", "Conv", (8, 6, 3, 3), 1), ("grouped_over", "Conv", (8, 5, 3, 3), 2),
                                ("transposed_over", "ConvTranspose", (6, 4, 3, 3), 1)]:
    g = helper.make_graph([helper.make_node(op, ["x", "wc"], ["y"], group=group, kernel_shape=[3, 3], name=name)],
        "bad", [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", T.FLOAT, None)], [init("wc", *w_dims)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/" + name + ".onnx")
with open(out + "/wild.nodes", "w") as f:
    for n in nodes:
        f.write(name_of(n) + "\n")
with open(out + "/wild.shapes", "w") as f:
    for _, _, nm in pools:
        f.write("%s %d %d\n" % (nm, shapes[nm][2], shapes[nm][3]))
# Activations as real exports write them: SiLU as x * Sigmoid(x) (PyTorch), a constant scale
# after a conv, HardSwish, Tanh, and a standalone Elu.
nodes, inits = [], []
nodes.append(helper.make_node("Elu", ["x"], ["e"], name="elu"))
nodes.append(helper.make_node("Conv", ["e", "w1"], ["c1"], pads=[1, 1, 1, 1], name="silu_conv"))
nodes.append(helper.make_node("Sigmoid", ["c1"], ["s1"], name="silu_sigmoid"))
nodes.append(helper.make_node("Mul", ["c1", "s1"], ["m1"], name="silu_mul"))
nodes.append(helper.make_node("Conv", ["m1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="scaled_conv"))
nodes.append(helper.make_node("Mul", ["c2", "scale"], ["m2"], name="scale"))
nodes.append(helper.make_node("HardSwish", ["m2"], ["h2"], name="hardswish"))
nodes.append(helper.make_node("Conv", ["h2", "w3"], ["c3"], pads=[1, 1, 1, 1], name="tanh_conv"))
nodes.append(helper.make_node("Tanh", ["c3"], ["y"], name="tanh"))
# torch's nn.GELU below opset 20: x * 0.5 * (1 + erf(x / sqrt 2)), all five nodes in the conv.
nodes.append(helper.make_node("Conv", ["x", "w4"], ["c4"], pads=[1, 1, 1, 1], name="gelu_conv"))
nodes.append(helper.make_node("Div", ["c4", "root2"], ["d4"], name="gelu_div"))
nodes.append(helper.make_node("Erf", ["d4"], ["e4"], name="gelu_erf"))
nodes.append(helper.make_node("Add", ["e4", "one"], ["a4"], name="gelu_add"))
nodes.append(helper.make_node("Mul", ["c4", "a4"], ["m4"], name="gelu_mul"))
nodes.append(helper.make_node("Mul", ["m4", "half"], ["z"], name="gelu_half"))
inits += [init("w1", 8, 8, 3, 3), init("w2", 16, 8, 3, 3), init("w3", 8, 16, 3, 3), init("scale", 16, 1, 1),
          init("w4", 8, 8, 3, 3)]
inits += [helper.make_tensor(n, T.FLOAT, [], [v]) for n, v in (("root2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
g = helper.make_graph(nodes, "acts", [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 16, 16])],
                      [helper.make_tensor_value_info(o, T.FLOAT, None) for o in ("y", "z")], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), out + "/acts.onnx")
# A U-Net's upsampling: a 2x2 stride-2 ConvTranspose with its bias, then a Relu; and one of
# two groups.
nodes = [helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["up"], strides=[2, 2], name="up"),
         helper.make_node("Relu", ["up"], ["upr"], name="up_relu"),
         helper.make_node("ConvTranspose", ["x", "wg"], ["gup"], strides=[2, 2], group=2, name="grouped_up")]
g = helper.make_graph(nodes, "upsampling", [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 56, 56])],
                      [helper.make_tensor_value_info(o, T.FLOAT, None) for o in ("upr", "gup")],
                      [init("wt", 8, 4, 2, 2), init("bt", 4), init("wg", 8, 2, 2, 2)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/upsampling.onnx")
# A Reshape to a size no tensor has, then a pool: libonnx's inference of the pool ran for minutes.
g = helper.make_graph([helper.make_node("Reshape", ["x", "huge"], ["r"], name="huge_reshape"),
                       helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], name="pool")], "huge",
                      [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 56, 56])],
                      [helper.make_tensor_value_info("p", T.FLOAT, None)],
                      [numpy_helper.from_array(np.array([1, 8, 70650219154374712, 56], dtype=np.int64), "huge")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/huge_reshape.onnx")
)py";

class OnnxImport : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("atvoss-onnx-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "make.py") << kScript;
    // Debian's interpreter: python3-onnx lives there, not in a user's pyenv or venv.
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const std::string cmd = python + " " + (dir_ / "make.py").string() + " " + dir_.string() + " > " +
                            (dir_ / "log.txt").string() + " 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    // scripts/setup.sh installs python3-onnx: a model that cannot be built is a failure.
    if (!ok_) {
      std::ifstream log(dir_ / "log.txt");
      FAIL() << "python3-onnx could not build the test models:\n" << log.rdbuf();
    }
  }
  static const TuneTask* find(const TaskSet& s, const std::string& name) {
    for (const auto& t : s.tasks()) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
  // The task a node went into (a deduplicated task is named by its first node).
  static const TuneTask* find_layer(const TaskSet& s, const std::string& node) {
    for (const auto& t : s.tasks()) {
      for (const auto& [name, n] : t.layers) {
        if (name == node) return &t;
      }
    }
    return nullptr;
  }
  static inline fs::path dir_;
  static inline bool ok_ = false;
};

TEST_F(OnnxImport, ConvChainsResidualsAndDedupe) {
  OnnxImportOptions o;
  o.batch = 2;
  const TaskSet s = import_onnx((dir_ / "convnet.onnx").string(), o);
  ASSERT_EQ(s.tasks().size(), 4u);
  const TuneTask* stem = find(s, "stem");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->workload.op(), "conv2d");
  EXPECT_EQ(stem->workload.dim("N"), 2);  // symbolic batch bound to 2
  EXPECT_EQ(stem->workload.dim("pad"), 1);
  // Inference BatchNormalization folds into the conv: a bias, no kernel of its own.
  EXPECT_EQ(stem->workload.epilogue(), (std::vector<std::string>{"bias", "relu"}));
  const TuneTask* block = find(s, "block2");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->weight, 2);  // block3 is the same workload
  EXPECT_EQ(block->workload.epilogue(), (std::vector<std::string>{"bias", "add", "relu"}));
  EXPECT_NE(std::find(s.folded().begin(), s.folded().end(),
                      std::pair<std::string, std::string>{"BatchNormalization:b1", "stem"}),
            s.folded().end());
  const TuneTask* fc = find(s, "fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->workload.op(), "matmul");
  EXPECT_EQ(fc->workload.dim("M"), 2);
  EXPECT_EQ(fc->workload.dim("N"), 10);
  EXPECT_EQ(fc->workload.dim("K"), 2048);
  EXPECT_EQ(fc->workload.epilogue(), (std::vector<std::string>{"bias"}));
  const TuneTask* pool = find(s, "MaxPool:p");  // unnamed nodes are named by their output
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->workload.op(), "max_pool2d");
  EXPECT_TRUE(s.fallbacks().empty());  // Flatten is a view
}

TEST_F(OnnxImport, MatMulChainsBatchMatMulAndSoftmax) {
  const TaskSet s = import_onnx((dir_ / "encoder.onnx").string());
  const TuneTask* out = find(s, "attn_out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->workload.dim("M"), 16);  // [1,16,32] x [32,32]: leading dims are rows
  EXPECT_EQ(out->workload.epilogue(), (std::vector<std::string>{"bias", "add", "layernorm"}));
  const TuneTask* ffn = find(s, "ffn");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->workload.dim("N"), 64);
  EXPECT_EQ(ffn->workload.epilogue(), (std::vector<std::string>{"bias", "gelu_erf"}));  // com.microsoft's: erf
  const TuneTask* scores = find(s, "scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->workload.op(), "batch_matmul");
  EXPECT_EQ(scores->workload.dim("B"), 4);
  EXPECT_EQ(scores->workload.dim("K"), 8);
  const TuneTask* softmax = find(s, "softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->workload.dim("M"), 64);
  EXPECT_EQ(softmax->workload.dim("N"), 16);
  EXPECT_TRUE(s.fallbacks().empty());
}

TEST_F(OnnxImport, ClassicImageNetOpsImportWhole) {
  const TaskSet s = import_onnx((dir_ / "classic.onnx").string());
  for (const auto& n : s.fallbacks()) ADD_FAILURE() << "not tuned: " << n.name << ": " << n.reason;
  auto op_of = [&](const std::string& name) {
    const TuneTask* t = find(s, name);
    return t ? t->workload.op() : std::string("(missing)");
  };
  const TuneTask* grouped = find(s, "grouped");
  ASSERT_NE(grouped, nullptr);
  EXPECT_EQ(grouped->workload.op(), "group_conv2d");
  EXPECT_EQ(grouped->workload.dim("groups"), 4);
  EXPECT_EQ(grouped->workload.epilogue(), std::vector<std::string>{"relu"});
  EXPECT_EQ(op_of("lrn"), "lrn");
  EXPECT_EQ(op_of("pool"), "max_pool2d");
  const TuneTask* preact = find(s, "preact");
  ASSERT_NE(preact, nullptr);
  EXPECT_EQ(preact->workload.op(), "map");
  EXPECT_EQ(preact->workload.epilogue(), (std::vector<std::string>{"batchnorm", "relu"}));
  const TuneTask* body = find(s, "body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->workload.epilogue(), (std::vector<std::string>{"add", "relu"}));  // Sum fused
  EXPECT_EQ(op_of("mul"), "elementwise");
  EXPECT_EQ(op_of("avg"), "avg_pool2d");
  const TuneTask* nhwc = find(s, "to_nhwc");
  ASSERT_NE(nhwc, nullptr);
  EXPECT_EQ(nhwc->workload.op(), "transpose");
  EXPECT_EQ(nhwc->workload.dim("M"), 16);  // channels land innermost
  EXPECT_EQ(nhwc->workload.dim("inner"), 1);
  EXPECT_EQ(op_of("cat"), "concat");
  const TuneTask* up = find(s, "up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->workload.dim("scale"), 2);
  EXPECT_EQ(op_of("gap"), "global_avg_pool");
  const TuneTask* fc = find(s, "fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->workload.dim("K"), 32);
  EXPECT_EQ(fc->workload.epilogue(), std::vector<std::string>{"bias"});
  for (const auto& t : s.tasks()) {  // folded: views, Dropout, the constant subgraph
    EXPECT_EQ(t.name.find("Dropout"), std::string::npos);
    EXPECT_EQ(t.name.find("ConstantOfShape"), std::string::npos);
  }
  EXPECT_EQ(s.tasks().size(), 13u);  // the two transposes differ
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(OnnxImport, EveryNodeIsAccountedForByName) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  std::map<std::string, int> seen;
  for (const auto& t : s.tasks()) {
    for (const auto& [name, n] : t.layers) seen[name] += 1;
  }
  for (const auto& [name, into] : s.folded()) seen[name] += 1;
  for (const auto& f : s.fallbacks()) seen[f.name] += 1;
  const auto nodes = lines_of(dir_ / "wild.nodes");
  ASSERT_EQ(nodes.size(), 17u);
  for (const auto& name : nodes) EXPECT_EQ(seen[name], 1) << name;
  EXPECT_EQ(seen.size(), nodes.size());
}

TEST_F(OnnxImport, ActivationsAsRealExportsWriteThemFuseIntoTheConv) {
  const TaskSet s = import_onnx((dir_ / "acts.onnx").string());
  EXPECT_TRUE(s.fallbacks().empty());
  auto epilogue = [&](const std::string& name) {
    const TuneTask* t = find(s, name);
    return t ? t->workload.epilogue() : std::vector<std::string>{"(missing)"};
  };
  EXPECT_EQ(epilogue("silu_conv"), std::vector<std::string>{"silu"});         // x * Sigmoid(x)
  EXPECT_EQ(epilogue("scaled_conv"), std::vector<std::string>{"hardswish"});  // scale folded
  EXPECT_EQ(epilogue("tanh_conv"), std::vector<std::string>{"tanh"});
  EXPECT_EQ(epilogue("elu"), std::vector<std::string>{"leaky_relu"});  // a standalone map
  EXPECT_EQ(epilogue("gelu_conv"), std::vector<std::string>{"gelu_erf"});
  EXPECT_EQ(s.tasks().size(), 5u);
  std::map<std::string, std::string> into;
  for (const auto& [node, task] : s.folded()) into[node] = task;
  EXPECT_EQ(into["silu_sigmoid"], "silu_conv");
  EXPECT_EQ(into["silu_mul"], "silu_conv");
  EXPECT_EQ(into["scale"], "scaled_conv");
  for (const char* node : {"gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_half"}) {
    EXPECT_EQ(into[node], "gelu_conv") << node;
  }
}

TEST_F(OnnxImport, BatchNormAfterABiasedConvFoldsIntoIt) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  const TuneTask* conv = find(s, "biased_conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->workload.epilogue(), (std::vector<std::string>{"bias", "relu"}));
  const auto& folded = s.folded();
  EXPECT_NE(std::find(folded.begin(), folded.end(), std::pair<std::string, std::string>{"biased_bn", "biased_conv"}),
            folded.end());
}

TEST_F(OnnxImport, TheGraphHasEveryNodeAndTensorsAsEdges) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  const Graph& g = s.graph();
  const auto names = lines_of(dir_ / "wild.nodes");
  ASSERT_EQ(g.nodes().size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(g.nodes()[i].name, names[i]);
  // The shuffled tensor: made by shuffle_join, read by 8 pools, Erf, ArgMax and two convs.
  const int sh = g.tensor_index("sh");
  ASSERT_GE(sh, 0);
  const GraphTensor& t = g.tensors()[sh];
  EXPECT_EQ(g.nodes()[t.producer].name, "shuffle_join");
  EXPECT_EQ(t.consumers.size(), 12u);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{1, 8, 56, 56}));
  EXPECT_DOUBLE_EQ(t.bytes, 8.0 * 56 * 56 * 2);  // float tensors as the NPU runs them: fp16
  const GraphTensor& x = g.tensors()[g.tensor_index("x")];
  EXPECT_EQ(x.producer, -1);  // a graph input
  EXPECT_TRUE(g.tensors()[g.tensor_index("wd")].constant);
  EXPECT_EQ(g.summary()["nodes"], 17);
  EXPECT_EQ(t.dtype, "float");
  EXPECT_EQ(g.tensors()[g.tensor_index("am")].dtype, "int64");
  // A node not tuned keeps its op, attributes and bytes; a tuned one has its kernel. A dilated
  // conv of one group with constant weights, its window centred, is the undilated conv of its
  // 2 x 2 phase images of 28 x 28 pixels (phase_conv.hpp), as the engine runs it.
  const GraphNode& argmax = g.nodes()[g.node_index("ArgMax:am")];
  EXPECT_FALSE(argmax.kernel);
  EXPECT_EQ(argmax.op, "ArgMax");
  EXPECT_EQ(argmax.attributes["axis"], 1);
  EXPECT_GT(argmax.bytes, 0);
  const GraphNode& dilated = g.nodes()[g.node_index("dilated_conv")];
  ASSERT_TRUE(dilated.kernel);
  EXPECT_EQ(dilated.op, "Conv");
  EXPECT_EQ(dilated.kernel->op(), "conv2d");
  EXPECT_EQ(dilated.kernel->dims(),
            (std::map<std::string, std::int64_t>{
                {"N", 4}, {"C", 8}, {"H", 28}, {"W", 28}, {"K", 8}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}));
  EXPECT_TRUE(dilated.kernel->epilogue().empty());  // no bias
  EXPECT_EQ(g.nodes()[g.node_index("biased_conv")].kernel->epilogue(), (std::vector<std::string>{"bias", "relu"}));
  EXPECT_EQ(g.nodes()[g.node_index("biased_bn")].fused_by, "fold-into-weights");
}

TEST_F(OnnxImport, ChannelShuffleTunesOnTheNpu) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  const TuneTask* shuffle = find(s, "shuffle");
  ASSERT_NE(shuffle, nullptr);
  EXPECT_EQ(shuffle->workload.op(), "transpose");
  EXPECT_EQ(shuffle->workload.dim("inner"), 3136);
  const Target t = backend::load_target("ascend910");
  const ScheduleSpace space = backend::space_for(shuffle->workload, t);
  std::mt19937_64 rng(1);
  EXPECT_TRUE(space.random_valid_point(rng, 1000).has_value());
  EXPECT_NO_THROW(backend::required_default(shuffle->workload, t));
}

TEST_F(OnnxImport, PoolsWithEveryWindowAttributeKeepOnnxShapes) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  const Target t = backend::load_target("ascend910");
  const auto shapes = lines_of(dir_ / "wild.shapes");
  ASSERT_EQ(shapes.size(), 8u);
  for (const auto& line : shapes) {
    std::istringstream in(line);
    std::string name;
    std::int64_t h = 0, w = 0;
    in >> name >> h >> w;
    SCOPED_TRACE(name);
    const TuneTask* pool = find_layer(s, name);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(pool->workload.out_h(), h);
    EXPECT_EQ(pool->workload.out_w(), w);
    EXPECT_NO_THROW(backend::required_default(pool->workload, t));
  }
  EXPECT_EQ(find_layer(s, "dilated")->workload.dim("dilation"), 2);
  EXPECT_EQ(find_layer(s, "uneven_stride")->workload.stride_w(), 2);
  EXPECT_EQ(find_layer(s, "asym_avg")->workload.dim("pad"), 1);  // top
  EXPECT_EQ(find_layer(s, "asym_avg")->workload.dim("pad_left"), 0);
  // ceil_mode, Caffe's extra end pad and SAME_UPPER padding are one geometry here: one
  // task of weight 3.
  EXPECT_EQ(find_layer(s, "caffe_pads"), find_layer(s, "ceil"));
  EXPECT_EQ(find_layer(s, "same_upper"), find_layer(s, "ceil"));
  EXPECT_EQ(find_layer(s, "ceil")->weight, 3);
}

TEST_F(OnnxImport, OpsWithoutALoweringAreNamedFallbacksWithTheirBytes) {
  const TaskSet s = import_onnx((dir_ / "wild.onnx").string());
  std::map<std::string, FallbackNode> by_name;
  for (const auto& f : s.fallbacks()) by_name[f.name] = f;
  ASSERT_EQ(by_name.size(), 2u);  // the dilated conv is a matmul task (TheGraphHasEveryNode...)
  const FallbackNode& erf = by_name.at("erf");
  EXPECT_EQ(erf.op, "Erf");
  EXPECT_NE(erf.reason.find("no lowering"), std::string::npos);
  EXPECT_DOUBLE_EQ(erf.bytes, 2.0 * 8 * 56 * 56 * 2);  // fp16 in and out
  const FallbackNode& argmax = by_name.at("ArgMax:am");
  EXPECT_DOUBLE_EQ(argmax.bytes, 8.0 * 56 * 56 * 2 + 56.0 * 56 * 8);  // int64 indices out
  const Target t = backend::load_target("ascend910");
  EXPECT_GT(fallback_us(erf, t), t.launch_us);
  EXPECT_NEAR(fallback_us(erf, t), erf.bytes / t.hbm_bytes_per_second() * 1e6 + t.launch_us, 1e-9);
}

// A ConvTranspose of one group is the matmul of its input pixels and its weights as
// [C, kh x kw x K], with nothing fused after it (its windows are summed after the kernel).
TEST_F(OnnxImport, AConvTransposeIsItsMatmulWithNoEpilogue) {
  const TaskSet s = import_onnx((dir_ / "upsampling.onnx").string());
  const TuneTask* up = find_layer(s, "up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->workload.op(), "matmul");
  EXPECT_EQ(up->workload.dim("M"), 56 * 56);
  EXPECT_EQ(up->workload.dim("N"), 4 * 2 * 2);
  EXPECT_EQ(up->workload.dim("K"), 8);
  EXPECT_TRUE(up->workload.epilogue().empty());
  EXPECT_NE(find_layer(s, "up_relu"), nullptr);  // a task of its own, not up's epilogue
  EXPECT_NE(find_layer(s, "up_relu"), up);
  ASSERT_EQ(s.fallbacks().size(), 1u);  // one of two groups is not a matmul
  EXPECT_EQ(s.fallbacks()[0].name, "grouped_up");
  EXPECT_NE(s.fallbacks()[0].reason.find("groups"), std::string::npos);
}

// A shape no tensor has is refused before libonnx's inference, naming the node and the value.
TEST_F(OnnxImport, AReshapeToAnImpossibleSizeIsRefusedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  try {
    import_onnx((dir_ / "huge_reshape.onnx").string());
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("'huge_reshape' (Reshape)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("70650219154374712"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(OnnxImport, AZeroStrideIsBadInputNamingTheNodeNotACrash) {
  try {
    import_onnx((dir_ / "zero_stride.onnx").string());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_bad_input());
    EXPECT_NE(std::string(e.what()).find("node 'zero_stride' (Conv): attribute 'strides'"), std::string::npos)
        << e.what();
  }
}

// A conv whose weight's channels do not match its data's is refused naming the node and the
// weight: libonnx infers its output shape all the same, and the engine read past the weight.
TEST_F(OnnxImport, AConvWhoseWeightChannelsDoNotMatchItsDataIsBadInput) {
  for (const std::string name : {"few_channels", "grouped_over", "transposed_over"}) {
    SCOPED_TRACE(name);
    try {
      import_onnx((dir_ / (name + ".onnx")).string());
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find("node '" + name + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("the data's 8 channels do not match weight 'wc'"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(OnnxImport, GarbageAndMissingFilesAreBadInput) {
  const auto bad = dir_ / "garbage.onnx";
  std::ofstream(bad) << "this is not a protobuf \x01\x02\xff";
  for (const auto& path : {bad.string(), (dir_ / "absent.onnx").string()}) {
    SCOPED_TRACE(path);
    try {
      import_onnx(path);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_bad_input());
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    }
  }
}

// A mutation fuzzer over the models above (strides=[0,0] once killed the
// process with SIGFPE inside libonnx's shape inference): seeded mutations of attributes (zero,
// negative, huge and lists of odd length), op types, inputs, outputs and input dims, and of the
// serialised bytes. Every mutant must import or be refused with atvoss::Error; a crash fails
// the whole test binary, another exception fails here. Bounded by count and by time.
TEST_F(OnnxImport, MutatedModelsImportOrAreRefusedNeverCrash) {
  std::vector<onnx::ModelProto> seeds;
  for (const char* name :
       {"convnet.onnx", "classic.onnx", "wild.onnx", "acts.onnx", "encoder.onnx", "upsampling.onnx"}) {
    std::ifstream in(dir_ / name, std::ios::binary);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromIstream(&in)) << name;
    seeds.push_back(std::move(m));
  }
  // Seed 20261203 found a missing input aborting protobuf; seed 1 a Conv fed a 1-D weight
  // crashing libonnx's shape inference. Both run.
  std::mt19937_64 rng;
  auto pick = [&](std::size_t n) { return std::size_t(rng() % std::max<std::size_t>(n, 1)); };
  const std::vector<std::int64_t> values = {0,
                                            -1,
                                            1,
                                            2,
                                            3,
                                            7,
                                            64,
                                            1 << 20,
                                            std::numeric_limits<std::int64_t>::max(),
                                            std::numeric_limits<std::int64_t>::min(),
                                            -7};
  const std::vector<std::string> attributes = {
      "strides",   "pads",     "dilations", "kernel_shape",     "group", "axis", "perm",
      "ceil_mode", "auto_pad", "transB",    "count_include_pad"};
  const std::vector<std::string> ops = {
      "Conv", "MaxPool", "AveragePool",        "MatMul", "Gemm",   "Transpose", "Concat", "Relu",
      "Add",  "Softmax", "LayerNormalization", "Resize", "Reshape"};
  const std::string path = (dir_ / "mutant.onnx").string();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int imported = 0, refused = 0;
  for (int i = 0; i < 6000 && std::chrono::steady_clock::now() < deadline; ++i) {
    if (i % 3000 == 0) rng.seed(i == 0 ? 20261203 : 1);
    onnx::ModelProto m = seeds[pick(seeds.size())];
    onnx::GraphProto& g = *m.mutable_graph();
    for (int k = 0, edits = 1 + int(pick(3)); k < edits && g.node_size() > 0; ++k) {
      onnx::NodeProto& n = *g.mutable_node(int(pick(std::size_t(g.node_size()))));
      switch (pick(6)) {
        case 0: {  // a new or replaced attribute of random ints
          onnx::AttributeProto* a = n.add_attribute();
          a->set_name(attributes[pick(attributes.size())]);
          if (pick(3) == 0) {
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(values[pick(values.size())]);
          } else if (a->name() == "auto_pad") {
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(pick(2) ? "SAME_UPPER" : "NOT_A_MODE");
          } else {
            a->set_type(onnx::AttributeProto::INTS);
            for (std::size_t v = 0, len = pick(7); v < len; ++v) a->add_ints(values[pick(values.size())]);
          }
          break;
        }
        case 1:  // an existing attribute's values
          if (n.attribute_size() > 0) {
            onnx::AttributeProto& a = *n.mutable_attribute(int(pick(std::size_t(n.attribute_size()))));
            if (a.ints_size() > 0)
              a.set_ints(int(pick(std::size_t(a.ints_size()))), values[pick(values.size())]);
            else
              a.set_i(values[pick(values.size())]);
          }
          break;
        case 2:
          n.set_op_type(ops[pick(ops.size())]);
          break;
        case 3:
          if (n.input_size() > 0) n.mutable_input()->RemoveLast();
          break;
        case 4:
          if (n.input_size() > 0) n.set_input(int(pick(std::size_t(n.input_size()))), pick(2) ? "" : "no_such_tensor");
          break;
        default:
          if (g.input_size() > 0 && g.input(0).type().tensor_type().shape().dim_size() > 0) {
            auto* shape = g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
            shape->mutable_dim(int(pick(std::size_t(shape->dim_size()))))->set_dim_value(values[pick(values.size())]);
          }
      }
    }
    std::string bytes = m.SerializeAsString();
    if (pick(4) == 0 && !bytes.empty()) {  // and at the byte level: a flip or a cut
      if (pick(2))
        bytes[pick(bytes.size())] ^= char(1 + pick(255));
      else
        bytes.resize(pick(bytes.size()));
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    try {
      (void)import_onnx(path);
      ++imported;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutant " << i << ": not an atvoss::Error: " << e.what();
    }
  }
  EXPECT_GT(imported, 0);
  EXPECT_GT(refused, 0);
  std::printf("onnx fuzz: %d mutants imported, %d refused\n", imported, refused);
}

}  // namespace
}  // namespace atvoss::frontend
