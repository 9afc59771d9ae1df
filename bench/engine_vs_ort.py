#!/usr/bin/env python3
"""Whole ONNX models through atvoss (atvoss.runtime.Model, docs/engine.md) and through ONNX
Runtime in one process, on the same inputs: threads set alike (intra-op = --threads, inter-op 1,
sequential execution; neither side's idle threads spin, since interleaved runs would each find
the other's threads spinning on the cores), both warmed up, runs interleaved, medians of --runs
runs each. Prints per
model the largest relative error against ONNX Runtime (|a - r| / max(|r|, 1)), both medians and
the speed ratio (ONNX Runtime's median over atvoss's: above 1, atvoss is faster).

Usage (the peers' environment, scripts/setup.sh; PYTHONPATH the build's python folder):
  PYTHONPATH=build/python build/peers/bin/python bench/engine_vs_ort.py MODEL.onnx[:PLAN.json] ...
      [--threads 2] [--runs 20] [--batch 1]
A MODEL:PLAN pair runs atvoss with that model plan's schedules (a host job's "model_plan");
a MODEL alone, with the default schedules."""
import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read when libgomp loads, before the import below

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

import atvoss.runtime as rt  # noqa: E402


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def timed(f):
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1e6


def bench(path, plan, args):
    model = rt.Model(path, plan=plan, batch=args.batch, threads=args.threads)
    session = ort_session(path, args.threads)
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, shape).astype(np.float32) for _, shape in model.inputs]
    feed = {name: x for (name, _), x in zip(model.inputs, inputs)}
    ours = model.run(inputs)
    theirs = session.run([name for name, _ in model.outputs], feed)
    error = max(float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1))) for a, r in zip(ours, theirs))
    for _ in range(3):
        model.run(inputs)
        session.run(None, feed)
    a, o = [], []
    for _ in range(args.runs):
        a.append(timed(lambda: model.run(inputs)))
        o.append(timed(lambda: session.run(None, feed)))
    kernels = model.describe()
    return error, statistics.median(a), statistics.median(o), kernels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    print("onnxruntime %s, %d threads, batch %d, medians of %d interleaved runs" %
          (ort.__version__, args.threads, args.batch, args.runs))
    print("%-28s %10s %12s %12s %8s %s" % ("model", "max error", "atvoss us", "ort us", "ratio", "kernels (plan)"))
    for spec in args.models:
        path, _, plan = spec.partition(":")
        error, ours, theirs, d = bench(path, plan or None, args)
        print("%-28s %10.2e %12.1f %12.1f %7.2fx %d (%d)" % (
            path.rsplit("/", 1)[-1] + (" +plan" if plan else ""), error, ours, theirs, theirs / ours,
            d["kernels"], d["kernels_from_plan"]), flush=True)


if __name__ == "__main__":
    main()
