"""The full loop on this CPU: tune one matmul+bias+gelu on the host target, export the table,
and run it through atvoss.runtime (the tuned kernel for the tuned shape, the nearest tuned
shape's schedule for another one), checked against numpy.
Usage: runtime_matmul.py [OUT_DIR] [TRIALS]"""
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

import atvoss
import atvoss.runtime as rt

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
trials = int(sys.argv[2]) if len(sys.argv) > 2 else 32

w = atvoss.Workload(op="matmul", dtype="float32", dims={"M": 64, "N": 256, "K": 128}, epilogue=["bias", "gelu"])
table = os.path.join(out, "host-table.json")
r = atvoss.tune(w, "host", trials=trials, strategy="random", seed=1, db=os.path.join(out, "host.db"), export=table)
print(f"tuned {w.label}: {r.best_us:.1f} us (default {r.default_us:.1f} us) after {r.trials} trials")


def gelu(x: Any) -> Any:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


runtime = rt.Runtime(table)
rng = np.random.default_rng(0)
for m in (64, 48):  # the tuned shape, then one the table does not hold
    a = rng.uniform(-1, 1, (m, 128)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 256)).astype(np.float32)
    bias = rng.uniform(-1, 1, 256).astype(np.float32)
    c, choice = runtime.matmul(a, b, ["bias", "gelu"], bias=bias, return_choice=True)
    t0 = time.perf_counter()
    for _ in range(100):
        runtime.matmul(a, b, ["bias", "gelu"], bias=bias)
    us = (time.perf_counter() - t0) / 100 * 1e6
    err = np.max(np.abs(c - gelu(a.astype(np.float64) @ b + bias)))
    print(f"runtime {m}x256x128: {choice.kind} ({choice.reason}); max abs error {err:.1e}; {us:.1f} us per call")
