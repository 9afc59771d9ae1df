#!/usr/bin/env python3
"""Kernels against Apache TVM MetaSchedule on this CPU (docs/decisions/peers-tvm-metaschedule.md).

Each workload is tuned twice with the same budget of measured trials: by atvoss (atvoss.tune on
target "host", its default strategy) and by MetaSchedule (ms.tune_tir with its default
evolutionary search and XGBoost cost model, target llvm with this CPU's -mcpu; its builder's
timeout raised, see Tvm.tune; --ms-per-iter sets its batch size, default 64, its own). Both kernels
compute the same thing in the same layouts (row-major matmul, conv2d NHWC/HWIO, depthwise
NHWC with R x S x C weights, softmax and layer norm along rows): the TVM side is written in TE
here from atvoss's workload JSON.

One thread each: ATVOSS_HOST_MAX_THREADS=1 caps atvoss's threads knob, TVM_NUM_THREADS=1 and
the target's num-cores 1 keep TVM's kernels on one thread. This is a kernel-level comparison on
a shared 2-core machine; a second thread would measure the neighbours as much as the kernel.
Compiles may use both cores on both sides (their tools' defaults).

After tuning, the two winners are timed interleaved in this process's CPU set (pinned to one
CPU): --rounds rounds, each one untimed call of the TVM kernel then --repeat timed windows of
each (atvoss: atvoss.measure, its runner in a child pinned to the same CPU, windows of >= 1 ms;
TVM: Module.time_evaluator with min_repeat_ms=1), the median over all windows. The output of
each is checked against numpy in float64 (max |c - ref| / max(|ref|, 1) <= 1e-4): TVM's always;
atvoss's through atvoss.runtime for matmul and conv2d, and by its runner's own double-precision
check for the ops the runtime does not run (depthwise, softmax, layernorm).

"95 %": the best time either tool recorded while tuning (each by its own measurement) is the
reference; each tool's trial number is the first whose recorded time is within 1/0.95 of it
("-" if never). Tuning wall time is the tune call itself (MetaSchedule: tune_tir; atvoss: tune).

A peer that fails to import or tune is reported in the table, never skipped silently.

Usage (the peers' environment, scripts/setup.sh; PYTHONPATH the build's python folder):
  PYTHONPATH=build/python build/peers/bin/python bench/tvm_metaschedule.py \
      [--workloads mm1024,bert_qkv,...|all] [--budgets 16,64,256] [--rounds 5] [--repeat 5] \
      [--seed 1] [--json out.json]
"""
import argparse
import glob
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback

# Read when the thread pools start, so before tvm and atvoss load.
os.environ["TVM_NUM_THREADS"] = "1"
os.environ["ATVOSS_HOST_MAX_THREADS"] = "1"

import numpy as np  # noqa: E402

import atvoss  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, however it is loaded
from peers_common import host_mcpu  # noqa: E402

TOLERANCE = 1e-4


# --- The workloads: atvoss's JSON; the TE and numpy definitions below read the same dims. ---

def _mm(m, n, k):
    return {"op": "matmul", "dtype": "float32", "dims": {"M": m, "N": n, "K": k}}


def _conv(hw, c, k):
    return {"op": "conv2d", "dtype": "float32",
            "dims": {"N": 1, "C": c, "H": hw, "W": hw, "K": k, "R": 3, "S": 3, "stride": 1, "pad": 1}}


def _rows(op, m, n):
    return {"op": op, "dtype": "float32", "dims": {"M": m, "N": n}}


WORKLOADS = {
    "mm1024": _mm(1024, 1024, 1024),
    "bert_qkv": _mm(128, 768, 768),
    "bert_ffn1": _mm(128, 3072, 768),
    "bert_ffn2": _mm(128, 768, 3072),
    "r50_56": _conv(56, 64, 64),
    "r50_28": _conv(28, 128, 128),
    "r50_14": _conv(14, 256, 256),
    "r50_7": _conv(7, 512, 512),
    # MobileNet-style 3x3 depthwise, stride 1 pad 1, 56x56 with 128 channels.
    "dw56": {"op": "depthwise_conv2d", "dtype": "float32",
             "dims": {"N": 1, "C": 128, "H": 56, "W": 56, "R": 3, "S": 3, "stride": 1, "pad": 1}},
    "softmax": _rows("softmax", 1536, 128),
    "layernorm": _rows("layernorm", 128, 768),
    # Small ones for the CI peer check (python/tests/peers/test_tvm_metaschedule.py).
    "tiny_mm": _mm(64, 64, 64),
    "tiny_softmax": _rows("softmax", 64, 64),
}
MAIN = ["mm1024", "bert_qkv", "bert_ffn1", "bert_ffn2", "r50_56", "r50_28", "r50_14", "r50_7",
        "dw56", "softmax", "layernorm"]
LAYERNORM_EPS = 1e-5  # host/reference_rowops.hpp's kLayernormEpsilon


def flops(w):
    d = w["dims"]
    if w["op"] == "matmul":
        return 2.0 * d["M"] * d["N"] * d["K"]
    if w["op"] == "conv2d":
        return 2.0 * d["H"] * d["W"] * d["K"] * d["C"] * d["R"] * d["S"]
    if w["op"] == "depthwise_conv2d":
        return 2.0 * d["H"] * d["W"] * d["C"] * d["R"] * d["S"]
    return 5.0 * d["M"] * d["N"]  # row ops: a nominal few flops per element, for the GFLOP/s column only


def inputs(w, seed):
    """Seeded float32 operands, in the ranges atvoss's runner uses for the row ops (softmax in
    [-8, 8] so the max subtraction matters; layer norm in [2, 4], a mean far from 0)."""
    rng = np.random.default_rng(seed)
    d = w["dims"]
    u = lambda shape, lo=-1.0, hi=1.0: rng.uniform(lo, hi, shape).astype(np.float32)  # noqa: E731
    if w["op"] == "matmul":
        return [u((d["M"], d["K"])), u((d["K"], d["N"]))]
    if w["op"] == "conv2d":
        return [u((1, d["H"], d["W"], d["C"])), u((d["R"], d["S"], d["C"], d["K"]))]
    if w["op"] == "depthwise_conv2d":
        return [u((1, d["H"], d["W"], d["C"])), u((d["R"], d["S"], d["C"]))]
    if w["op"] == "softmax":
        return [u((d["M"], d["N"]), -8.0, 8.0)]
    if w["op"] == "layernorm":
        return [u((d["M"], d["N"]), 2.0, 4.0), u((d["N"],), 0.5, 1.5), u((d["N"],), -0.5, 0.5)]
    raise ValueError(f"unknown op {w['op']}")


def reference(w, args):
    """The float64 numpy result."""
    a = [x.astype(np.float64) for x in args]
    d = w["dims"]
    if w["op"] == "matmul":
        return a[0] @ a[1]
    if w["op"] in ("conv2d", "depthwise_conv2d"):
        x, wt = a
        p, r, s = d["pad"], d["R"], d["S"]
        xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
        oh, ow = d["H"] + 2 * p - r + 1, d["W"] + 2 * p - s + 1
        k = d["K"] if w["op"] == "conv2d" else d["C"]
        out = np.zeros((1, oh, ow, k))
        for i in range(r):
            for j in range(s):
                win = xp[:, i:i + oh, j:j + ow, :]
                out += win @ wt[i, j] if w["op"] == "conv2d" else win * wt[i, j]
        return out
    if w["op"] == "softmax":
        e = np.exp(a[0] - a[0].max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x, g, b = a
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYERNORM_EPS) * g + b


def rel_error(c, ref):
    c = np.asarray(c, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        return math.inf
    return float(np.max(np.abs(c - ref) / np.maximum(np.abs(ref), 1.0)))


# --- TVM: TE definitions and MetaSchedule. ---

class Tvm:
    """The TVM side; construction raises (and the table says why) if TVM cannot be used."""

    def __init__(self):
        import tvm
        from tvm import te
        from tvm.s_tir import meta_schedule as ms
        self.tvm, self.te, self.ms = tvm, te, ms
        self.version = tvm.__version__
        # This CPU's flags: znver4 where AVX-512 is present (this AMD EPYC, Zen 4), else the host's.
        self.mcpu = host_mcpu()
        self.target = tvm.target.Target({"kind": "llvm", "mcpu": self.mcpu, "num-cores": 1})
        self.dev = tvm.cpu(0)

    def prim_func(self, w):
        te = self.te
        d = w["dims"]
        f32 = "float32"
        if w["op"] == "matmul":
            A = te.placeholder((d["M"], d["K"]), f32, name="A")
            B = te.placeholder((d["K"], d["N"]), f32, name="B")
            k = te.reduce_axis((0, d["K"]), name="k")
            C = te.compute((d["M"], d["N"]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
            return te.create_prim_func([A, B, C])
        if w["op"] in ("conv2d", "depthwise_conv2d"):
            H, W, C, R, S, p = d["H"], d["W"], d["C"], d["R"], d["S"], d["pad"]
            assert d.get("stride", 1) == 1, "stride 1 only"
            OH, OW = H + 2 * p - R + 1, W + 2 * p - S + 1
            X = te.placeholder((1, H, W, C), f32, name="X")
            Xp = te.compute((1, H + 2 * p, W + 2 * p, C), lambda n, h, x, c: self.tvm.tirx.if_then_else(
                self.tvm.tirx.all(h >= p, h < H + p, x >= p, x < W + p), X[n, h - p, x - p, c],
                self.tvm.tirx.const(0.0, f32)), name="Xpad")
            r = te.reduce_axis((0, R), name="r")
            s = te.reduce_axis((0, S), name="s")
            if w["op"] == "conv2d":
                Wt = te.placeholder((R, S, C, d["K"]), f32, name="Wt")
                c = te.reduce_axis((0, C), name="c")
                Y = te.compute((1, OH, OW, d["K"]), lambda n, h, x, k: te.sum(
                    Xp[n, h + r, x + s, c] * Wt[r, s, c, k], axis=[r, s, c]), name="Y")
            else:
                Wt = te.placeholder((R, S, C), f32, name="Wt")
                Y = te.compute((1, OH, OW, C), lambda n, h, x, c: te.sum(
                    Xp[n, h + r, x + s, c] * Wt[r, s, c], axis=[r, s]), name="Y")
            return te.create_prim_func([X, Wt, Y])
        M, N = d["M"], d["N"]
        X = te.placeholder((M, N), f32, name="X")
        j = te.reduce_axis((0, N), name="j")
        if w["op"] == "softmax":
            mx = te.compute((M,), lambda i: te.max(X[i, j], axis=j), name="rowmax")
            e = te.compute((M, N), lambda i, jj: te.exp(X[i, jj] - mx[i]), name="e")
            j2 = te.reduce_axis((0, N), name="j2")
            sm = te.compute((M,), lambda i: te.sum(e[i, j2], axis=j2), name="rowsum")
            Y = te.compute((M, N), lambda i, jj: e[i, jj] / sm[i], name="Y")
            return te.create_prim_func([X, Y])
        if w["op"] == "layernorm":
            G = te.placeholder((N,), f32, name="G")
            Bt = te.placeholder((N,), f32, name="Bt")
            # Two passes (mean, then the squared deviations), as the reference: inputs in [2, 4]
            # would lose digits to E[x^2] - mean^2. TE allows a reduction only at the top of a
            # compute, so the sums are divided by N where they are read.
            total = te.compute((M,), lambda i: te.sum(X[i, j], axis=j), name="total")
            j2 = te.reduce_axis((0, N), name="j2")
            sq = te.compute((M,), lambda i: te.sum((X[i, j2] - total[i] / N) * (X[i, j2] - total[i] / N), axis=j2),
                            name="sq")
            Y = te.compute((M, N), lambda i, jj: (X[i, jj] - total[i] / N) * te.rsqrt(sq[i] / N + LAYERNORM_EPS)
                           * G[jj] + Bt[jj], name="Y")
            return te.create_prim_func([X, G, Bt, Y])
        raise ValueError(f"TE: unknown op {w['op']}")

    def tune(self, w, trials, seed, work_dir, per_iter=64):
        """MetaSchedule with its defaults, except the builder's timeout (see below); returns
        (runnable module, per-trial times in seconds in measurement order, wall seconds)."""
        ms = self.ms
        from tvm.ir.utils import derived_object
        times = []

        @derived_object
        class Record(ms.measure_callback.PyMeasureCallback):
            """Keeps every measured candidate's time in order (inf for a failed build or run)."""

            def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
                for b, r in zip(builder_results, runner_results):
                    ok = b.error_msg is None and r.error_msg is None and r.run_secs
                    times.append(float(np.mean([float(x) for x in r.run_secs])) if ok else math.inf)

        f = self.prim_func(w)
        # Each builder call starts fresh worker processes, and each imports
        # tvm.s_tir.tensor_intrin first: 13 s of CPU, 40-70 s of wall time on this shared machine,
        # past the default 30 s timeout, so with the defaults every candidate failed to build.
        builder = ms.builder.LocalBuilder(max_workers=_physical_cores(), timeout_sec=600.0)
        callbacks = ms.measure_callback.MeasureCallback.create("default") + [Record()]
        t0 = time.perf_counter()
        db = ms.tune_tir(f, self.target, work_dir, max_trials_global=trials, num_trials_per_iter=per_iter,
                         seed=seed, builder=builder, measure_callbacks=callbacks)
        wall = time.perf_counter() - t0
        sch = ms.tir_integration.compile_tir(db, f, self.target)
        if sch is None:
            raise RuntimeError(f"MetaSchedule found no valid schedule in {len(times)} trials")
        mod = self.tvm.compile(sch.mod, target=self.target).jit()
        return mod, times, wall

    def tensors(self, w, args):
        out_shape = reference_shape(w)
        ts = [self.tvm.runtime.tensor(a, self.dev) for a in args]
        return ts + [self.tvm.runtime.tensor(np.zeros(out_shape, np.float32), self.dev)]

    def timer(self, mod, repeat):
        return mod.time_evaluator("main", self.dev, number=1, repeat=repeat, min_repeat_ms=1)


def reference_shape(w):
    d = w["dims"]
    return {"matmul": lambda: (d["M"], d["N"]), "conv2d": lambda: (1, d["H"], d["W"], d["K"]),
            "depthwise_conv2d": lambda: (1, d["H"], d["W"], d["C"]),
            "softmax": lambda: (d["M"], d["N"]), "layernorm": lambda: (d["M"], d["N"])}[w["op"]]()


def _physical_cores():
    try:
        import psutil
        return psutil.cpu_count(logical=False) or 1
    except ImportError:
        return os.cpu_count() or 1


# --- atvoss. ---

def atvoss_tune(w, trials, seed, table):
    times = []

    def progress(p):
        m = p["measurement"]
        times.append(m.time_us * 1e-6 if m.ok else math.inf)

    t0 = time.perf_counter()
    r = atvoss.tune(w, "host", trials=trials, seed=seed, progress=progress, export=table)
    wall = time.perf_counter() - t0
    if r.best_schedule is None:
        raise RuntimeError(f"atvoss found no valid schedule in {r.trials} trials ({r.stop_reason})")
    return r, times, wall


def atvoss_check(w, table, args):
    """atvoss's winner run through atvoss.runtime on numpy's operands: (error, how checked)."""
    import atvoss.runtime as rt
    if w["op"] == "matmul":
        c, choice = rt.Runtime(table).matmul(args[0], args[1], return_choice=True)
    elif w["op"] == "conv2d":
        c, choice = rt.Runtime(table).conv2d(args[0], args[1], w["dims"]["stride"], w["dims"]["pad"],
                                             return_choice=True)
    else:
        return None, "runner"  # the runner checked every element against its float64 reference
    if choice.kind != "exact":
        raise RuntimeError(f"atvoss.runtime ran a {choice.kind} choice, not the tuned kernel: {choice.reason}")
    return c, "numpy"


def trial_to(times, target_s):
    for i, t in enumerate(times):
        if t <= target_s:
            return i + 1
    return None


def run_one(name, w, trials, seed, args_ns, tvm_side, tvm_error):
    row = {"workload": name, "json": w, "trials": trials, "ms_per_iter": getattr(args_ns, "ms_per_iter", 64)}
    data = inputs(w, seed)
    ref = reference(w, data)
    scratch = tempfile.mkdtemp(prefix=f"tvm-ms-{name}-{trials}-")
    try:
        # A fresh atvoss compile cache per run (the calibration copied in, so the target stays
        # the same): kernels compiled by earlier runs or other users must not shorten this tuning.
        cache = os.path.join(scratch, "xdg")
        os.makedirs(os.path.join(cache, "atvoss"))
        for f in glob.glob(os.path.join(_calibration_dir(), "host-*.json")):
            shutil.copy(f, os.path.join(cache, "atvoss"))
        old_xdg = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = cache
        try:
            table = os.path.join(scratch, "table.json")
            r, a_times, a_wall = atvoss_tune(w, trials, seed, table)
            row.update(atvoss_wall_s=a_wall, atvoss_trials=len(a_times), atvoss_schedule=dict(r.best_schedule))
            a_out, a_how = atvoss_check(w, table, data)
        finally:
            if old_xdg is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = old_xdg
        row["atvoss_check"] = a_how
        if a_out is not None:
            row["atvoss_rel_err"] = rel_error(a_out, ref)

        mod = None
        if tvm_side is None:
            row["tvm_error"] = tvm_error
        else:
            try:
                mod, t_times, t_wall = tvm_side.tune(w, trials, seed, os.path.join(scratch, "ms"),
                                                     getattr(args_ns, "ms_per_iter", 64))
                row.update(tvm_wall_s=t_wall, tvm_trials=len(t_times),
                           tvm_failed=sum(1 for t in t_times if not math.isfinite(t)))
                tensors = tvm_side.tensors(w, data)
                mod["main"](*tensors)
                t_out = tensors[-1].numpy()
                row["tvm_rel_err"] = rel_error(t_out, ref)
                if a_out is not None:
                    row["atvoss_vs_tvm_rel_err"] = rel_error(a_out, t_out.astype(np.float64))
            except Exception as e:  # reported in the table, never hidden
                row["tvm_error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
                mod = None

        # Interleaved final timing, pinned to one CPU (the atvoss runner inherits the set).
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {max(cpus)})
        try:
            a_win, t_win = [], []
            timer = tvm_side.timer(mod, args_ns.repeat) if mod is not None else None
            for _ in range(args_ns.rounds):
                m = atvoss.measure(w, "host", [r.best_schedule], repeat=args_ns.repeat, seed=seed)[0]
                if not m.ok:
                    raise RuntimeError(f"atvoss's winner measured {m.status}: {m.message}")
                a_win += [x * 1e-6 for x in m.repeats]
                if timer is not None:
                    mod["main"](*tensors)  # untimed: warm caches after the other kernel ran
                    t_win += list(timer(*tensors).results)
        finally:
            os.sched_setaffinity(0, cpus)
        row["atvoss_s"] = statistics.median(a_win)
        row["atvoss_windows"] = len(a_win)
        if t_win:
            row["tvm_s"] = statistics.median(t_win)
            row["tvm_windows"] = len(t_win)
            row["speed_ratio"] = row["tvm_s"] / row["atvoss_s"]
            best = min(min(a_times), min(t_times))
            row["best_recorded_s"] = best
            row["atvoss_recorded_s"], row["tvm_recorded_s"] = min(a_times), min(t_times)
            row["atvoss_times_s"], row["tvm_times_s"] = a_times, t_times  # each tool's trials in order
            row["atvoss_trial_95"] = trial_to(a_times, best / 0.95)
            row["tvm_trial_95"] = trial_to(t_times, best / 0.95)
        ok_err = [row.get(k) for k in ("atvoss_rel_err", "tvm_rel_err") if row.get(k) is not None]
        row["numerics_ok"] = all(e <= TOLERANCE for e in ok_err)
        return row
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _calibration_dir():
    x = os.environ.get("XDG_CACHE_HOME")
    return os.path.join(x, "atvoss") if x else os.path.expanduser("~/.cache/atvoss")


def fmt_row(r):
    def us(k):
        return f"{r[k] * 1e6:10.1f}" if k in r else f"{'-':>10}"

    def tr(k):
        v = r.get(k)
        return f"{v:>5}" if v is not None else f"{'-':>5}"

    w = r["json"]
    gf = lambda k: f"{flops(w) / r[k] * 1e-9:6.1f}" if k in r else f"{'-':>6}"  # noqa: E731
    ratio = f"{r['speed_ratio']:5.2f}x" if "speed_ratio" in r else f"{'-':>6}"
    wall = lambda k: f"{r[k]:7.0f}" if k in r else f"{'-':>7}"  # noqa: E731
    err = max([r[k] for k in ("atvoss_rel_err", "tvm_rel_err") if k in r] or [float("nan")])
    line = (f"{r['workload']:<10} {r['trials']:>4} {us('atvoss_s')} {gf('atvoss_s')} {us('tvm_s')} {gf('tvm_s')} "
            f"{ratio} {us('atvoss_recorded_s')} {us('tvm_recorded_s')} {tr('atvoss_trial_95')} {tr('tvm_trial_95')} "
            f"{wall('atvoss_wall_s')} {wall('tvm_wall_s')} "
            f"{err:8.1e} {'ok' if r['numerics_ok'] else 'FAIL'}")
    if "tvm_error" in r:
        line += f"  TVM: {r['tvm_error']}"
    return line


HEADER = (f"{'workload':<10} {'tr':>4} {'atvoss us':>10} {'GF/s':>6} {'TVM us':>10} {'GF/s':>6} {'ratio':>6} "
          f"{'a rec us':>10} {'t rec us':>10} {'a95':>5} {'t95':>5} {'a wall':>7} {'t wall':>7} {'max err':>8} num")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workloads", default="all", help="comma-separated names, or 'all': " + ",".join(WORKLOADS))
    p.add_argument("--budgets", default="16,64,256", help="measured trials per tool, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds of the two winners")
    p.add_argument("--repeat", type=int, default=5, help="timed windows per round and kernel")
    p.add_argument("--seed", type=int, default=1, help="seeds both tuners and the operands")
    p.add_argument("--ms-per-iter", type=int, default=64,
                   help="MetaSchedule's num_trials_per_iter (64, its default: a budget of 64 or less is one "
                        "batch chosen before its cost model has seen a measurement)")
    p.add_argument("--json", help="append each result row to this JSON-lines file")
    a = p.parse_args()
    names = MAIN if a.workloads == "all" else a.workloads.split(",")
    for n in names:
        if n not in WORKLOADS:
            p.error(f"unknown workload {n!r}; known: {', '.join(WORKLOADS)}")
    budgets = [int(b) for b in a.budgets.split(",")]

    tvm_side, tvm_error = None, None
    try:
        tvm_side = Tvm()
        print(f"TVM {tvm_side.version}, target {tvm_side.target}")
    except Exception as e:  # the table says so on every row
        tvm_error = f"TVM unusable: {type(e).__name__}: {e}"
        print(tvm_error)
    print(f"atvoss {getattr(atvoss, '__version__', '?')}, target host; one thread each; seed {a.seed}; "
          f"final timing: {a.rounds} interleaved rounds x {a.repeat} windows, median; "
          f"MetaSchedule num_trials_per_iter {a.ms_per_iter}")
    print("ratio = TVM time / atvoss time (above 1: atvoss faster); a rec/t rec = the best time each tool "
          "recorded while tuning; a95/t95 = trial at which atvoss/TVM first recorded a time within 95 % of the "
          "best either recorded; wall = tuning seconds")
    print(HEADER, flush=True)
    rows = []
    for n in names:
        for b in budgets:
            try:
                r = run_one(n, WORKLOADS[n], b, a.seed, a, tvm_side, tvm_error)
            except Exception as e:
                traceback.print_exc()
                r = {"workload": n, "json": WORKLOADS[n], "trials": b, "numerics_ok": False,
                     "tvm_error": f"run failed: {type(e).__name__}: {e}"}
            rows.append(r)
            print(fmt_row(r), flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    # The table again in one block: MetaSchedule's log lines interleave with the rows above.
    print("\n" + HEADER)
    for r in rows:
        print(fmt_row(r))
    at64 = [r for r in rows if r["trials"] == 64 and "speed_ratio" in r]
    if at64:
        met = sum(1 for r in at64 if r["speed_ratio"] >= 1.2)
        fewer = sum(1 for r in at64 if (r.get("atvoss_trial_95") or 10**9) < (r.get("tvm_trial_95") or 10**9))
        print(f"at 64 trials: atvoss >= 1.2x TVM on {met} of {len(at64)} workloads; "
              f"reached 95 % in fewer trials on {fewer} of {len(at64)}")
    return 0 if all(r["numerics_ok"] and "tvm_error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
