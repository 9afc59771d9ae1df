#!/usr/bin/env python3
"""Optuna on the recorded Kernel Tuner spaces, with the accounting of bench_recorded_spaces.

Kept for the proposal time of search/README.md (--time-at). The quality comparison with
Optuna (and Kernel Tuner) is bench/peers_recorded_spaces.py, which runs Optuna through Kernel
Tuner's own accounting; this script's quality mode is the protocol of the earlier hand-run
table (git show fc23036:search/README.md).

Same spaces (data/recorded-spaces/*.json.gz), seeds and budgets as the C++ benchmark, and
Kernel Tuner's accounting: a configuration absent from the table broke the kernel's
restrictions, so it is told to the sampler as a penalty but is NOT an evaluation; a failed
configuration (compile/runtime failure) IS an evaluation (also told as a penalty); a repeat
of an already measured configuration is answered from the cache (told its value again) and is
not an evaluation, as Kernel Tuner counts unique evaluations.
Every run reaches its budget: TPE re-proposes measured configurations more and more as it
converges, so after --stuck consecutive asks that brought nothing new (repeats or absent
configurations) the wrapper evaluates a uniformly random unmeasured configuration of the table
instead (told to the sampler as a trial; it counts as an evaluation). This duplicate-avoiding
wrapper only helps Optuna (a random escape from a converged model); the CSV's `escapes` column
counts them per run.
Penalty: 10x the worst time seen so far (the protocol of data/recorded-spaces/README.md).
Each parameter is an ordinal integer index into its value list, as atvoss's knobs are.

Writes one CSV row per (space, sampler, seed): fraction of optimum (optimum / best found)
after each budget, and the mean wall time per proposal (ask) in ms.
With --time-at N it instead times proposals after N observed trials (random history).

Usage: optuna_peer.py --spaces a,b --seeds 5 --seed-base 1 --samplers tpe,random --csv out.csv
Run it with the peers' environment (build/peers/bin/python; scripts/setup.sh install_peers).
"""
import argparse
import gzip
import json
import math
import os
import random
import sys
import time

import optuna

BUDGETS = [10, 25, 50, 100, 200]


def load_space(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    keys = doc["tune_params_keys"]
    domains = []
    for k in keys:
        vals = doc["tune_params"][k]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            vals = sorted(vals)  # atvoss sorts integer domains (neighbourhoods)
        domains.append(vals)
    table = {}
    for entry in doc["cache"].values():
        idx = tuple(domains[i].index(entry[k]) for i, k in enumerate(keys))
        t = entry["time"]
        table[idx] = float(t) if isinstance(t, (int, float)) else None  # None: failed
    optimum = min(v for v in table.values() if v is not None)
    return keys, domains, table, optimum


def make_sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "tpe-mv":  # Optuna's recommended setting for correlated parameters
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name.startswith("tpe-mv-s"):  # multivariate, n_startup_trials set (e.g. tpe-mv-s20)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=int(name[len("tpe-mv-s"):]))
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    raise SystemExit("unknown sampler " + name)


def run_one(space, sampler_name, seed, budget, stuck_limit):
    keys, domains, table, optimum = space
    study = optuna.create_study(sampler=make_sampler(sampler_name, seed), direction="minimize")
    dists = {k: optuna.distributions.IntDistribution(0, len(domains[i]) - 1) for i, k in enumerate(keys)}
    escape_rng = random.Random(seed)
    unmeasured = sorted(table)
    escape_rng.shuffle(unmeasured)  # popped from the end: uniform random order, seeded
    measured = {}
    curve, best, worst = [], math.inf, 0.0
    ask_s, asks, stuck, escapes = 0.0, 0, 0, 0
    while len(curve) < budget:
        escape = stuck >= stuck_limit
        if escape:  # nothing new for stuck_limit asks: a random unmeasured configuration
            while unmeasured[-1] in measured:
                unmeasured.pop()
            idx, trial = unmeasured.pop(), None
            escapes += 1
        else:
            t0 = time.perf_counter()
            trial = study.ask()
            idx = tuple(trial.suggest_int(k, 0, len(domains[i]) - 1) for i, k in enumerate(keys))
            ask_s += time.perf_counter() - t0
            asks += 1
        penalty = 10 * worst if worst > 0 else 1e9
        if idx in measured or idx not in table:
            # a repeat is answered from the cache; absent is invalid: neither is an evaluation
            study.tell(trial, measured.get(idx, penalty))
            stuck += 1
            continue
        stuck = 0
        t = table[idx]
        value = penalty if t is None else t
        if t is not None:
            best = min(best, t)
            worst = max(worst, t)
        measured[idx] = value
        if trial is None:
            study.add_trial(optuna.trial.create_trial(params=dict(zip(keys, idx)), distributions=dists, value=value))
        else:
            study.tell(trial, value)
        curve.append(optimum / best if best < math.inf else 0.0)
    return curve, 1000 * ask_s / max(asks, 1), asks, escapes


def at(curve, b):
    return curve[min(len(curve), b) - 1] if curve else 0.0


def time_at(space, sampler_name, n, repeats=10):
    """Mean ms per ask() after n observed trials (random valid configurations)."""
    keys, domains, table, _ = space
    study = optuna.create_study(sampler=make_sampler(sampler_name, 1), direction="minimize")
    dists = {k: optuna.distributions.IntDistribution(0, len(domains[i]) - 1) for i, k in enumerate(keys)}
    rng = random.Random(1)
    points = rng.sample(sorted(table), min(n, len(table)))
    for idx in points:
        value = table[idx] if table[idx] is not None else 1e9
        study.add_trial(optuna.trial.create_trial(params=dict(zip(keys, idx)), distributions=dists, value=value))
    t0 = time.perf_counter()
    for _ in range(repeats):
        trial = study.ask()
        for i, k in enumerate(keys):
            trial.suggest_int(k, 0, len(domains[i]) - 1)
        study.tell(trial, 1e9)
    return 1000 * (time.perf_counter() - t0) / repeats


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "data", "recorded-spaces"))
    ap.add_argument("--spaces", required=True)
    ap.add_argument("--samplers", default="tpe,random")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--seed-base", type=int, default=1)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--time-at", type=int, default=0)
    ap.add_argument("--stuck", type=int, default=3,
                    help="consecutive asks bringing nothing new (repeat or absent) before a random unmeasured configuration is evaluated")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with open(args.csv, "w") as out:
        if args.time_at:
            out.write("space,strategy,observed,ms_per_proposal\n")
        else:
            out.write("space,strategy,seed," + ",".join("frac_at_%d" % b for b in BUDGETS) + ",ms_per_proposal,asks,escapes\n")
        for name in args.spaces.split(","):
            space = load_space(os.path.join(args.data, name + ".json.gz"))
            for s in args.samplers.split(","):
                if args.time_at:
                    ms = time_at(space, s, args.time_at)
                    out.write("%s,optuna-%s,%d,%.2f\n" % (name, s, args.time_at, ms))
                    out.flush()
                    continue
                for seed in range(args.seed_base, args.seed_base + args.seeds):
                    curve, ms, asks, escapes = run_one(space, s, seed, args.budget, args.stuck)
                    out.write("%s,optuna-%s,%d,%s,%.2f,%d,%d\n" % (name, s, seed, ",".join("%.4f" % at(curve, b) for b in BUDGETS),
                                                                   ms, asks, escapes))
                    out.flush()
                    print(name, s, seed, "%.3f" % at(curve, 100), "%.1f ms" % ms, "%d escapes" % escapes, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
