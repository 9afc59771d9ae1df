#!/usr/bin/env python3
"""Round 8's look at a recorded space's landscape (search/README.md, round 8).

  landscape.py basins SPACE            where a greedy one-knob ascent ends, from every start
  landscape.py ils SPACE [--seeds 40]  iterated local search (random start, first-improvement
                                       one-value steps, restart at a local optimum), 100 evaluations
  landscape.py gp SPACE [--seeds 10] [--xi 0.01] [--init 8]
                                       Gaussian process (Matern 5/2, lengthscale by marginal
                                       likelihood), expected improvement over every unmeasured point

SPACE is a Kernel Tuner cache file (data/recorded-spaces/*.json.gz). Fraction of optimum =
optimum / best found; failed configurations count as evaluations. Prototypes for analysis,
not strategies of the library. Needs python3-numpy (and python3-scipy for gp):
bench/peer/setup.sh installs both.
"""
import argparse, collections, gzip, json, math

import numpy as np


def load(path):
    d = json.load(gzip.open(path))
    tp, keys = d["tune_params"], d["tune_params_keys"]
    var = [k for k in keys if len(tp[k]) > 1]
    idx, times = [], []
    for v in d["cache"].values():
        idx.append(tuple(tp[k].index(v[k]) for k in var))
        t = v["time"]
        times.append(float("inf") if isinstance(t, str) else t)
    sizes = [len(tp[k]) for k in var]
    return var, sizes, idx, np.array(times)


def basins(args):
    var, sizes, idx, T = load(args.space)
    at = {p: i for i, p in enumerate(idx)}
    frac = T.min() / T
    def neighbours(p, wide):
        for d, n in enumerate(sizes):
            for j in (range(n) if wide else (p[d] - 1, p[d] + 1)):
                q = p[:d] + (j,) + p[d + 1:]
                if 0 <= j < n and j != p[d] and q in at:
                    yield at[q]
    for wide in (False, True):
        ends = collections.Counter()
        for i in range(len(idx)):
            while True:
                j = max(neighbours(idx[i], wide), key=lambda k: frac[k], default=None)
                if j is None or frac[j] <= frac[i]:
                    break
                i = j
            ends[frac[i] >= 0.95] += 1
        share = ends[True] / len(idx)
        print(f"{'any-value' if wide else 'one-value'} moves: ascents ending within 5% of the optimum: {share:.3f}")


def ils_run(sizes, idx, T, seed, budget):
    rng = np.random.default_rng(seed)
    at = {p: i for i, p in enumerate(idx)}
    opt, best, seen, curve = T.min(), np.inf, set(), []
    def evaluate(i):
        nonlocal best
        if i not in seen:
            seen.add(i)
            best = min(best, T[i])
            curve.append(opt / best if np.isfinite(best) else 0)
        return T[i]
    while len(curve) < budget:
        cur = int(rng.integers(len(idx)))
        if cur in seen:
            continue
        evaluate(cur)
        improved = True
        while improved and len(curve) < budget:
            improved = False
            p = idx[cur]
            nb = [at[q] for d in range(len(p)) for q in (p[:d] + (p[d] - 1,) + p[d + 1:], p[:d] + (p[d] + 1,) + p[d + 1:])
                  if q in at and at[q] not in seen]
            rng.shuffle(nb)
            for j in nb:
                if len(curve) >= budget:
                    break
                if evaluate(j) < T[cur]:
                    cur, improved = j, True
                    break
    return curve[:budget]


def matern(a, b, ls):
    r = math.sqrt(5) * np.sqrt(np.maximum((((a[:, None, :] - b[None, :, :]) / ls) ** 2).sum(-1), 0))
    return (1 + r + r * r / 3) * np.exp(-r)


def gp_run(X, T, seed, budget, xi, init):
    from scipy.linalg import cho_factor, cho_solve
    from scipy.stats import norm
    rng = np.random.default_rng(seed)
    opt, best, measured, curve = T.min(), np.inf, [], []
    free = np.ones(len(X), bool)
    order = rng.permutation(len(X))
    for it in range(budget):
        if it < init:
            i = order[it]
        else:
            t = T[measured]
            ok = np.isfinite(t)
            ly = np.log(np.where(ok, t, 1))
            ly = np.where(ok, ly, (ly[ok].max() if ok.any() else 0) + 0.5)  # failures: slower than any
            y = (ly - ly.mean()) / (ly.std() + 1e-9)
            fit = None
            for ls in (0.05, 0.1, 0.2, 0.3, 0.5, 0.8):
                c = cho_factor(matern(X[measured], X[measured], ls) + 1e-3 * np.eye(len(measured)), lower=True)
                a = cho_solve(c, y)
                ll = -0.5 * y @ a - np.log(np.diag(c[0])).sum()
                if fit is None or ll > fit[0]:
                    fit = (ll, ls, c, a)
            _, ls, c, a = fit
            cand = np.where(free)[0]
            ks = matern(X[cand], X[measured], ls)
            mean = ks @ a
            sd = np.sqrt(np.maximum(1 - (ks * cho_solve(c, ks.T).T).sum(1), 1e-12))
            z = (y.min() - mean - xi) / sd
            i = cand[np.argmax((y.min() - mean - xi) * norm.cdf(z) + sd * norm.pdf(z))]
        free[i] = False
        measured.append(i)
        best = min(best, T[i])
        curve.append(opt / best if np.isfinite(best) else 0)
    return curve


def report(name, curves):
    at = "  ".join(f"@{k} {np.mean([c[k - 1] for c in curves]):.3f}" for k in (25, 50, 100))
    hits = sum(c[99] >= 0.95 for c in curves)
    print(f"{name}: {at}  within 5% of the optimum at 100: {hits}/{len(curves)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["basins", "ils", "gp"])
    ap.add_argument("space")
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--xi", type=float, default=0.01)
    ap.add_argument("--init", type=int, default=8)
    args = ap.parse_args()
    if args.mode == "basins":
        basins(args)
    elif args.mode == "ils":
        _, sizes, idx, T = load(args.space)
        report("iterated local search", [ils_run(sizes, idx, T, s, 100) for s in range(args.seeds or 40)])
    else:
        _, sizes, idx, T = load(args.space)
        X = np.array([[v / (n - 1) for v, n in zip(p, sizes)] for p in idx])
        report(f"GP-EI (xi {args.xi}, {args.init} random first)",
               [gp_run(X, T, 1000 + s, 100, args.xi, args.init) for s in range(args.seeds or 10)])


if __name__ == "__main__":
    main()
