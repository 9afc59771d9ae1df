"""Your own objective: ask/tell over a parameter space you define, as in Kernel Tuner and
Optuna, driven by any atvoss strategy (the model-guided default included).

    opt = atvoss.Optimizer({"block": [16, 32, 64, 128], "unroll": [1, 2, 4]},
                           constraints=["block * unroll <= 256"], seed=1)
    for _ in range(10):
        configs = opt.ask(4)
        opt.tell(configs, [time_my_kernel(**c) for c in configs])
    print(opt.best)

or ``atvoss.minimize(time_my_kernel, space, trials=40)`` (``atvoss.maximize`` for a value
where higher is better, such as GFLOP/s). A result is any finite real number (Python or
numpy), or an exception instance or None for a configuration that failed: the strategy then
learns to avoid it. The C++ side (python/src/bindings_optimizer.cpp) holds the space and the
strategy; docs/python.md ("Your own objective") says how values, failures, resume and
parallel workers behave, and why.

With ``db=`` every result is stored in a tuning database (SQLite file or PostgreSQL URL) as
the workload ``{"op": "objective", "name": name}`` on this machine's host target, and the
study's encoding of the space as the job ``objective:<name>``. An Optimizer of the same name
resumes from the stored results; a space that would leave stored results out is refused
unless ``on_space_change="keep"``. Optimizers in several threads or processes that share
one database measure each point once (their asks are claimed in the database).
"""
import json
import logging
import math
import numbers
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Type, Union

from . import _atvoss
from . import profiler as _profiling
from .constraints import Constraint, valid_points
from .tuning import Measurement, _check_int, _UINT64_MAX
from .vocabulary import Schedule, Workload

Config = Dict[str, Any]
Space = Mapping[str, Any]  # parameter name -> a list, tuple or numpy array of its values
PathLike = Union[str, "os.PathLike[str]"]

_log = logging.getLogger("atvoss")

DIRECTIONS = ("minimize", "maximize")

# Costs handed to the strategies are positive (their cost model learns best/cost, as for
# kernel times). A value v maps to h(v) when minimising and 1/h(v) when maximising, where
# h(v) = v for v >= EPS and EPS^2 / (2 EPS - v) below: order-preserving, continuous with a
# continuous slope, the identity on every positive time, and a GFLOP/s maximised keeps its
# ratios. docs/decisions/objective-values.md.
EPS = 1e-9


def _h(v: float) -> float:
    return v if v >= EPS else EPS * EPS / (2 * EPS - v)


def _h_inverse(c: float) -> float:
    return c if c >= EPS else 2 * EPS - EPS * EPS / c


def cost_of(value: float, direction: str) -> float:
    """The positive cost the strategies see for an objective value."""
    c = _h(value) if direction == "minimize" else 1.0 / _h(value)
    if not (0 < c < math.inf):
        raise ValueError(f"the value {value!r} is outside the range atvoss can order ({direction})")
    return c


def value_of(cost: float, direction: str) -> float:
    """The objective value a stored cost stands for (inverse of cost_of)."""
    return _h_inverse(cost) if direction == "minimize" else _h_inverse(1.0 / cost)


@dataclass(frozen=True)
class OptimizerTrial:
    """One result: the configuration, its objective value (None if it failed) and the error
    text of a failure. resumed: read from the database (an earlier run, or another worker
    sharing it), not told to this Optimizer."""

    config: Config
    value: Optional[float]
    error: str = ""
    resumed: bool = False


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _value_list(name: str, values: Any) -> List[Any]:
    """A parameter's values as a Python list: a list, tuple, range or numpy array (numpy
    scalars become Python numbers, so configs compare and print as the user expects)."""
    if hasattr(values, "tolist") and not isinstance(values, (str, bytes)):
        values = values.tolist()
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (Sequence, range)) or len(values) == 0:
        raise ValueError(f"space: parameter '{name}' must be a non-empty list of values, "
                         f"not {type(values).__name__}")
    out = [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in values]
    if len(set(map(repr, out))) != len(out):
        raise ValueError(f"space: parameter '{name}' lists a value twice")
    return out


@dataclass
class _Param:
    """How one parameter's values are searched: all ints are searched by value (the cost
    model sees their size); any other list by a stable id per value, so reordering the list
    never relabels a stored result."""

    name: str
    values: List[Any]
    ints: bool
    ids: List[int]  # the integer searched for each value, in the user's order

    def __post_init__(self) -> None:
        # Both directions looked up on every ask and tell: built once.
        self.by_repr = {repr(v): i for v, i in zip(self.values, self.ids)}
        self.by_id = dict(zip(self.ids, self.values))

    @classmethod
    def of(cls, name: str, values: Any, stored_ids: Optional[Mapping[str, int]] = None) -> "_Param":
        vals = _value_list(name, values)
        if all(_is_int(v) for v in vals) and all(-(2**62) < v < 2**62 for v in vals):
            vals = sorted(int(v) for v in vals)
            return cls(name, vals, True, list(vals))
        table = dict(stored_ids or {})
        for v in vals:
            if repr(v) not in table:
                table[repr(v)] = max(table.values(), default=-1) + 1
        return cls(name, vals, False, [table[repr(v)] for v in vals])

    def value(self, searched: int) -> Any:
        return self.by_id[searched]


def _study_spec(params: List[_Param], direction: str, previous: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """What the database keeps to decode this objective's results: the direction, and for
    each categorical parameter the id of every value it ever had."""
    old = (previous or {}).get("params", {})
    spec: Dict[str, Any] = {"kind": "atvoss.Optimizer", "direction": direction, "params": {}}
    for p in params:
        ids = {} if p.ints else {**old.get(p.name, {}).get("ids", {}), **p.by_repr}
        spec["params"][p.name] = {"ints": p.ints, "ids": ids, "space": [repr(v) for v in p.values]}
    return spec


def _describe_change(stored: Mapping[str, Any], params: List[_Param]) -> str:
    """How this space differs from the stored study's last one, for a message."""
    before = stored.get("params", {})
    now = {p.name: p for p in params}
    notes = []
    for name in before:
        if name not in now:
            notes.append(f"parameter '{name}' is gone")
    for name, p in now.items():
        if name not in before:
            notes.append(f"parameter '{name}' is new")
            continue
        old = set(before[name].get("space", []))
        cur = {repr(v) for v in p.values}
        if old - cur:
            notes.append(f"'{name}' lost {', '.join(sorted(old - cur))}")
        if cur - old:
            notes.append(f"'{name}' gained {', '.join(sorted(cur - old))}")
    return "; ".join(notes) or "the same values"


def _prior_tables(priors: Sequence[Mapping[str, Any]], direction: str) -> List[Tuple[str, List[Any]]]:
    """Optimizer's priors as the core takes them: (name, [({param: int}, status, cost)]), the
    integer parameters of each config only (the others cannot be matched by value)."""
    if isinstance(priors, Mapping) or not isinstance(priors, Sequence):
        raise TypeError("priors must be a list of {'name': str, 'results': [(config, value), ...]}")
    out = []
    for i, prior in enumerate(priors):
        if not isinstance(prior, Mapping) or not isinstance(prior.get("name"), str) or "results" not in prior:
            raise ValueError(f"priors[{i}] must be a dict with fields 'name' (str) and 'results'")
        rows = []
        for j, row in enumerate(prior["results"]):
            if not isinstance(row, Sequence) or len(row) != 2 or not isinstance(row[0], Mapping):
                raise ValueError(f"priors[{i}].results[{j}] must be a (config dict, value) pair")
            config, value = row
            ints = {str(k): int(v) for k, v in config.items() if _is_int(v)}
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
            rows.append((ints, "ok" if ok else "runtime_error", cost_of(float(value), direction) if ok else 0.0))
        out.append((prior["name"], rows))
    return out


class Optimizer:
    """Ask/tell search over ``space`` (parameter name -> list of values, in your order).

    constraints: Kernel Tuner-style expressions over the parameter names
    (``"block_x * block_y <= 1024"``, atvoss.constraints) or callables taking the config
    dict; a point is valid when all hold. direction: "minimize" (default) or "maximize".
    strategy: any name in atvoss.strategy_names() (default model-guided). strategy_config:
    the strategy's own settings (docs/job-spec.md), e.g. {"tpe_gamma": 0.25} for "tpe".
    seed: the same seed, space and told results give the same asks. name: names the
    objective (its stored results and its cost model). db: resume from and store into a
    tuning database; on_space_change: "error" (default) refuses a space that leaves stored
    results out, "keep" resumes those still inside it. priors: results of other spaces
    (another kernel, or this one on another device), each {"name": str, "results": [(config,
    value), ...]} with value None for a failure; model-guided learns from those whose integer
    parameters match enough of this space's by name, once its own results can judge them
    (docs/decisions/search-space-priors.md).

    Several asks may be pending; ask and tell may be called from several threads.
    """

    def __init__(self, space: Space, *, constraints: Sequence[Constraint] = (), direction: str = "minimize",
                 strategy: str = "model-guided", seed: int = 0, name: str = "objective",
                 db: Optional[PathLike] = None, strategy_config: Optional[Mapping[str, Any]] = None,
                 on_space_change: str = "error", priors: Sequence[Mapping[str, Any]] = ()) -> None:
        if not isinstance(space, Mapping) or not space:
            raise TypeError("space must be a non-empty dict of parameter name -> list of values")
        if isinstance(constraints, (str, bytes)) or callable(constraints):
            constraints = [constraints]  # one constraint given alone
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'minimize' or 'maximize', not {direction!r}")
        if on_space_change not in ("error", "keep"):
            raise ValueError(f"on_space_change must be 'error' or 'keep', not {on_space_change!r}")
        if not isinstance(strategy, str):
            raise TypeError("strategy must be a strategy name (str)")
        if strategy_config is not None and not isinstance(strategy_config, Mapping):
            raise TypeError("strategy_config must be a dict of the strategy's settings")
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a non-empty str")
        _check_int(seed, "seed", 0, _UINT64_MAX)
        self.direction = direction
        self._lock = threading.RLock()
        self._params = [_Param.of(str(k), v) for k, v in space.items()]
        stored: Optional[Dict[str, Any]] = None
        if db is not None:
            stored = json.loads(_atvoss.open_study(os.fspath(db), name, json.dumps(_study_spec(self._params, direction))))
            self._adopt(stored or {}, space, name)
        valid = valid_points(list(constraints), [p.name for p in self._params], [p.values for p in self._params])
        owner = f"python:{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._workload = Workload({"op": "objective", "name": name})
        self._core = _atvoss.OptimizerCore(name, [(p.name, p.ids) for p in self._params], valid, strategy, seed,
                                           "" if db is None else os.fspath(db),
                                           json.dumps(dict(strategy_config or {})), owner,
                                           _prior_tables(priors, direction))
        self._outstanding: Dict[Tuple[int, ...], Config] = {}
        self._known: Set[Tuple[int, ...]] = set()  # keys of every result told, observed or read back
        self.trials: List[OptimizerTrial] = []
        self._sync()
        self.resume_summary = "" if stored is None or db is None else self._check_resume(stored, db, name,
                                                                                           on_space_change)

    def _adopt(self, stored: Mapping[str, Any], space: Space, name: str) -> None:
        if stored.get("kind") != "atvoss.Optimizer":
            raise ValueError(f"db: the job 'objective:{name}' is not an atvoss.Optimizer study")
        if stored.get("direction", "minimize") != self.direction:
            raise ValueError(f"db: the study '{name}' was run with direction={stored.get('direction')!r}, "
                             f"not {self.direction!r}; use another name")
        params = stored.get("params", {})
        self._params = [_Param.of(str(k), v, params.get(str(k), {}).get("ids")) for k, v in space.items()]

    def _check_resume(self, stored: Mapping[str, Any], db: PathLike, name: str, on_space_change: str) -> str:
        change = _describe_change(stored, self._params)
        resumed = sum(t.resumed for t in self.trials)
        outside = int(self._core.outside)
        if outside and on_space_change == "error":
            self._core.release()
            raise ValueError(f"db: {outside} stored result(s) of '{name}' fall outside this space ({change}); "
                             "pass on_space_change='keep' to resume the ones inside it, or use another name")
        _atvoss.update_study(os.fspath(db), name, json.dumps(_study_spec(self._params, self.direction, stored)))
        summary = f"resumed {resumed} stored result(s) of '{name}'"
        if outside:
            summary += f", left out {outside} outside this space"
        if change != "the same values":
            summary += f" (space changed: {change})"
        _log.info("atvoss.Optimizer: %s", summary)
        return summary

    def _decode(self, ints: Mapping[str, int]) -> Config:
        return {p.name: p.value(ints[p.name]) for p in self._params}

    def _key(self, config: Mapping[str, Any]) -> Optional[Tuple[int, ...]]:
        """The searched integers of a configuration, whatever the order of its keys (None if
        it is not a point of the space)."""
        if not isinstance(config, Mapping) or len(config) != len(self._params):
            return None
        try:
            return tuple(p.by_repr[repr(config[p.name])] for p in self._params)
        except KeyError:
            return None

    def _sync(self) -> None:
        for values, status, cost, message in self._core.sync():
            ok = status == "ok"
            self._known.add(tuple(values[p.name] for p in self._params))
            self.trials.append(OptimizerTrial(self._decode(values), value_of(cost, self.direction) if ok else None,
                                              "" if ok else (message or status), resumed=True))

    def ask(self, n: int = 1) -> List[Config]:
        """Up to n new configurations to evaluate: fewer, or none, once the space has no point
        left that is not evaluated, pending or (with a database) claimed by another worker.
        Earlier asks may still be pending."""
        _check_int(n, "n", 1)
        with self._lock:
            self._sync()
            configs = []
            for a in self._core.ask(n):
                config = self._decode(a)
                self._outstanding[tuple(a[p.name] for p in self._params)] = config
                configs.append(dict(config))
            return configs

    def tell(self, configs: Union[Config, Sequence[Config]], results: Any) -> None:
        """Results of pending asks, in the order of configs (any of them, each once): a finite
        real number (Python or numpy; NaN and infinities are failures), or None or an exception
        instance for a failure. One config and its result may be given alone."""
        if isinstance(configs, Mapping):
            configs, results = [configs], [results]
        if len(configs) != len(results):
            raise ValueError(f"tell: {len(configs)} configs but {len(results)} results")
        told, trials, messages, seen = [], [], [], set()  # checked whole before anything is kept
        seen_order: List[Tuple[int, ...]] = []
        with self._lock:
            for config, result in zip(configs, results):
                key = self._key(config)
                if key is None or key not in self._outstanding:
                    raise ValueError(f"tell: {config} is not a pending ask (never asked, or told already)")
                if key in seen:
                    raise ValueError(f"tell: {config} is given twice")
                seen.add(key)
                seen_order.append(key)
                ints = {p.name: k for p, k in zip(self._params, key)}
                value, error = self._result_value(config, result)
                told.append((ints, "ok" if value is not None else "runtime_error",
                             cost_of(value, self.direction) if value is not None else 0.0))
                trials.append(OptimizerTrial(dict(self._outstanding[key]), value, error))
                messages.append(error)
            self._core.tell(told, messages)
            for key in seen:
                del self._outstanding[key]
            self._known.update(seen)
            self.trials.extend(trials)
        if _profiling.any_open():
            _profiling.collect(self._workload, "host", [self._measurement(key, t) for key, t in zip(seen_order, trials)],
                               source="objective")

    def observe(self, configs: Union[Config, Sequence[Config]], results: Any) -> int:
        """Results measured elsewhere, never asked of this Optimizer (trials another sampler
        chose, a configuration known to be good): the strategy learns from them as from told
        results and never proposes them. Results as for tell. Each config must be a point of
        the space; those already told, observed or pending are skipped (their result is, or
        will be, told). Returns how many were new."""
        if isinstance(configs, Mapping):
            configs, results = [configs], [results]
        if len(configs) != len(results):
            raise ValueError(f"observe: {len(configs)} configs but {len(results)} results")
        told, trials, messages, keys = [], [], [], set()
        with self._lock:
            for config, result in zip(configs, results):
                key = self._key(config)
                if key is None:
                    raise ValueError(f"observe: {config} is not a point of the space (a value of each parameter)")
                value, error = self._result_value(config, result)
                if key in self._known or key in self._outstanding or key in keys:
                    continue
                keys.add(key)
                told.append(({p.name: k for p, k in zip(self._params, key)}, "ok" if value is not None else "runtime_error",
                             cost_of(value, self.direction) if value is not None else 0.0))
                trials.append(OptimizerTrial(self._decode(told[-1][0]), value, error))
                messages.append(error)
            if told:
                self._core.observe(told, messages)
            self._known.update(keys)
            self.trials.extend(trials)
        return len(trials)

    def _measurement(self, key: Tuple[int, ...], t: OptimizerTrial) -> Measurement:
        """A told result as the Profiler collects measurements: a value minimised and positive
        is a time on its clock; any other value is kept in repeats, at no time."""
        schedule = Schedule({p.name: k for p, k in zip(self._params, key)})
        if t.value is None:
            return Measurement(schedule, "runtime_error", 0.0, [], None, t.error)
        as_time = t.value if self.direction == "minimize" and t.value > 0 else 0.0
        return Measurement(schedule, "ok", as_time, [t.value], None, f"config {t.config}")

    @staticmethod
    def _result_value(config: Config, result: Any) -> Tuple[Optional[float], str]:
        if result is None:
            return None, "failed"
        if isinstance(result, BaseException):
            return None, f"{type(result).__name__}: {result}"
        if isinstance(result, bool) or not isinstance(result, numbers.Real):
            raise TypeError(f"tell: the result for {config} must be a real number, None or an exception, "
                            f"not {type(result).__name__} {result!r}")
        value = float(result)
        if not math.isfinite(value):
            return None, f"the objective returned {value}"
        return value, ""

    def close(self) -> None:
        """Gives up what is still pending: other workers may take those points."""
        with self._lock:
            self._core.release()
            self._outstanding.clear()

    @property
    def pending(self) -> List[Config]:
        """The asked configurations not told yet."""
        with self._lock:
            return [dict(c) for c in self._outstanding.values()]

    @property
    def best(self) -> Optional[OptimizerTrial]:
        """The successful trial with the best value so far (None before any succeeded)."""
        ok = [t for t in self.trials if t.value is not None]
        if not ok:
            return None
        pick = min if self.direction == "minimize" else max
        return pick(ok, key=lambda t: t.value if t.value is not None else math.nan)

    @property
    def size(self) -> int:
        """Points in the space, valid or not."""
        return int(self._core.size)

    def _waiting_on_others(self) -> bool:
        """Whether the last ask skipped points another worker holds (they may fail back)."""
        return int(self._core.held_elsewhere) > 0


Objective = Callable[..., Any]  # returns a real number, or None for a failure; may raise
ExceptionTypes = Union[Type[BaseException], Tuple[Type[BaseException], ...]]


class _Run:
    """One optimize call: evaluates the objective and decides what a raised exception means
    (Optuna's ``catch``: caught ones mark the point failed, others stop the run)."""

    def __init__(self, opt: Optimizer, objective: Objective, catch: ExceptionTypes) -> None:
        self.opt, self.objective, self.catch = opt, objective, catch
        self.told = self.failed = 0
        self.first_error: Optional[BaseException] = None
        self.lock = threading.Lock()

    def evaluate(self, config: Config) -> None:
        try:
            result = self.objective(**config)
        except Exception as e:  # KeyboardInterrupt and the like stop the run, telling nothing
            self.opt.tell([config], [e])  # kept as a failure, whatever happens next
            self._count(True, e)
            if not isinstance(e, self.catch):
                raise
            return
        self.opt.tell([config], [result])
        self._count(Optimizer._result_value(config, result)[0] is None, None)

    def _count(self, failed: bool, error: Optional[BaseException]) -> None:
        with self.lock:
            self.told += 1
            self.failed += failed
            if error is not None and self.first_error is None:
                self.first_error = error

    def raise_if_all_failed(self) -> None:
        if self.told and self.failed == self.told:
            message = (f"atvoss: every one of the {self.told} trials of this run failed; "
                       f"the first failure is raised (catch=() raises at once)")
            if self.first_error is not None:
                self.first_error.add_note(message)
                raise self.first_error
            raise RuntimeError(message + ": the objective returned None or a non-finite value each time")


def _serial(run: _Run, trials: int, batch: int) -> None:
    opt = run.opt
    while len(opt.trials) < trials:
        configs = opt.ask(min(batch, trials - len(opt.trials)))
        if not configs:
            if opt._waiting_on_others():
                time.sleep(0.02)  # polled: the other worker may be another machine
                continue
            break  # every valid point was evaluated
        for c in configs:
            run.evaluate(c)


def _threaded(run: _Run, trials: int, n_jobs: int) -> None:
    opt = run.opt
    stop = threading.Event()
    errors: List[BaseException] = []

    def worker() -> None:
        try:
            while not stop.is_set():
                with opt._lock:
                    if len(opt.trials) + len(opt._outstanding) >= trials:
                        return
                    configs = opt.ask(1)
                if not configs:
                    if not (opt._waiting_on_others() or opt.pending):
                        return  # every valid point was evaluated
                    time.sleep(0.02)  # another thread or worker may give a point back
                    continue
                run.evaluate(configs[0])
        except BaseException as e:
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=worker, name=f"atvoss-objective-{i}", daemon=True) for i in range(n_jobs)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.1)  # joined in slices, so Ctrl-C reaches this thread
    except BaseException:
        stop.set()
        raise
    if errors:
        raise errors[0]


def optimize(objective: Objective, space: Space, trials: int, *, direction: str = "minimize",
             constraints: Sequence[Constraint] = (), strategy: str = "model-guided", seed: int = 0,
             batch: int = 4, n_jobs: int = 1, catch: ExceptionTypes = (Exception,), name: str = "objective",
             db: Optional[PathLike] = None, strategy_config: Optional[Mapping[str, Any]] = None,
             on_space_change: str = "error") -> Optimizer:
    """Evaluates objective(**config) on configurations the strategy chooses until `trials`
    results are known (stored ones count: a rerun resumes, and workers sharing db share the
    budget) and returns the Optimizer (``.best``, ``.trials``).

    An exception of a type in ``catch`` (default: any Exception) marks that configuration
    failed and the search goes on; any other is kept as a failure and raised at once
    (``catch=()`` is Optuna's default). A run in which every trial failed raises the first
    failure. n_jobs: threads evaluating the objective at once (1: asks in batches of
    `batch`, reproducible from the seed). KeyboardInterrupt stops the search, keeping what
    was told."""
    if not callable(objective):
        raise TypeError("objective must be callable")
    _check_int(trials, "trials", 1)
    _check_int(batch, "batch", 1)
    _check_int(n_jobs, "n_jobs", 1, 1024)
    if not isinstance(catch, tuple):
        catch = (catch,)
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in catch):
        raise TypeError("catch must be an exception type or a tuple of them")
    opt = Optimizer(space, constraints=constraints, direction=direction, strategy=strategy, seed=seed, name=name,
                    db=db, strategy_config=strategy_config, on_space_change=on_space_change)
    run = _Run(opt, objective, catch)
    try:
        if n_jobs == 1:
            _serial(run, trials, batch)
        else:
            _threaded(run, trials, n_jobs)
    finally:
        opt.close()
    run.raise_if_all_failed()
    return opt


def minimize(objective: Objective, space: Space, trials: int, **options: Any) -> Optimizer:
    """optimize(..., direction="minimize"): lower values are better (a time)."""
    return optimize(objective, space, trials, direction="minimize", **options)


def maximize(objective: Objective, space: Space, trials: int, **options: Any) -> Optimizer:
    """optimize(..., direction="maximize"): higher values are better (GFLOP/s, accuracy)."""
    return optimize(objective, space, trials, direction="maximize", **options)
