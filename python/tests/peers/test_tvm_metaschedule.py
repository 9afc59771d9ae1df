"""The TVM MetaSchedule peer (bench/tvm_metaschedule.py, docs/decisions/peers-tvm-metaschedule.md):
TVM imports at the pinned versions, the bench's TE definitions compute what numpy does, and one
small workload goes through the whole bench path: atvoss and MetaSchedule each tune it for a few
trials, both winners are checked against numpy and timed interleaved. About a minute, most of it
MetaSchedule's builder workers starting."""
import argparse
import importlib.util
import os
import sys

import numpy as np
import pytest

SOURCE = os.environ.get("ATVOSS_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))


def _load_bench():
    path = os.path.join(SOURCE, "bench", "tvm_metaschedule.py")
    spec = importlib.util.spec_from_file_location("tvm_metaschedule", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules["tvm_metaschedule"] = module
    spec.loader.exec_module(module)  # sets TVM_NUM_THREADS / ATVOSS_HOST_MAX_THREADS to 1
    return module


bench = _load_bench()


def test_tvm_imports_at_the_pinned_versions():
    import tvm
    import tvm_ffi
    from tvm.s_tir import meta_schedule  # noqa: F401  (MetaSchedule's home in TVM 0.27)
    import xgboost  # noqa: F401  (its cost model)

    pins = {}
    with open(os.path.join(SOURCE, "scripts", "peers-requirements.txt")) as f:
        for line in f:
            if "==" in line and not line.startswith("#"):
                name, version = line.strip().split("==")
                pins[name] = version
    assert tvm.__version__ == pins["apache-tvm"]
    # 0.1.15.x crashes in MetaSchedule's builder (save_json of a PrimFunc), so the pin matters.
    assert tvm_ffi.__version__ == pins["apache-tvm-ffi"]


@pytest.mark.parametrize("workload", [
    bench._mm(17, 24, 9),
    bench._conv(6, 8, 16),
    {"op": "depthwise_conv2d", "dtype": "float32",
     "dims": {"N": 1, "C": 16, "H": 7, "W": 7, "R": 3, "S": 3, "stride": 1, "pad": 1}},
    bench._rows("softmax", 5, 33),
    bench._rows("layernorm", 5, 33),
], ids=lambda w: w["op"])
def test_the_te_definitions_match_numpy(workload):
    """Untuned (tvm.compile of the bench's TE) against the bench's float64 numpy reference: the two
    tools are only compared where both compute the same thing in the same layouts."""
    side = bench.Tvm()
    mod = side.tvm.compile(side.prim_func(workload), target=side.target).jit()
    data = bench.inputs(workload, seed=3)
    tensors = side.tensors(workload, data)
    mod["main"](*tensors)
    assert bench.rel_error(tensors[-1].numpy(), bench.reference(workload, data)) <= bench.TOLERANCE


def test_both_tuners_run_a_tiny_workload_through_the_bench():
    """MetaSchedule and atvoss tune a 64^3 matmul for 8 trials each; both kernels match numpy
    within 1e-4 and are timed; the trial records give a 95 % trial for the better tool."""
    args = argparse.Namespace(rounds=1, repeat=3)
    row = bench.run_one("tiny_mm", bench.WORKLOADS["tiny_mm"], 8, 1, args, bench.Tvm(), None)
    assert "tvm_error" not in row, row.get("tvm_error")
    assert row["tvm_trials"] == 8 and row["atvoss_trials"] == 8
    assert row["tvm_rel_err"] <= bench.TOLERANCE and row["atvoss_rel_err"] <= bench.TOLERANCE
    assert row["atvoss_vs_tvm_rel_err"] <= bench.TOLERANCE
    assert row["numerics_ok"]
    assert 0 < row["atvoss_s"] < 1 and 0 < row["tvm_s"] < 1
    assert np.isfinite(row["speed_ratio"])
    assert row["atvoss_trial_95"] is not None or row["tvm_trial_95"] is not None
    assert row["atvoss_schedule"]["threads"] == 1  # the one-thread comparison holds
    line = bench.fmt_row(row)
    assert line.startswith("tiny_mm") and "FAIL" not in line


def test_a_peer_that_cannot_be_used_is_reported():
    """Without TVM the row says why instead of vanishing (the bench's rule for every peer)."""
    args = argparse.Namespace(rounds=1, repeat=3)
    row = bench.run_one("tiny_softmax", bench.WORKLOADS["tiny_softmax"], 2, 1, args, None,
                        "TVM unusable: ImportError: test")
    assert row["tvm_error"] == "TVM unusable: ImportError: test"
    assert "TVM unusable" in bench.fmt_row(row) and "speed_ratio" not in row
