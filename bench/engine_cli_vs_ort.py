#!/usr/bin/env python3
"""ONNX models through `atvoss-run` as a user runs it, against ONNX Runtime: for each model, its
inputs written as .npy files (floats uniform in [-1, 1), integer inputs 0 or 1: valid token ids
and masks), `atvoss-run MODEL --input NAME=FILE ... --out DIR --json`, and every output file read
back and compared with ONNX Runtime's output of the same inputs: the same shape and dtype, and
within 1e-4 relative (|a - r| / max(|r|, 1)). Symbolic dims are 1 for the first dim and --dim
(default 16) for the others. Prints one line per model: ok or WRONG (and why), the largest error.

Usage (the peers' environment, scripts/setup.sh):
  build/peers/bin/python bench/engine_cli_vs_ort.py MODEL.onnx ... [--dim 16] [--threads 2]
Exits 1 if any model fails or is wrong."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMPY = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
         onnx.TensorProto.BOOL: np.bool_, onnx.TensorProto.UINT8: np.uint8}


def inputs_of(path, dim, rng):
    """The model's graph inputs (not its initializers) as arrays, by name."""
    m = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in m.graph.initializer}
    feeds = {}
    for i in m.graph.input:
        if i.name in initializers:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else (1 if k == 0 else dim) for k, d in enumerate(t.shape.dim)]
        kind = NUMPY[t.elem_type]
        feeds[i.name] = (rng.uniform(-1, 1, shape) if kind == np.float32 else rng.integers(0, 2, shape)).astype(kind)
    return feeds


def check(path, dim, threads, folder, rng):
    feeds = inputs_of(path, dim, rng)
    args = []
    for name, a in feeds.items():
        f = os.path.join(folder, "input%d.npy" % len(args))
        np.save(f, a)
        args += ["--input", "%s=%s" % (name, f)]
    out = os.path.join(folder, "out")
    run = subprocess.run([os.path.join(ROOT, "build", "bin", "atvoss-run"), path, "--threads", str(threads), "--out",
                          out, "--json"] + args, capture_output=True, text=True)
    if run.returncode != 0:
        return "FAIL (exit %d) %s" % (run.returncode, run.stderr.strip()[:300]), 0.0
    files = {o["name"]: o["file"] for o in json.loads(run.stdout)["outputs"]}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    worst, wrong = 0.0, []
    for name, r in zip(names, session.run(names, feeds)):
        a = np.load(os.path.join(out, files[name]))
        if a.shape != r.shape or a.dtype != r.dtype:
            wrong.append("%s: %s %s, ONNX Runtime %s %s" % (name, a.shape, a.dtype, r.shape, r.dtype))
            continue
        a64, r64 = a.astype(np.float64), r.astype(np.float64)
        worst = max(worst, float(np.max(np.abs(a64 - r64) / np.maximum(np.abs(r64), 1), initial=0.0)))
    if worst > 1e-4:
        wrong.append("max relative error %.2e" % worst)
    return ("WRONG " + "; ".join(wrong)) if wrong else "ok", worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--dim", type=int, default=16, help="size of the symbolic dims after the first")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    failed = 0
    for path in a.models:
        with tempfile.TemporaryDirectory() as folder:
            verdict, worst = check(path, a.dim, a.threads, folder, rng)
        failed += verdict != "ok"
        print("%-32s %-6s %.2e" % (os.path.basename(path), verdict, worst))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
