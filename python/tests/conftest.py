"""Shared fixtures of the Python suites (run by ctest: python/CMakeLists.txt sets
PYTHONPATH to <build>/python, ATVOSS_BIN_DIR to the tools and ATVOSS_SOURCE_DIR)."""
import os

import pytest

SOURCE_DIR = os.environ.get("ATVOSS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.environ.get("ATVOSS_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))

# Small enough that a tuning round takes milliseconds on npu-sim.
MATMUL = {"op": "matmul", "dims": {"M": 256, "N": 256, "K": 256}}


@pytest.fixture
def matmul():
    import atvoss

    return atvoss.Workload(MATMUL)


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "tune.db")


@pytest.fixture
def small_cache(tmp_path):
    """A Kernel Tuner cache (data/recorded-spaces/README.md format) of 12 configurations: one
    failed to compile, one absent (breaks the kernel's restrictions). The recorded files are
    too large for a suite that runs in seconds."""
    import gzip
    import json

    cache = {}
    for bx in (32, 64, 128, 256):
        for tile in (1, 2, 4):
            if (bx, tile) == (256, 4):
                continue  # absent: an invalid point
            entry = {"block_size_x": bx, "tile": tile}
            if (bx, tile) == (32, 1):
                entry["time"] = "CompilationFailedConfig"
            else:
                t = 1.0 + abs(bx - 128) / 64 + abs(tile - 2) / 2  # optimum at (128, 2): 1 ms
                entry.update({"time": t, "times": [t, t * 1.01, t * 0.99]})
            cache[f"{bx},{tile}"] = entry
    doc = {"device_name": "Test_GPU", "kernel_name": "toy", "problem_size": [1024],
           "tune_params_keys": ["block_size_x", "tile"],
           "tune_params": {"block_size_x": [32, 64, 128, 256], "tile": [1, 2, 4]},
           "objective": "time", "cache": cache}
    path = tmp_path / "toy-Test_GPU.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return str(path)
