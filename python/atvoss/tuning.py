"""Tuning and measuring from Python: tune(), run_job(), measure(), tune_kernel_cache().

Each is one call into the C++ libraries (tuner/single_tune.hpp, tuner/job_runner.hpp,
backend/backend.hpp) with the GIL released, so other Python threads keep running.
"""
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _atvoss
from . import profiler as _profiling
from ._json import dumps, loads, time_or_inf
from .database import require_file, require_parent_dir
from .vocabulary import Schedule, Target, Workload, as_schedule, as_target, as_workload

WorkloadLike = Union[Workload, Mapping[str, Any], str]
TargetLike = Union[Target, Mapping[str, Any], str]


@dataclass(frozen=True)
class Profile:
    """Where a measured schedule's time went (core/measurement.hpp Profile), in microseconds
    and fractions: compute, DMA not hidden by compute, sync waits and kernel launches."""

    compute_us: float = 0.0
    dma_us: float = 0.0
    sync_wait_us: float = 0.0
    launch_us: float = 0.0
    l1_hit_rate: float = 0.0
    dma_utilisation: float = 0.0
    cube_utilisation: float = 0.0
    gm_bytes: float = 0.0
    peak_workspace_bytes: float = 0.0
    kernels: int = 1

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Profile":
        """A Profile from its JSON; unknown fields are ignored, missing ones stay 0."""
        names = cls.__dataclass_fields__.keys()
        return cls(**{k: v for k, v in j.items() if k in names})


@dataclass(frozen=True)
class Measurement:
    """One measured schedule: status ("ok", "invalid", ...), time_us (median of the
    repeats; 0 unless ok), every repeat, the profile (ok only) and a message otherwise."""

    schedule: Schedule
    status: str
    time_us: float
    repeats: List[float]
    profile: Optional[Profile]
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether the schedule ran correctly."""
        return self.status == "ok"

    @classmethod
    def from_json(cls, schedule: Schedule, j: Mapping[str, Any]) -> "Measurement":
        """A Measurement from core's measurement JSON."""
        profile = Profile.from_json(j["profile"]) if "profile" in j else None
        return cls(schedule, j["status"], float(j.get("time_us", 0)), list(j.get("repeats", [])),
                   profile, j.get("message", ""))

    def to_json(self) -> Dict[str, Any]:
        """core's measurement JSON (what atvoss.analyze and the database read)."""
        j: Dict[str, Any] = {"status": self.status, "time_us": self.time_us, "repeats": self.repeats}
        if self.message:
            j["message"] = self.message
        if self.profile is not None:
            j["profile"] = dict(self.profile.__dict__)
        return j


@dataclass(frozen=True)
class TuneResult:
    """What atvoss.tune returns: the best schedule and its time, the vendor default's time
    (inf if not measured), the best-so-far curve per trial, why tuning stopped ("budget",
    "early_stopping" or "exhausted") and the trial counts (stored in all, found on resume,
    measured now).

    best_us is the best schedule's stored time. On a real machine (the host target) the five
    fastest schedules are measured once more after the last trial and their repeats pooled
    with the stored ones, so best_us (and even best_schedule) can differ from the last value
    of curve and from what progress reported: a schedule timed fast once by luck is not
    declared the winner (docs/host-backend.md). On simulated targets they agree.

    objective is what best_us ranks: "time" (microseconds), or the objective of a Kernel
    Tuner cache tuned for another figure ("GFLOP/s", ...). Then best_us holds its cost (the
    value, or 1 / value when higher_is_better) and best_objective the value itself.
    confirmed: how many schedules the confirmation measured again (tune's confirm_top);
    pick_changed: whether it changed the winner."""

    workload: Workload
    target: Target
    best_schedule: Optional[Schedule]
    best_us: float
    default_us: float
    curve: List[float]
    stop_reason: str
    trials: int
    resumed: int
    measured: int
    best: Optional[Measurement] = field(default=None, repr=False)
    objective: str = "time"
    higher_is_better: bool = False
    confirmed: int = 0
    pick_changed: bool = False

    @property
    def best_objective(self) -> float:
        """The best schedule's objective: best_us for time, else the objective's value
        (1 / best_us when higher is better)."""
        if self.higher_is_better:
            return 1.0 / self.best_us if self.best_us not in (0, float("inf")) else float("nan")
        return self.best_us

    @property
    def speedup(self) -> float:
        """default_us / best_us (nan when either is unknown)."""
        if self.best_us in (0, float("inf")) or self.default_us == float("inf"):
            return float("nan")
        return self.default_us / self.best_us


_INT32_MAX = 2**31 - 1  # the C++ core's int counts
_UINT64_MAX = 2**64 - 1  # seeds


def _check_int(value: Any, name: str, minimum: int, maximum: int = _INT32_MAX) -> int:
    """value, an int in minimum..maximum: past the C++ type it would wrap (trials=2**32+4 ran 4)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum or value > maximum:
        raise ValueError(f"{name} must be in {minimum}..{maximum}, got {value}")
    return value


def _strategy_name(strategy: Any, workload: Workload, target: Target) -> str:
    from .strategy import resolve_strategy  # strategy.py imports this module's types

    return resolve_strategy(strategy, workload, target)


def tune(workload: WorkloadLike, target: TargetLike, trials: int = 64, strategy: Any = "model-guided",
         db: Union[str, "os.PathLike[str]"] = ":memory:", seed: int = 0, farm: Optional[str] = None,
         progress: Optional[Callable[[Dict[str, Any]], None]] = None, *, cost_model: str = "xgboost",
         repeat: int = 3, batch_size: int = 16, early_stopping: int = 0,
         export: Optional[Union[str, "os.PathLike[str]"]] = None, confirm_top: Optional[int] = None,
         strategy_config: Optional[Mapping[str, Any]] = None) -> TuneResult:
    """Tune one workload on one target and return a TuneResult.

    workload: a Workload, dict, JSON text or file. target: a Target, preset name, file, dict
    or JSON. trials: total trials, those already stored in db included (a rerun resumes).
    strategy: a built-in name ("random", "grid", "evolutionary", "model-guided", "ensemble",
    "tpe"), the name or class of a strategy registered with @atvoss.register_strategy, or
    "auto" (the highest-priority registered strategy whose can_apply accepts the pair,
    else "model-guided"). db: the SQLite database file (":memory:" keeps nothing).
    seed: seeds the search and the measurement noise. farm: "host:port" of a tuning farm
    (token from ATVOSS_TOKEN), None to measure in-process. progress: called after every
    trial as it finishes with {"trials" (its number, resumed ones included), "budget",
    "best_us" (so far), "default_us" (inf until measured), "workload", "schedule",
    "measurement"}; an
    exception it raises stops tuning and is raised by tune. export: write the lookup table.
    confirm_top: the fastest schedules measured again at the end, side by side in three
    interleaved rounds, their repeats pooled before the winner is taken (None: 5 on the
    host, 0 on simulators, whose measurements repeat exactly); TuneResult.pick_changed says
    whether that changed the winner. strategy_config: the strategy's own settings, as a job
    spec's strategy_config (docs/job-spec.md), e.g. {"tpe_gamma": 0.25} for "tpe"; a key the
    strategy does not take raises ValueError naming it.

    Ctrl-C (KeyboardInterrupt) stops tuning within about 0.1 s plus one poll of the work in
    flight: host kernels and compiles running are killed, and every trial that finished is
    stored in db, so calling tune again with the same db resumes. Trials run inside a
    ``with atvoss.Profiler()`` block (opened before tune) are collected by it. Bad input
    raises ValueError or TypeError naming the field; a failing Python strategy raises
    atvoss.StrategyError.
    """
    t = as_target(target)
    w = as_workload(workload, t)
    _check_int(trials, "trials", 1)
    _check_int(seed, "seed", 0, _UINT64_MAX)
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable")
    if os.fspath(db) != ":memory:":
        require_parent_dir(db, "db")
    if export:
        require_parent_dir(export, "export")
    if strategy_config is not None and not isinstance(strategy_config, Mapping):
        raise TypeError("strategy_config must be a dict of the strategy's settings")
    spec = {"workload": w.to_json(), "target": t._arg(), "trials": trials,
            "strategy_config": dict(strategy_config or {}),
            "strategy": _strategy_name(strategy, w, t), "cost_model": cost_model, "db": os.fspath(db),
            "farm": farm or "", "repeat": _check_int(repeat, "repeat", 1),
            "batch_size": _check_int(batch_size, "batch_size", 1),
            "early_stopping": _check_int(early_stopping, "early_stopping", 0), "seed": seed,
            "export": os.fspath(export) if export else "",
            "confirm_top": -1 if confirm_top is None else _check_int(confirm_top, "confirm_top", 0, 1000)}
    r = loads(_atvoss.tune(dumps(spec), _trial_reporter(w, t, progress)))
    best_schedule = Schedule(r["best_schedule"]) if r["best_schedule"] is not None else None
    best = Measurement.from_json(best_schedule, r["best"]) if best_schedule is not None else None
    result = TuneResult(w, t, best_schedule, time_or_inf(r["best_us"]), time_or_inf(r["default_us"]),
                        [time_or_inf(x) for x in r["curve"]], r["stop_reason"], r["trials"], r["resumed"],
                        r["measured"], best, r["objective"]["objective"], r["objective"]["objective_higher_is_better"],
                        r["confirmed"], r["pick_changed"])
    _warn_about(result, trials, str(spec["strategy"]))
    return result


ProgressFn = Optional[Callable[[Dict[str, Any]], None]]


def _report_trial(j: Mapping[str, Any], w: Workload, t: Target, source: str, progress: ProgressFn) -> None:
    """One finished trial's JSON from the C++ tuner: open Profilers collect its measurement,
    then progress (if any) gets the trial."""
    schedule = Schedule(j["schedule"])
    m = Measurement.from_json(schedule, j["measurement"])
    _profiling.collect(w, t, [m], source=source)
    if progress is not None:
        progress({"trials": j["trials"], "budget": j["budget"], "best_us": time_or_inf(j["best_us"]),
                  "default_us": time_or_inf(j["default_us"]), "workload": w, "schedule": schedule,
                  "measurement": m})


def _trial_reporter(w: Workload, t: Target, progress: ProgressFn) -> Optional[Callable[[str], None]]:
    """tune's per-trial callback (the workload and target are the call's), or None when no
    one listens: a Python call per trial costs a fast simulated tune its GIL-free time."""
    if progress is None and not _profiling.any_open():
        return None
    return lambda text: _report_trial(loads(text), w, t, "tune", progress)


def _job_trial_reporter(progress: ProgressFn) -> Optional[Callable[[str], None]]:
    """run_job's per-trial callback (each trial names its task's workload and the target),
    or None when no one listens."""
    if progress is None and not _profiling.any_open():
        return None
    targets: Dict[str, Target] = {}

    def on_trial(text: str) -> None:
        j = loads(text)
        key = dumps(j["target"])
        if key not in targets:
            targets[key] = Target.from_json(j["target"])
        _report_trial(j, Workload(j["workload"]), targets[key], "job", progress)
    return on_trial


def _warn_about(r: TuneResult, trials: int, strategy: str) -> None:
    """RuntimeWarnings for results a user should not take silently."""
    if r.stop_reason == "exhausted" and r.trials < trials:
        warnings.warn(f"tune: stopped after {r.trials} of {trials} trials: strategy '{strategy}' proposed no "
                      "new schedule (the space may hold no more valid ones, or the policy ran out)",
                      RuntimeWarning, stacklevel=3)
    if math.isfinite(r.default_us) and r.best_us >= r.default_us:
        warnings.warn(f"tune: the best schedule found ({r.best_us:.3f} us) is not faster than the default "
                      f"({r.default_us:.3f} us); more trials or another strategy may help",
                      RuntimeWarning, stacklevel=3)


def run_job(spec_or_path: Union[Mapping[str, Any], str, "os.PathLike[str]"], quiet: bool = True,
            progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Run a batch tuning job (docs/job-spec.md) from a dict or a job file and return its
    summary: job, model, target, trials, resumed, measured, tasks (each with its nodes,
    chosen_schedule, chosen_us and provenance), variants, not_tuned (nodes timed by the
    fallback rule, by name), folded, fusion, database, table, model_plan, report, default_us
    and tuned_us. tuned_us is the job's one end-to-end figure, the model plan's
    (docs/model-plan.md): its graph run (or, without a graph, the serial sum) under the plan's
    schedules re-simulated without noise, with transposes and the nodes not tuned; never
    above default_us, the vendor default's same figure. Strategies registered from Python may be named
    in the spec. Rerunning resumes where the last run stopped. Ctrl-C stops the job with
    KeyboardInterrupt within about 0.1 s plus one poll of the work in flight (host kernels
    running are killed); the trials that finished are stored and the job is marked
    "stopped", so rerunning the same spec resumes it without measuring anything twice.
    progress: called after every trial of every task with tune's dict, "trials" and "budget"
    counting the job's trials and "best_us" the task's; open Profilers collect each trial
    (source "job")."""
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable")
    on_trial = _job_trial_reporter(progress)
    if isinstance(spec_or_path, Mapping):
        return loads(_atvoss.run_job(dumps(dict(spec_or_path)), False, quiet, on_trial))
    if isinstance(spec_or_path, (str, os.PathLike)):
        require_file(spec_or_path, "job spec")
        return loads(_atvoss.run_job(os.fspath(spec_or_path), True, quiet, on_trial))
    raise TypeError(f"run_job takes a spec dict or a job file path, not {type(spec_or_path).__name__}")


def measure(workload: WorkloadLike, target: TargetLike,
            schedules: Union[Schedule, Mapping[str, int], Iterable[Union[Schedule, Mapping[str, int], None]], None] = None,
            repeat: int = 3, seed: int = 0, noise: float = 0.02) -> List[Measurement]:
    """Measure schedules of workload on target through the backend that serves them and
    return one Measurement (with its Profile) per schedule, in order. schedules: one
    schedule, a list, or None for the vendor default (a None in the list stands for it too, so
    ``[r.best_schedule]`` measures the default when tuning found nothing). noise: the simulated measurement
    noise (npu-sim; 0 is exact). Measurements inside a ``with atvoss.Profiler()`` block
    are collected by it.

    Ctrl-C stops measuring within about 0.1 s plus one poll (host kernels running are
    killed) and measure returns what finished: the schedules not measured have status
    "error" and message "cancelled by the caller", and a RuntimeWarning says how many."""
    t = as_target(target)
    w = as_workload(workload, t)
    _check_int(repeat, "repeat", 1)
    _check_int(seed, "seed", 0, _UINT64_MAX)
    def default() -> Schedule:
        text = _atvoss.default_schedule(dumps(w.to_json()), t._arg())
        if text is None:
            raise ValueError("measure: field 'schedules' is required: this backend has no default schedule")
        return Schedule(loads(text))

    if schedules is None or isinstance(schedules, (Schedule, Mapping)):
        schedules = [schedules]
    batch = [default() if s is None else as_schedule(s) for s in schedules]
    r = loads(_atvoss.measure(dumps(w.to_json()), t._arg(), dumps([s.to_json() for s in batch]),
                              repeat, seed, float(noise)))
    out = [Measurement.from_json(s, j) for s, j in zip(batch, r["measurements"])]
    if r["interrupted"]:
        missed = sum(1 for m in out if m.status == "error")
        warnings.warn(f"measure: interrupted (Ctrl-C): {len(out) - missed} of {len(out)} schedules measured; "
                      "the others have status 'error'", RuntimeWarning, stacklevel=2)
    _profiling.collect(w, t, out)
    return out


def tune_kernel_cache(path: Union[str, "os.PathLike[str]"], strategies: Union[str, Sequence[str]] = ("random", "tpe"),
                      trials: int = 50, seed: int = 0, db: Union[str, "os.PathLike[str]"] = ":memory:",
                      target: TargetLike = "ascend910b") -> Dict[str, TuneResult]:
    """Tune a recorded Kernel Tuner cache file (.json or .json.gz; data/recorded-spaces)
    with each strategy and return {strategy: TuneResult}: a Kernel Tuner user compares
    strategies in one line. The cache's measurements are the measurements (recorded
    backend); target only names where the records are stored. With db=":memory:" each
    strategy starts from nothing; with a file, later strategies see earlier trials. The
    cache's "objective" and "objective_higher_is_better" are honoured: a GFLOP/s cache is
    maximised (TuneResult.objective, best_objective); ValueError naming the field when the
    objective is not time and the flag is missing."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise ValueError(f"tune_kernel_cache: field 'path': no such file '{p}'")
    names = [strategies] if isinstance(strategies, str) else list(strategies)
    workload = Workload({"op": "recorded", "table": os.path.abspath(p)})
    return {s: tune(workload, target, trials=trials, strategy=s, db=db, seed=seed) for s in names}


def zoo_model(name: str, batch: int = 0, training: bool = False) -> List[Dict[str, Any]]:
    """The tasks of a zoo model ("resnet50", "bert-base", "bert-large", "mobilenet-v2", "mlp",
    ...) at batch (0: the model's own), or of its training step (forward, backward, updates):
    [{"workload": Workload, "weight": occurrences, "name": first layer}]. A job spec's "batch"
    and "mode" (docs/job-spec.md) give the same tasks."""
    if not isinstance(name, str):
        raise TypeError("zoo_model: name must be a str")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch <= 4096:
        raise ValueError(f"zoo_model: batch must be an int in 0..4096, got {batch!r}")
    if not isinstance(training, bool):
        raise TypeError("zoo_model: training must be a bool")
    return [{"workload": Workload(t["workload"]), "weight": t["weight"], "name": t["name"]}
            for t in loads(_atvoss.zoo_model(name, batch, training))]
