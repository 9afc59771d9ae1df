"""Your own objective: ask/tell over a parameter space you define, as in Kernel Tuner and
Optuna, driven by any atvoss strategy (the model-guided default included).

    opt = atvoss.Optimizer({"block": [16, 32, 64, 128], "unroll": [1, 2, 4]},
                           constraints=["block * unroll <= 256"], seed=1)
    for _ in range(10):
        configs = opt.ask(4)
        opt.tell(configs, [time_my_kernel(**c) for c in configs])
    print(opt.best)

or ``atvoss.minimize(time_my_kernel, space, trials=40)``. A result is a time (any positive
number; lower is better), or an exception instance or None for a configuration that failed:
the strategy then learns to avoid it. The C++ side (python/src/bindings_optimizer.cpp) holds
the space and the strategy.

With ``db=`` every result is stored in a tuning database as the workload
``{"op": "objective", "name": name}`` on this machine's host target, and a later Optimizer
of the same name and space starts from the stored results (resume; `atvoss-db export` and
`query` see them). A parameter whose values are all ints is stored by value; any other is
stored by its index in the list, so keep that list's order between runs.
"""
import json
import os
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _atvoss
from .tuning import _check_int, _UINT64_MAX

Config = Dict[str, Any]
Constraint = Union[str, Callable[..., bool]]

# Constraints are checked on every point up front (as Kernel Tuner builds its space), so
# the strategies check validity without calling back into Python.
MAX_CONSTRAINED_POINTS = 1 << 22


@dataclass(frozen=True)
class OptimizerTrial:
    """One told result: the configuration, its value (a time, or None if it failed) and
    the error text of a failure."""

    config: Config
    value: Optional[float]
    error: str = ""
    resumed: bool = False  # read from the database, not told in this run


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _encode_knob(name: str, values: Sequence[Any]) -> Tuple[List[int], List[Any]]:
    """The integers atvoss searches for one parameter, and the user's value of each: the
    values themselves when all are ints (so the cost model sees their size), else indices."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise ValueError(f"space: parameter '{name}' must be a non-empty list of values")
    if len(set(map(repr, values))) != len(values):
        raise ValueError(f"space: parameter '{name}' lists a value twice")
    if all(_is_int(v) for v in values) and all(-(2**62) < v < 2**62 for v in values):
        ordered = sorted(values)
        return ordered, ordered
    return list(range(len(values))), list(values)


def _satisfies(constraints: Sequence[Constraint], config: Config) -> bool:
    for c in constraints:
        if isinstance(c, str):
            ok = eval(c, {"__builtins__": {}, "min": min, "max": max, "abs": abs}, dict(config))  # noqa: S307 (the user's own expression)
        else:
            ok = c(config)
        if not ok:
            return False
    return True


class Optimizer:
    """Ask/tell search over ``space`` (parameter name -> list of values, in your order).

    constraints: Kernel Tuner-style strings over the parameter names
    (``"block_x * block_y <= 1024"``) or callables taking the config dict; a point is valid
    when all hold. strategy: any name in atvoss.strategy_names() (default model-guided).
    strategy_config: the strategy's own settings (docs/job-spec.md, strategy_config), e.g.
    {"tpe_gamma": 0.25} for "tpe"; a key it does not take raises ValueError naming it. seed: the same seed, space and told results give the same asks. name: names the
    objective for the cost model. Not thread-safe: one thread asks and tells.
    """

    def __init__(self, space: Mapping[str, Sequence[Any]], *, constraints: Sequence[Constraint] = (),
                 strategy: str = "model-guided", seed: int = 0, name: str = "objective",
                 db: Optional[Union[str, "os.PathLike[str]"]] = None,
                 strategy_config: Optional[Mapping[str, Any]] = None) -> None:
        if not isinstance(space, Mapping) or not space:
            raise TypeError("space must be a non-empty dict of parameter name -> list of values")
        if isinstance(constraints, (str, bytes)) or callable(constraints):
            constraints = [constraints]  # one constraint given alone
        for c in constraints:
            if not (isinstance(c, str) or callable(c)):
                raise TypeError(f"constraints: each must be a string or a callable, not {type(c).__name__}")
        if not isinstance(strategy, str):
            raise TypeError("strategy must be a strategy name (str)")
        if strategy_config is not None and not isinstance(strategy_config, Mapping):
            raise TypeError("strategy_config must be a dict of the strategy's settings")
        _check_int(seed, "seed", 0, _UINT64_MAX)
        self._names = [str(k) for k in space]
        self._ints: Dict[str, List[int]] = {}
        self._values: Dict[str, List[Any]] = {}
        for name_ in self._names:
            self._ints[name_], self._values[name_] = _encode_knob(name_, space[name_])
        valid = self._valid_points(list(constraints)) if constraints else None
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a non-empty str")
        self._core = _atvoss.OptimizerCore(name, [(n, self._ints[n]) for n in self._names], valid, strategy, seed,
                                           "" if db is None else os.fspath(db), json.dumps(dict(strategy_config or {})))
        self._asked: Dict[Tuple[int, ...], Config] = {}
        self.trials: List[OptimizerTrial] = [
            OptimizerTrial(self._decode(values), time_us if status == "ok" else None, "" if status == "ok" else status,
                           resumed=True)
            for values, status, time_us in self._core.resumed]

    def _valid_points(self, constraints: List[Constraint]) -> List[int]:
        size = math.prod(len(self._ints[n]) for n in self._names)
        if size > MAX_CONSTRAINED_POINTS:
            raise ValueError(f"constraints: the space has {size} points, more than {MAX_CONSTRAINED_POINTS} "
                             "that can be checked up front; give fewer values")
        valid = []
        for flat, combo in enumerate(itertools.product(*(self._values[n] for n in self._names))):
            config = dict(zip(self._names, combo))
            try:
                if _satisfies(constraints, config):
                    valid.append(flat)
            except Exception as e:
                raise ValueError(f"constraints: evaluating them on {config} raised {type(e).__name__}: {e}") from None
        return valid

    def _identity(self, config: Mapping[str, Any]) -> str:
        """A configuration's identity, whatever the order of its keys ("" if one is missing)."""
        try:
            return repr([config[n] for n in self._names]) if len(config) == len(self._names) else ""
        except (KeyError, TypeError):
            return ""

    def _decode(self, ints: Mapping[str, int]) -> Config:
        return {n: self._values[n][self._ints[n].index(ints[n])] for n in self._names}

    def ask(self, n: int = 1) -> List[Config]:
        """Up to n new configurations to evaluate (fewer, or none, once the space is
        exhausted). Tell their results before asking again."""
        _check_int(n, "n", 1)
        asked = self._core.ask(n)
        self._asked = {tuple(a[k] for k in self._names): self._decode(a) for a in asked}
        return list(self._asked.values())

    def tell(self, configs: Sequence[Config], results: Sequence[Any]) -> None:
        """Results of the last ask, in the order of configs (any subset of it): a positive
        number (lower is better), or None or an exception instance for a failure."""
        if not self._asked:
            raise ValueError("tell: no pending ask; call ask() first")
        if len(configs) != len(results):
            raise ValueError(f"tell: {len(configs)} configs but {len(results)} results")
        by_config = {self._identity(c): key for key, c in self._asked.items()}
        told, trials, messages = [], [], []  # checked whole before anything is kept
        for config, result in zip(configs, results):
            key = by_config.get(self._identity(config))
            if key is None:
                raise ValueError(f"tell: {config} was not in the last ask")
            ints = dict(zip(self._names, key))
            if result is None or isinstance(result, BaseException):
                error = "" if result is None else f"{type(result).__name__}: {result}"
                told.append((ints, "runtime_error", 0.0))
                trials.append(OptimizerTrial(dict(config), None, error))
                messages.append(error or "failed")
                continue
            if isinstance(result, bool) or not isinstance(result, (int, float)) or not (0 < result < math.inf):
                raise ValueError(f"tell: the result for {config} must be a positive finite number, "
                                 f"None or an exception, got {result!r}")
            told.append((ints, "ok", float(result)))
            trials.append(OptimizerTrial(dict(config), float(result)))
            messages.append("")
        self._core.tell(told, messages)
        self.trials.extend(trials)
        self._asked = {}

    @property
    def best(self) -> Optional[OptimizerTrial]:
        """The trial with the lowest value so far (None before any succeeded)."""
        ok = [t for t in self.trials if t.value is not None]
        return min(ok, key=lambda t: t.value) if ok else None  # type: ignore[arg-type, return-value]

    @property
    def size(self) -> int:
        """Points in the space, valid or not."""
        return int(self._core.size)


def minimize(objective: Callable[..., float], space: Mapping[str, Sequence[Any]], trials: int, *,
             constraints: Sequence[Constraint] = (), strategy: str = "model-guided", seed: int = 0,
             batch: int = 4, name: str = "objective",
             db: Optional[Union[str, "os.PathLike[str]"]] = None,
             strategy_config: Optional[Mapping[str, Any]] = None) -> Optimizer:
    """Evaluates objective(**config) on configurations chosen by the strategy until
    `trials` results are known (those stored in db count, so a rerun resumes) and returns
    the Optimizer (``.best``, ``.trials``). An exception raised by the objective marks that
    configuration failed; KeyboardInterrupt stops the search, keeping what was told."""
    if not callable(objective):
        raise TypeError("objective must be callable")
    _check_int(trials, "trials", 1)
    _check_int(batch, "batch", 1)
    opt = Optimizer(space, constraints=constraints, strategy=strategy, seed=seed, name=name, db=db,
                    strategy_config=strategy_config)
    while len(opt.trials) < trials:
        configs = opt.ask(min(batch, trials - len(opt.trials)))
        if not configs:
            break  # every valid point was evaluated
        results: List[Any] = []
        for c in configs:
            try:
                results.append(objective(**c))
            except Exception as e:  # the objective's own failure: that point is bad
                results.append(e)
        opt.tell(configs, results)
    return opt
