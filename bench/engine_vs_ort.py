#!/usr/bin/env python3
"""Whole ONNX models through atvoss (atvoss.runtime.Model, docs/engine.md) and through ONNX
Runtime in one process, on the same inputs: threads set alike (intra-op = --threads, inter-op 1,
sequential execution), each side's threads waiting as it does by default (both spin a while
before they sleep: --passive makes both sleep at once, which costs each a wake-up per parallel
region), both warmed up, interleaved in blocks (each block 50 ms idle, so that the other side's
spinning threads sleep, one untimed run, then --block timed runs), medians of --runs timed runs each. Prints per
model the largest relative error against ONNX Runtime (|a - r| / max(|r|, 1)), both medians and
the speed ratio (ONNX Runtime's median over atvoss's: above 1, atvoss is faster).

Usage (the peers' environment, scripts/setup.sh; PYTHONPATH the build's python folder):
  PYTHONPATH=build/python build/peers/bin/python bench/engine_vs_ort.py MODEL.onnx[:PLAN.json] ...
      [--threads 2] [--runs 20] [--batch 1] [--dim sequence_length=128 ...]
A MODEL:PLAN pair runs atvoss with that model plan's schedules (a host job's "model_plan");
a MODEL alone, with the default schedules. Float inputs are uniform in [-1, 1); integer inputs
(token ids, masks, token types) are 0 or 1, valid for any of them."""
import argparse
import os
import statistics
import time

import sys  # noqa: E402

# Read when libgomp loads, before the imports below. libgomp spins an idle thread 300000 times
# before it sleeps, but inside a Python process it throttles that to 30000 (a ResNet-50 run took
# 25 % longer: every kernel's parallel region then paid a wake-up); ONNX Runtime's threads spin
# by default too, so both sides get the spin libgomp documents as its default.
if "--passive" in sys.argv:
    os.environ["OMP_WAIT_POLICY"] = "passive"
else:
    os.environ.setdefault("GOMP_SPINCOUNT", "300000")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

import atvoss.runtime as rt  # noqa: E402


# Idle before each block: the other side's threads, spinning after its last run, go to sleep
# first (ONNX Runtime's spin outlasted one untimed run of a 4 ms model: atvoss's threads then
# shared the two cores with it, 5.8 ms against 4.1 ms run alone).
IDLE_S = 0.05


def ort_session(path, threads, passive, optimized=True):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0" if passive else "1")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def timed(f):
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1e6


def bench(path, plan, args):
    named = {d.dim_param for i in onnx.load(path, load_external_data=False).graph.input
             for d in i.type.tensor_type.shape.dim if d.dim_param}
    dims = {k: v for k, v in args.dims.items() if k in named}  # each model's own named dims
    model = rt.Model(path, plan=plan, batch=args.batch, threads=args.threads, dims=dims)
    session = ort_session(path, args.threads, args.passive)
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, shape).astype(np.float32) if dtype == "float" else
              rng.integers(0, 2, shape).astype(np.int64 if dtype == "int64" else np.int32)
              for (_, shape), (_, dtype) in zip(model.inputs, model.input_dtypes)]
    feed = {name: x for (name, _), x in zip(model.inputs, inputs)}
    ours = model.run(inputs)
    theirs = session.run([name for name, _ in model.outputs], feed)
    error = max(float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1))) for a, r in zip(ours, theirs))
    ours_us, theirs_us = interleaved_medians(lambda: model.run(inputs), lambda: session.run(None, feed), args.runs,
                                             args.block)
    return error, ours_us, theirs_us, model.describe()


def interleaved_medians(ours, theirs, runs, block):
    """The medians (us) of runs timed calls of ours and of theirs, after three warm-up calls
    each, in turns of block calls, each turn after an idle pause and an untimed call."""
    for _ in range(3):
        ours()
        theirs()
    a, o = [], []
    while len(a) < runs:
        time.sleep(IDLE_S)
        ours()
        a += [timed(ours) for _ in range(block)]
        time.sleep(IDLE_S)
        theirs()
        o += [timed(theirs) for _ in range(block)]
    return statistics.median(a), statistics.median(o)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--block", type=int, default=5, help="timed runs per block")
    parser.add_argument("--passive", action="store_true", help="no thread spins while idle (both sides)")
    parser.add_argument("--dim", action="append", default=[],
                        help="NAME=N, a named symbolic dim's value (for the models whose inputs have it)")
    args = parser.parse_args()
    args.dims = {k: int(v) for k, _, v in (d.partition("=") for d in args.dim)}
    print("onnxruntime %s, %d threads, batch %d, medians of %d runs interleaved in blocks of %d%s" %
          (ort.__version__, args.threads, args.batch, args.runs, args.block,
           ", idle threads passive" if args.passive else ""))
    print("%-28s %10s %12s %12s %8s %s" % ("model", "max error", "atvoss us", "ort us", "ratio", "kernels (plan)"))
    for spec in args.models:
        path, _, plan = spec.partition(":")
        error, ours, theirs, d = bench(path, plan or None, args)
        print("%-28s %10.2e %12.1f %12.1f %7.2fx %d (%d)" % (
            path.rsplit("/", 1)[-1] + (" +plan" if plan else ""), error, ours, theirs, theirs / ours,
            d["kernels"], d["kernels_from_plan"]), flush=True)


if __name__ == "__main__":
    main()
