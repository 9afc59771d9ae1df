// atvoss-run as a user runs it (docs/engine.md): a model run from .npy inputs writes .npy outputs
// that numpy reads back equal to a reference computed by numpy itself; a wrong input file (dtype,
// shape, name), a damaged model and a plan that is not one exit 2 with the field named.
#include <gmock/gmock.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/cli_harness.hpp"

namespace atvoss::cli_test {
namespace {

using ::testing::HasSubstr;

// A Gemm model (y = relu(x W^T + b)) and its inputs; the reference output next to them.
constexpr const char* kMake = R"py(
import sys, os
import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(4)
w = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
b = rng.uniform(-1, 1, 6).astype(np.float32)
nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, name="fc"),
         helper.make_node("Relu", ["g"], ["y"], name="relu")]
g = helper.make_graph(nodes, "fc", [helper.make_tensor_value_info("x", T.FLOAT, [3, 5])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [3, 6])],
                      [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "fc.onnx"))
x = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
np.save(os.path.join(d, "x.npy"), x)
np.save(os.path.join(d, "ref.npy"), np.maximum(x @ w.T + b, 0))
np.save(os.path.join(d, "x64.npy"), x.astype(np.float64))
np.save(os.path.join(d, "x_wide.npy"), np.zeros((3, 6), np.float32))
# The same with a symbolic batch shared by two inputs, y = relu(x W^T + b) + z, fed at batch 4.
nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, name="fc"),
         helper.make_node("Relu", ["g"], ["r"], name="relu"), helper.make_node("Add", ["r", "z"], ["y"], name="add")]
g = helper.make_graph(nodes, "fc", [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 5]),
                                    helper.make_tensor_value_info("z", T.FLOAT, ["batch", 6])],
                      [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 6])],
                      [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "fc_batch.onnx"))
x4, z4 = rng.uniform(-1, 1, (4, 5)).astype(np.float32), rng.uniform(-1, 1, (4, 6)).astype(np.float32)
for name, a in (("x4", x4), ("z4", z4), ("z3", z4[:3]), ("x4_3d", x4[:, :, None]), ("x0", x4[:0])):
    np.save(os.path.join(d, name + ".npy"), a)
np.save(os.path.join(d, "ref4.npy"), np.maximum(x4 @ w.T + b, 0) + z4)
# Outputs of integer and bool types: a label (ArgMax, int64), a mask (Greater, bool), an int32.
nodes = [helper.make_node("ArgMax", ["x"], ["label"], axis=1, keepdims=0, name="argmax"),
         helper.make_node("Greater", ["x", "zero"], ["positive"], name="greater"),
         helper.make_node("Cast", ["label"], ["label32"], to=T.INT32, name="cast")]
g = helper.make_graph(nodes, "labels", [helper.make_tensor_value_info("x", T.FLOAT, [3, 5])],
                      [helper.make_tensor_value_info("label", T.INT64, [3]),
                       helper.make_tensor_value_info("positive", T.BOOL, [3, 5]),
                       helper.make_tensor_value_info("label32", T.INT32, [3])],
                      [numpy_helper.from_array(np.zeros(1, np.float32), "zero")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "labels.onnx"))
np.save(os.path.join(d, "ref_label.npy"), np.argmax(x, axis=1))
np.save(os.path.join(d, "ref_positive.npy"), x > 0)
np.save(os.path.join(d, "ref_label32.npy"), np.argmax(x, axis=1).astype(np.int32))
# An image fed as uint8 (scaled to [0, 1] in the graph) and a uint16 copy of it written back.
nodes = [helper.make_node("Cast", ["image"], ["f"], to=T.FLOAT, name="cast"),
         helper.make_node("Mul", ["f", "scale"], ["scaled"], name="mul"),
         helper.make_node("Cast", ["image"], ["wide"], to=T.UINT16, name="widen")]
g = helper.make_graph(nodes, "image", [helper.make_tensor_value_info("image", T.UINT8, [1, 3, 2, 2])],
                      [helper.make_tensor_value_info("scaled", T.FLOAT, [1, 3, 2, 2]),
                       helper.make_tensor_value_info("wide", T.UINT16, [1, 3, 2, 2])],
                      [numpy_helper.from_array(np.array(1 / 255, np.float32), "scale")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "image.onnx"))
image = rng.integers(0, 256, (1, 3, 2, 2)).astype(np.uint8)
np.save(os.path.join(d, "image.npy"), image)
np.save(os.path.join(d, "ref_scaled.npy"), image.astype(np.float32) * np.float32(1 / 255))
np.save(os.path.join(d, "ref_wide.npy"), image.astype(np.uint16))
# Outputs named as exporters name them, with path separators, dots and a name two of them share
# once made safe.
names = ["/logits/Gemm:0", "../escape", ".hidden", "a/b", "a_b"]
nodes = [helper.make_node("Relu" if i % 2 else "Neg", ["x"], [n], name="n%d" % i) for i, n in enumerate(names)]
g = helper.make_graph(nodes, "names", [helper.make_tensor_value_info("x", T.FLOAT, [3, 5])],
                      [helper.make_tensor_value_info(n, T.FLOAT, [3, 5]) for n in names])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(d, "names.onnx"))
for i, f in enumerate(["_logits_Gemm_0", "_._escape", "_hidden", "a_b", "a_b_2"]):
    np.save(os.path.join(d, "ref_" + f + ".npy"), np.maximum(x, 0) if i % 2 else -x)
)py";

constexpr const char* kCompare = R"py(
import sys
import numpy as np
a, r = np.load(sys.argv[1]), np.load(sys.argv[2])
same_type = a.shape == r.shape and a.dtype == r.dtype
a, r = a.astype(np.float64), r.astype(np.float64)
sys.exit(0 if same_type and np.max(np.abs(a - r) / np.maximum(np.abs(r), 1)) <= 1e-5 else 1)
)py";

class RunCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(std::system((python() + " " + file("make.py", kMake) + " " + quote(dir()) + " ").c_str()), 0)
        << "scripts/setup.sh installs python3-onnx and python3-numpy";
  }
  static std::string python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }
  std::string dir() const { return file("x.npy").substr(0, file("x.npy").size() - 6); }
  // Each of folder/<name>.npy equals ref_<name>.npy in shape, dtype and values (kCompare).
  void expect_files_match_references(const std::string& folder, const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      const std::string cmp = python() + " " + file("cmp.py", kCompare) + " " +
                              quote(file(folder + "/" + name + ".npy")) + " " + quote(file("ref_" + name + ".npy"));
      EXPECT_EQ(std::system(cmp.c_str()), 0);
    }
  }
};

TEST_F(RunCli, NpyInWritesNpyOutEqualToTheReference) {
  const CliResult r = run_tool("atvoss-run", quote(file("fc.onnx")) + " --input x=" + quote(file("x.npy")) + " --out " +
                                                 quote(file("outs")) + " --repeat 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"median_us\""));
  const std::string cmp =
      python() + " " + file("cmp.py", kCompare) + " " + quote(file("outs/y.npy")) + " " + quote(file("ref.npy"));
  EXPECT_EQ(std::system(cmp.c_str()), 0);
}

TEST_F(RunCli, IntegerAndBoolOutputsAreWrittenInTheirTypes) {
  const CliResult r = run_tool("atvoss-run", quote(file("labels.onnx")) + " --input x=" + quote(file("x.npy")) +
                                                 " --out " + quote(file("outs_labels")));
  ASSERT_EQ(r.code, 0) << r.err;
  expect_files_match_references("outs_labels", {"label", "positive", "label32"});
}

TEST_F(RunCli, AUint8ImageIsReadAndAUint16OutputWrittenSo) {
  const CliResult r = run_tool("atvoss-run", quote(file("image.onnx")) + " --input image=" + quote(file("image.npy")) +
                                                 " --out " + quote(file("outs_image")));
  ASSERT_EQ(r.code, 0) << r.err;
  expect_files_match_references("outs_image", {"scaled", "wide"});
}

TEST_F(RunCli, OutputsNamedWithPathSeparatorsAreWrittenInsideTheFolder) {
  const CliResult r = run_tool("atvoss-run", quote(file("names.onnx")) + " --input x=" + quote(file("x.npy")) +
                                                 " --out " + quote(file("deep/outs_names")) + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"file\": \"_logits_Gemm_0.npy\""));
  expect_files_match_references("deep/outs_names", {"_logits_Gemm_0", "_._escape", "_hidden", "a_b", "a_b_2"});
  EXPECT_FALSE(std::filesystem::exists(dir() + "deep/escape.npy"));  // "../escape" stays inside
  EXPECT_FALSE(std::filesystem::exists(dir() + "deep/outs_names/logits"));
}

TEST_F(RunCli, SymbolicDimsTakeTheSizesOfTheInputsGiven) {
  const std::string model = quote(file("fc_batch.onnx"));
  const CliResult r =
      run_tool("atvoss-run", model + " --input x=" + quote(file("x4.npy")) + " --input z=" + quote(file("z4.npy")) +
                                 " --out " + quote(file("outs4")));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string cmp =
      python() + " " + file("cmp.py", kCompare) + " " + quote(file("outs4/y.npy")) + " " + quote(file("ref4.npy"));
  EXPECT_EQ(std::system(cmp.c_str()), 0);
  auto refused = [&](const std::string& args, const std::string& says) {
    SCOPED_TRACE(args);
    const CliResult bad = run_tool("atvoss-run", model + args);
    EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
    EXPECT_THAT(bad.err, HasSubstr(says));
  };
  refused(" --input x=" + quote(file("x4.npy")) + " --input z=" + quote(file("z3.npy")),
          "dim 'batch' is 3 in input 'z' and 4 elsewhere");
  refused(" --input x=" + quote(file("x4.npy")) + " --dim batch=2", "dim 'batch' is 4 in input 'x' and 2 elsewhere");
  refused(" --input x=" + quote(file("x4_3d.npy")), "input 'x' has 2 dims; the shape given for it has 3");
  refused(" --input x=" + quote(file("x0.npy")), "input 'x': dim 0 of the shape given for it is 0; expected 1 to 2^31");
}

TEST_F(RunCli, BadInputsExitTwoNamingWhatIsWrong) {
  const std::string model = quote(file("fc.onnx"));
  auto refused = [&](const std::string& args, const std::string& says) {
    SCOPED_TRACE(args);
    const CliResult r = run_tool("atvoss-run", args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(says));
  };
  refused(model + " --input x=" + quote(file("x64.npy")), "dtype must be float32");
  refused(model + " --input x=" + quote(file("x_wide.npy")), "--input x: shape [3 6 ]");
  refused(model + " --input z=" + quote(file("x.npy")), "the model has no input 'z'");
  refused(model + " --input x", "expected NAME=FILE.npy");
  refused(quote(file("cut.onnx", slurp(file("fc.onnx")).substr(0, 30))), "is not an ONNX model");
  refused(model + " --plan " + quote(file("notaplan.json", "{\"format\": \"something\"}")), "field 'format'");
}

}  // namespace
}  // namespace atvoss::cli_test
