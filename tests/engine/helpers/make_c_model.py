"""The model the C API test runs: y = 2 * relu(x), x of shape [N, 3] with N symbolic."""
import sys

import onnx
from onnx import TensorProto as T, helper, numpy_helper
import numpy as np

nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Mul", ["r", "two"], ["y"], name="double")]
g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])],
                      [helper.make_tensor_value_info("y", T.FLOAT, ["N", 3])],
                      [numpy_helper.from_array(np.array([2.0], np.float32), "two")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
