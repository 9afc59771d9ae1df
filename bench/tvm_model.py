#!/usr/bin/env python3
"""Whole ONNX models through Apache TVM beside atvoss and ONNX Runtime, in one process, on the
same inputs (docs/decisions/peers-tvm-metaschedule.md has the kernel-level comparison).

TVM: its Relax ONNX frontend, the operators legalized to TIR, MetaSchedule tuning of the
model's tasks with --trials measured trials in all (its default search and cost model; the
builder's timeout raised as in bench/tvm_metaschedule.py), compiled for llvm with this CPU's
-mcpu and --threads cores, run by the Relax VM. --trials 0 compiles the legalized TIR as it is
(TVM's default schedules: no tuning). atvoss: atvoss.runtime.Model (default schedules, or a
model plan given as MODEL.onnx:PLAN.json). ONNX Runtime: as bench/engine_vs_ort.py sets it.
All three warmed up and timed in interleaved blocks (each after an idle pause, so that the
others' spinning threads sleep), medians of --runs runs. The outputs are compared with ONNX
Runtime's (|a - r| / max(|r|, 1)). A peer that fails is reported with its error, not skipped.

Usage (the peers' environment, scripts/setup.sh; PYTHONPATH the build's python folder):
  PYTHONPATH=build/python build/peers/bin/python bench/tvm_model.py MODEL.onnx[:PLAN.json]
      [--trials 0] [--threads 2] [--runs 10] [--block 2] [--work-dir DIR]"""
import argparse
import logging
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("GOMP_SPINCOUNT", "300000")  # as engine_vs_ort.py, before libgomp loads

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import atvoss.runtime as rt  # noqa: E402
from engine_vs_ort import IDLE_S, ort_session, timed  # noqa: E402
from peers_common import host_mcpu  # noqa: E402


def tvm_runner(path, shapes, trials, threads, work_dir):
    """A function running the model through TVM on numpy inputs, and the tuning's wall seconds."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.s_tir import meta_schedule as ms

    target = tvm.target.Target({"kind": "llvm", "mcpu": host_mcpu(), "num-cores": threads})
    mod = from_onnx(onnx.load(path), shape_dict=shapes)  # the weights as constants
    mod = relax.transform.LegalizeOps()(mod)
    t0 = time.perf_counter()
    if trials > 0:
        # MetaSchedule prints its task table at INFO after every round; its log files keep it.
        logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
        builder = ms.builder.LocalBuilder(max_workers=threads, timeout_sec=600.0)
        db = ms.relax_integration.tune_relax(mod=mod, params={}, target=target, work_dir=work_dir,
                                             max_trials_global=trials, builder=builder)
        ex = ms.relax_integration.compile_relax(db, mod, target, {})
    else:
        ex = tvm.compile(mod, target=target)
    wall = time.perf_counter() - t0
    dev = tvm.cpu(0)
    vm = relax.VirtualMachine(ex, dev)

    def run(inputs):
        out = vm["main"](*[tvm.runtime.tensor(x, dev) for x in inputs])
        return [o.numpy() for o in ([out] if hasattr(out, "numpy") else out)]

    return run, wall


def bench(spec, args):
    path, _, plan = spec.partition(":")
    model = rt.Model(path, plan=plan or None, threads=args.threads)
    session = ort_session(path, args.threads, False)
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, shape).astype(np.float32) for _, shape in model.inputs]
    feed = {name: x for (name, _), x in zip(model.inputs, inputs)}
    names = [name for name, _ in model.outputs]
    reference = session.run(names, feed)
    sides = {"atvoss": lambda: model.run(inputs), "ort": lambda: session.run(names, feed)}
    errors = {"atvoss": max(float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1)))
                            for a, r in zip(model.run(inputs), reference))}
    tvm_note = ""
    try:
        run, wall = tvm_runner(path, {n: list(s) for n, s in model.inputs}, args.trials, args.threads,
                               args.work_dir or tempfile.mkdtemp(prefix="atvoss-tvm-"))
        errors["tvm"] = max(float(np.max(np.abs(a - r) / np.maximum(np.abs(r), 1)))
                            for a, r in zip(run(inputs), reference))
        sides["tvm"] = lambda: run(inputs)
        tvm_note = "tuned %d trials in %.0f s" % (args.trials, wall) if args.trials else "untuned (compile %.0f s)" % wall
    except Exception as e:  # noqa: BLE001 - the table says why TVM did not run
        tvm_note = "TVM failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    for f in sides.values():
        f()
    times = {k: [] for k in sides}
    while len(times["atvoss"]) < args.runs:
        for k, f in sides.items():
            time.sleep(IDLE_S)
            f()
            times[k] += [timed(f) for _ in range(args.block)]
    return {k: statistics.median(v) for k, v in times.items()}, errors, tvm_note


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--trials", type=int, default=0, help="MetaSchedule trials over the model; 0: untuned")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--block", type=int, default=2)
    parser.add_argument("--work-dir", default="")
    args = parser.parse_args()
    print("%d threads, medians of %d runs interleaved in blocks of %d" % (args.threads, args.runs, args.block))
    print("%-24s %12s %12s %12s %10s %10s  %s" % ("model", "atvoss us", "ort us", "tvm us", "ort/atv", "tvm/atv",
                                                 "tvm; max errors against ort"))
    for spec in args.models:
        med, err, note = bench(spec, args)
        tvm_us = med.get("tvm", float("nan"))
        print("%-24s %12.1f %12.1f %12.1f %9.2fx %9.2fx  %s; %s" % (
            spec.rsplit("/", 1)[-1], med["atvoss"], med["ort"], tvm_us, med["ort"] / med["atvoss"],
            tvm_us / med["atvoss"], note, ", ".join("%s %.1e" % kv for kv in err.items())), flush=True)


if __name__ == "__main__":
    main()
