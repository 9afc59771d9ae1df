"""Whole ONNX models through Apache TVM beside atvoss and ONNX Runtime (bench/tvm_model.py): the
bench's TVM path (Relax's ONNX frontend, legalized, compiled for this CPU, run by the Relax VM)
computes what ONNX Runtime does on a small conv net, all three sides are timed, and a model TVM
cannot take is reported in the table, not skipped. Untuned only: MetaSchedule's own path is
checked by test_tvm_metaschedule.py."""
import argparse
import importlib.util
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

SOURCE = os.environ.get("ATVOSS_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))


def _load_bench():
    sys.path.insert(0, os.path.join(SOURCE, "bench"))
    spec = importlib.util.spec_from_file_location("tvm_model", os.path.join(SOURCE, "bench", "tvm_model.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def _small_net(path):
    """Conv-Relu-Conv plus a residual Add, batch 1, 16 channels of 12x12."""
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((16, 16, 1, 1)) * 0.1).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["c", "x"], ["y"])]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", T.FLOAT, [1, 16, 12, 12])],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def _args():
    return argparse.Namespace(trials=0, threads=1, runs=2, block=1, work_dir="")


def test_tvm_computes_what_onnx_runtime_does_and_all_three_are_timed(tmp_path):
    path = str(tmp_path / "net.onnx")
    _small_net(path)
    medians, errors, note = bench.bench(path, _args())
    assert note.startswith("untuned"), note
    assert set(medians) == {"atvoss", "ort", "tvm"}
    assert all(v > 0 for v in medians.values())
    assert errors["tvm"] <= 1e-4 and errors["atvoss"] <= 1e-4, errors


def test_a_model_tvm_cannot_take_is_reported_not_skipped(tmp_path, monkeypatch):
    path = str(tmp_path / "net.onnx")
    _small_net(path)

    def refuses(*args, **kwargs):
        raise ValueError("Mystery is not supported")

    monkeypatch.setattr(bench, "tvm_runner", refuses)
    medians, errors, note = bench.bench(path, _args())
    assert note == "TVM failed: ValueError: Mystery is not supported", note
    assert "tvm" not in medians and "tvm" not in errors
