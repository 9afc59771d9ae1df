"""atvoss's search as a Kernel Tuner strategy: a Kernel Tuner user keeps their script and
switches the search.

    import atvoss.kernel_tuner
    kernel_tuner.tune_kernel(name, source, size, args, tune_params, restrictions=...,
                             strategy=atvoss.kernel_tuner,
                             strategy_options={"max_fevals": 100, "seed": 1})

Kernel Tuner 1.x takes, as ``strategy``, a name of its own strategies or any object with a
callable ``tune(searchspace, runner, tuning_options)`` (kernel_tuner/interface.py): this
module is such an object. Kernel Tuner keeps compiling, running, verifying, caching and
counting; atvoss only chooses the configurations, among the points of Kernel Tuner's
search space (its restrictions applied), through ``atvoss.Optimizer``, and gets each result
through Kernel Tuner's own cost function, so the budget (``max_fevals``: unique
configurations evaluated; ``time_limit``) is Kernel Tuner's.

strategy_options, besides Kernel Tuner's ``max_fevals``, ``time_limit`` and
``searchspace_construction_options``:

- ``seed``: the atvoss strategy's seed (default: tune_kernel's ``seed``, else 0);
- ``strategy``: an atvoss strategy name (default ``model-guided``, atvoss's default);
- ``strategy_config``: that strategy's settings (docs/job-spec.md);
- ``batch``: configurations asked at once (default 1: every result informs the next ask);
- ``prior_caches``: Kernel Tuner cache files (.json or .json.gz) of other kernels or devices,
  whose results the search learns from by parameter name once its own can judge them
  (``Optimizer``'s ``priors``; docs/decisions/search-space-priors.md).

Kernel Tuner is imported here only (``import atvoss`` never needs it).
"""
import gzip
import json
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

try:
    from kernel_tuner.strategies.common import CostFunc
except ImportError as e:  # said plainly: atvoss itself never needs the peer
    raise ImportError("atvoss.kernel_tuner needs Kernel Tuner (pip install kernel-tuner; the tested "
                      "version is pinned in scripts/peers-requirements.txt)") from e
from kernel_tuner.util import StopCriterionReached

from .optimizer import Optimizer
from .tuning import _check_int

# Options Kernel Tuner itself reads from strategy_options (interface.py, strategies/common.py).
_KERNEL_TUNER_OPTIONS = ("max_fevals", "time_limit", "searchspace_construction_options")
_OWN_OPTIONS = ("seed", "strategy", "strategy_config", "batch", "prior_caches")


def _options(tuning_options: Mapping[str, Any]) -> Dict[str, Any]:
    """This strategy's options with their defaults; ValueError naming an option it does not take."""
    given = dict(tuning_options.get("strategy_options") or {})
    unknown = sorted(k for k in given if k not in _KERNEL_TUNER_OPTIONS + _OWN_OPTIONS)
    if unknown:
        raise ValueError(f"atvoss.kernel_tuner: unknown strategy_options {', '.join(map(repr, unknown))} "
                         f"(it takes {', '.join(_KERNEL_TUNER_OPTIONS + _OWN_OPTIONS)})")
    seed = given.get("seed", tuning_options.get("seed"))
    opts = {"seed": 0 if seed is None else seed, "strategy": given.get("strategy", "model-guided"),
            "strategy_config": given.get("strategy_config"), "batch": given.get("batch", 1),
            "prior_caches": given.get("prior_caches", ())}
    _check_int(opts["seed"], "strategy_options['seed']", 0)
    _check_int(opts["batch"], "strategy_options['batch']", 1)
    return opts


def _objective(tuning_options: Mapping[str, Any]) -> Tuple[str, str]:
    """The objective's name and atvoss's direction; ValueError for several objectives."""
    names = tuning_options["objective"]
    higher = tuning_options["objective_higher_is_better"]
    names = [names] if isinstance(names, str) else list(names)
    higher = [higher] if isinstance(higher, bool) else list(higher)
    if len(names) != 1:
        raise ValueError(f"atvoss.kernel_tuner: one objective only, not {len(names)} ({', '.join(names)})")
    return names[0], "maximize" if higher[0] else "minimize"


def _value(cost: float, direction: str) -> Optional[float]:
    """The objective value behind a cost of Kernel Tuner's cost function (the value, negated
    when higher is better), or None for a configuration that failed (compile, run or
    verification), which Kernel Tuner costs as the largest float."""
    if cost >= sys.float_info.max:
        return None
    return -cost if direction == "maximize" else cost


def _prior_from_cache(path: Any, objective: str, where: str) -> Dict[str, Any]:
    """A Kernel Tuner cache file as an Optimizer prior: every configuration with its
    `objective` value (None where it failed)."""
    try:
        name = os.fspath(path)
        if name.endswith(".gz"):
            with gzip.open(name, "rt") as z:
                doc = json.load(z)
        else:
            with open(name) as f:
                doc = json.load(f)
        keys, cache = doc["tune_params_keys"], doc["cache"]
        results = []
        for entry in cache.values():
            value = entry.get(objective)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            results.append(({k: entry[k] for k in keys}, value if ok else None))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"atvoss.kernel_tuner: {where}: not a readable Kernel Tuner cache ({e})") from e
    return {"name": os.path.basename(os.fspath(path)), "results": results}


def make_optimizer(searchspace: Any, tuning_options: Mapping[str, Any]) -> Optimizer:
    """The atvoss.Optimizer over Kernel Tuner's search space: its parameters and values, and
    exactly its points (restrictions applied) as the valid ones."""
    opts = _options(tuning_options)
    objective, direction = _objective(tuning_options)
    names = list(searchspace.tune_params)
    valid = set(searchspace.list)
    caches = opts["prior_caches"]
    if isinstance(caches, (str, bytes)) or not isinstance(caches, (list, tuple)):
        raise ValueError("atvoss.kernel_tuner: strategy_options['prior_caches'] must be a list of cache files")
    priors = [_prior_from_cache(p, objective, f"strategy_options['prior_caches'][{i}]") for i, p in enumerate(caches)]
    return Optimizer({n: list(searchspace.tune_params[n]) for n in names},
                     constraints=[lambda c: tuple(c[n] for n in names) in valid], direction=direction,
                     strategy=opts["strategy"], seed=opts["seed"], name="kernel_tuner",
                     strategy_config=opts["strategy_config"], priors=priors)


def tune(searchspace: Any, runner: Any, tuning_options: Any) -> List[Dict[str, Any]]:
    """Kernel Tuner's strategy entry point: asks atvoss for configurations, evaluates them with
    Kernel Tuner's cost function (which checks the budget, caches and counts) until its budget
    is spent or the space is exhausted, and returns Kernel Tuner's results (one dict per
    evaluation, in order)."""
    _, direction = _objective(tuning_options)
    batch = _options(tuning_options)["batch"]
    opt = make_optimizer(searchspace, tuning_options)
    names = list(searchspace.tune_params)
    cost_func = CostFunc(searchspace, tuning_options, runner)
    try:
        while True:
            configs = opt.ask(batch)
            if not configs:
                break  # every point of the space was evaluated
            costs = cost_func.eval_all([[c[n] for n in names] for c in configs])
            opt.tell(configs, [_value(c, direction) for c in costs])
    except StopCriterionReached as e:  # Kernel Tuner's budget: the normal end
        if tuning_options.get("verbose"):
            print(e)
    finally:
        opt.close()
    return list(cost_func.results)


__all__ = ["make_optimizer", "tune"]
