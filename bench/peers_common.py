"""What the peer benchmarks share. This CPU's LLVM -mcpu for TVM (bench/tvm_metaschedule.py,
bench/tvm_model.py). For Kernel Tuner and Optuna (bench/peers_recorded_spaces.py,
bench/peers_host_matmul.py): every strategy searches through ``kernel_tuner.tune_kernel`` on
the same cache file in simulation mode, so one runner, one cost function and one accounting
serve all of them (Kernel Tuner's: a configuration outside the restrictions is not an
evaluation, a failed one is, a repeat is served from the cache and is not).

- Kernel Tuner's own strategies by name, seeded through numpy's and Python's global RNGs
  (what they draw from; tune_kernel's ``seed`` reaches only pymoo's);
- atvoss's default strategy through its Kernel Tuner adapter (``atvoss.kernel_tuner``);
- Optuna's TPE and CMA-ES, live, through a small Kernel Tuner strategy here (OptunaStrategy).

Run with the peers' environment: ``PYTHONPATH=build/python build/peers/bin/python ...``.
"""
import gzip
import json
import math
import os
import random
import statistics
import sys
import warnings

import numpy as np

BUDGETS = (25, 50, 100)
KT_STRATEGIES = ("random_sample", "genetic_algorithm", "dual_annealing", "basinhopping", "bayes_opt")
ALL_STRATEGIES = ("atvoss",) + KT_STRATEGIES + ("optuna-tpe", "optuna-cmaes")


def host_mcpu():
    """LLVM's -mcpu for this x86-64 CPU from /proc/cpuinfo: the vendor and the widest vector
    extension are what change MetaSchedule's code (Zen 4 is the first AMD core with AVX-512)."""
    flags, vendor_amd = set(), False
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("vendor_id"):
                vendor_amd = "AuthenticAMD" in line
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if "avx512f" in flags:
        return "znver4" if vendor_amd else "skylake-avx512"
    if "avx2" in flags:
        return "znver3" if vendor_amd else "haswell"
    return "x86-64"


def peer_versions():
    """name -> version of each peer, or the import error (a benchmark reports, never hides, a
    peer that does not import)."""
    out = {}
    for name in ("kernel_tuner", "optuna", "cmaes", "atvoss"):
        try:
            module = __import__(name)
            out[name] = getattr(module, "__version__", "?")
        except Exception as e:  # reported in the table's header, the peer's rows left out
            out[name] = f"FAILED TO IMPORT: {type(e).__name__}: {e}"
    return out


def load_cache(path):
    """A Kernel Tuner cache file (.json or .json.gz) as a dict."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def write_plain_cache(doc, directory):
    """The cache as the plain .json Kernel Tuner's simulation mode reads; returns its path."""
    path = os.path.join(directory, doc["kernel_name"] + ".json")  # directory: one cache per caller
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def optimum_of(doc):
    """The best time over the cache's valid entries."""
    times = [e["time"] for e in doc["cache"].values() if isinstance(e["time"], (int, float))]
    return min(times)


def curve(results, names, optimum, budgets=BUDGETS):
    """Fraction of the optimum reached (optimum / best time found after b unique evaluations)
    for each budget b, from tune_kernel's results in order; and the unique evaluations made.
    A run that stopped early (space or strategy exhausted) keeps its final best."""
    seen, best, at = set(), math.inf, {}
    for r in results:
        key = tuple(r[n] for n in names)
        if key in seen:
            continue
        seen.add(key)
        if "__error__" not in r and isinstance(r.get("time"), (int, float)):
            best = min(best, r["time"])
        for b in budgets:
            if len(seen) == b:
                at[b] = best
    return {b: optimum / at.get(b, best) for b in budgets}, len(seen)


class OptunaStrategy:
    """Optuna's sampler as a Kernel Tuner strategy (bench only): each parameter an ordinal
    integer index into its values; a configuration outside the restrictions, or a repeat, is
    told to the sampler (a penalty of 10x the worst time seen, or its cached value) and is not
    an evaluation; a failed one is an evaluation, told the penalty.
    TPE re-proposes measured points more and more as it converges: after ``stuck``
    consecutive asks that brought nothing new, a uniformly random unmeasured valid
    configuration (seeded) is evaluated and added to the study, so every run reaches its budget
    (the ``escapes`` counter says how often; it only helps Optuna)."""

    def __init__(self, sampler, seed, stuck=3):
        self.sampler, self.seed, self.stuck = sampler, seed, stuck
        self.escapes = 0

    def _make_sampler(self):
        import optuna
        if self.sampler == "tpe":
            return optuna.samplers.TPESampler(seed=self.seed)
        if self.sampler == "cmaes":
            return optuna.samplers.CmaEsSampler(seed=self.seed)
        raise ValueError(f"unknown Optuna sampler {self.sampler!r}")

    def tune(self, searchspace, runner, tuning_options):
        import optuna
        from kernel_tuner.strategies.common import CostFunc
        from kernel_tuner.util import StopCriterionReached
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        names = list(searchspace.tune_params)
        domains = [list(searchspace.tune_params[n]) for n in names]
        dists = {n: optuna.distributions.IntDistribution(0, len(d) - 1) for n, d in zip(names, domains)}
        study = optuna.create_study(sampler=self._make_sampler(), direction="minimize")
        cost_func = CostFunc(searchspace, tuning_options, runner)
        unmeasured = list(searchspace.list)
        random.Random(self.seed).shuffle(unmeasured)  # popped from the end: seeded uniform order
        measured, worst, stuck = {}, 0.0, 0
        try:
            while True:
                penalty = 10 * worst if worst > 0 else 1e9
                if stuck >= self.stuck:
                    while unmeasured and unmeasured[-1] in measured:
                        unmeasured.pop()
                    if not unmeasured:
                        break
                    config, trial = unmeasured.pop(), None
                    self.escapes += 1
                else:
                    trial = study.ask(dists)
                    config = tuple(d[trial.params[n]] for n, d in zip(names, domains))
                    if config in measured or not searchspace.is_param_config_valid(config):
                        study.tell(trial, measured.get(config, penalty))
                        stuck += 1
                        continue
                stuck = 0
                cost = cost_func.eval(list(config), check_restrictions=False)
                value = penalty if cost >= sys.float_info.max else cost
                if cost < sys.float_info.max:
                    worst = max(worst, cost)
                measured[config] = value
                if trial is None:
                    params = {n: d.index(v) for n, d, v in zip(names, domains, config)}
                    study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
                else:
                    study.tell(trial, value)
        except StopCriterionReached:
            pass
        return cost_func.results


def run_strategy(strategy, seed, cache_path, doc, restrictions, budget):
    """One search: tune_kernel in simulation mode on cache_path; returns (results, escapes)."""
    import kernel_tuner
    if strategy == "atvoss":
        import atvoss.kernel_tuner
    names = doc["tune_params_keys"]
    tune_params = {n: doc["tune_params"][n] for n in names}
    options = {"max_fevals": budget}
    escapes = None
    np.random.seed(seed)
    random.seed(seed)
    if strategy == "atvoss":
        target, options["seed"] = atvoss.kernel_tuner, seed
    elif strategy.startswith("optuna-"):
        target = OptunaStrategy(strategy[len("optuna-"):], seed)
    else:
        target = strategy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            doc["kernel_name"], "", doc.get("problem_size", 1), [], tune_params, restrictions=restrictions,
            cache=cache_path, simulation_mode=True, strategy=target, strategy_options=options,
            quiet=True, verbose=False)
    if isinstance(target, OptunaStrategy):
        escapes = target.escapes
    return results, escapes


def in_cache_restriction(doc):
    """The restriction whose valid points are exactly the cache's entries (the recorded
    spaces keep no restrictions of their own: a configuration absent from the cache broke
    the kernel's, data/recorded-spaces/README.md)."""
    names = doc["tune_params_keys"]
    keys = set(doc["cache"])

    def restriction(p):
        return ",".join(str(p[n]) for n in names) in keys
    return [restriction]


def print_table(rows, strategies, budgets=BUDGETS, title=""):
    """rows: (unit, strategy, seed, {budget: fraction}, unique evaluations). Prints the median
    (and the mean) over units and seeds per strategy per budget, and the mean number of unique
    evaluations a run made (below the largest budget: the strategy stopped on its own)."""
    print(title)
    header = "%-20s" % "strategy" + "".join("%9s" % ("@%d" % b) for b in budgets) + \
        "".join("%10s" % ("mean@%d" % b) for b in budgets) + "  runs  evals"
    print(header)
    for s in strategies:
        mine = [r for r in rows if r[1] == s]
        if not mine:
            print("%-20s  (no runs)" % s)
            continue
        med = [statistics.median(r[3][b] for r in mine) for b in budgets]
        mean = [statistics.fmean(r[3][b] for r in mine) for b in budgets]
        print("%-20s" % s + "".join("%9.3f" % m for m in med) + "".join("%10.3f" % m for m in mean) +
              "  %4d  %5.1f" % (len(mine), statistics.fmean(r[4] for r in mine)))
