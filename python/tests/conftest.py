"""Shared fixtures of the Python suites (run by ctest: python/CMakeLists.txt sets
PYTHONPATH to <build>/python, ATVOSS_BIN_DIR to the tools and ATVOSS_SOURCE_DIR)."""
import os

import pytest

SOURCE_DIR = os.environ.get("ATVOSS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.environ.get("ATVOSS_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
GEMM_CACHE = os.path.join(SOURCE_DIR, "data", "recorded-spaces", "gemm-RTX_3090.json.gz")

# Small enough that a tuning round takes milliseconds on npu-sim.
MATMUL = {"op": "matmul", "dims": {"M": 256, "N": 256, "K": 256}}


@pytest.fixture
def matmul():
    import atvoss

    return atvoss.Workload(MATMUL)


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "tune.db")
