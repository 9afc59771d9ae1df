"""Profiling as in the atvoss articles, over a run rather than one call.

``with atvoss.Profiler() as p:`` collects every measurement handed to it inside the block:
atvoss.measure's (source "measure"), and a tuner's or a job's finished trials when they hand
them with source "tune" or "job". ``p.report()`` gives the per-op breakdown (compute / DMA /
sync / launch from each Profile); ``p.top_bottleneck_ops(k)`` the ops that take the most
time, each with its bottleneck and a hint that fits the backend: atvoss-analyze's for an NPU
(simulator/analysis.hpp, called through the C++ core), a CPU's own for the host target.
``Profiler(collect=..., interval_us=..., output_dir=...)`` chooses the metrics kept, samples
long runs, and writes trace.json (Chrome trace events, for Perfetto) and summary.json on
exit. What each figure means: docs/profiler.md.
"""
import errno
import json
import math
import os
import statistics
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _atvoss
from ._json import dumps, loads
from .vocabulary import Target, as_target, as_workload

# The metrics a Profiler can keep: the Profile's fields, and the measurement's time.
METRICS: Tuple[str, ...] = ("compute_us", "dma_us", "sync_wait_us", "launch_us", "l1_hit_rate",
                            "dma_utilisation", "cube_utilisation", "gm_bytes", "kernels", "time_us")
# Where an NPU measurement's time went (Profile fields), as ProfiledOp reports it.
_PARTS = ("compute_us", "dma_us", "sync_wait_us", "launch_us")
# Ops listed under "top_bottleneck_ops" in summary.json.
SUMMARY_TOP = 5

_active: List["Profiler"] = []
_lock = threading.Lock()

PathArg = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ProfiledOp:
    """One measured op in a profile report: its label, schedule, time,
    time shares, the bottleneck ("compute", "dma", "sync-wait", "launch"; "compute" or
    "memory" on a CPU) and a hint."""

    label: str
    workload: Any
    schedule: Any
    time_us: float
    compute_us: float
    dma_us: float
    sync_wait_us: float
    launch_us: float
    share: float
    bottleneck: str
    hint: str


@dataclass(frozen=True)
class ProfileRecord:
    """One kept measurement: workload, target, the Measurement, its source ("measure",
    "tune", "job", ...), where it starts on its source's track (the measured time of every
    earlier measurement of that source, in microseconds) and the collected metrics (empty
    unless the measurement is ok)."""

    workload: Any
    target: Any
    measurement: Any
    source: str
    start_us: float
    metrics: Dict[str, float]


@dataclass(frozen=True)
class BottleneckOp:
    """One op of Profiler.top_bottleneck_ops: its label, the total of its measured times,
    that total's share of all ops' total, the mean time, the number of measurements, the
    bottleneck that takes most of its time and the hint for it."""

    label: str
    total_us: float
    share: float
    mean_us: float
    count: int
    bottleneck: str
    hint: str


@dataclass
class _Track:
    """Per-source state: its trace track, its clock and its counts (kept or not)."""

    tid: int
    clock_us: float = 0.0  # measured time of every measurement of this source so far
    last_kept_us: Optional[float] = None  # start of the last kept one
    seen: int = 0
    kept: int = 0
    failed: Dict[str, int] = field(default_factory=dict)  # status -> failures seen


def any_open() -> bool:
    """Whether a Profiler is open: tune and run_job hand their trials over only then (those
    of a run started before the first Profiler opened are not collected)."""
    with _lock:
        return bool(_active)


def collect(workload: Any, target: Any, measurements: Iterable[Any], source: str = "measure") -> None:
    """Hands measurements of workload on target to every open Profiler: atvoss.measure's
    with source "measure", a tune's finished trials with "tune", a job's with "job"."""
    if not isinstance(source, str) or not source:
        raise ValueError("collect: field 'source' must be a non-empty str")
    with _lock:
        profilers = list(_active)
    if not profilers:
        return
    batch = list(measurements)
    for p in profilers:
        p._add(workload, target, batch, source)


def collect_timeline(timeline: Any) -> None:
    """Hands a simulated graph run (graph.Timeline, Graph.simulate) to every open Profiler."""
    with _lock:
        profilers = list(_active)
    for p in profilers:
        p._add_timeline(timeline)


class Profiler:
    """Collects the measurements handed over inside a ``with`` block (any thread).

    collect: the metrics kept from each measurement (default all of METRICS); interval_us:
    0 keeps every measurement, else a measurement is kept only when it starts at least
    interval_us of its source's measured time after the start of the last kept one (the
    first of each source is kept); output_dir: on exit, trace.json and summary.json are
    written there (the directory is created if its parent exists).

    ``p.measurements`` lists the kept (workload, target, Measurement); ``p.records`` the
    same as ProfileRecords, with source and metrics. ``p.report(top=5)`` returns a dict with
    "ops" (every ok measurement, slowest first, with shares, bottleneck and hint),
    "bottlenecks" (the top ones), "total_us" and "failed"; ``print(p.summary())`` prints it.
    ``p.top_bottleneck_ops(k)`` groups by op; ``p.stats()`` and ``p.trace_events()`` are
    summary.json and trace.json, ``p.write(dir)`` writes both. ``p.timelines`` holds the
    graph runs simulated inside the block (Graph.simulate, GraphTuneResult.simulate): each is
    a process of its own in the trace, at its simulated times, and an entry of "graphs" in
    the summary (makespan, serial sum, utilisation, critical path).
    """

    def __init__(self, collect: Optional[Sequence[str]] = None, interval_us: int = 0,
                 output_dir: Optional[PathArg] = None) -> None:
        self.metrics: Tuple[str, ...] = _check_collect(collect)
        self.interval_us: int = _check_interval(interval_us)
        self.output_dir: Optional[str] = _check_output_dir(output_dir, "Profiler")
        self.measurements: List[Tuple[Any, Any, Any]] = []
        self.records: List[ProfileRecord] = []
        self.timelines: List[Any] = []  # graph.Timeline of each Graph.simulate inside the block
        self._tracks: Dict[str, _Track] = {}
        self._analyses: Dict[int, Tuple[str, str]] = {}  # record index -> (bottleneck, hint)
        self._items_lock = threading.Lock()

    def __enter__(self) -> "Profiler":
        with _lock:
            _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with _lock:
            _active.remove(self)
        if self.output_dir is not None:
            self.write()

    def _add(self, workload: Any, target: Any, measurements: List[Any], source: str) -> None:
        with self._items_lock:
            track = self._tracks.setdefault(source, _Track(tid=len(self._tracks) + 1))
            for m in measurements:
                start = track.clock_us
                track.clock_us += _duration(m)
                track.seen += 1
                if not m.ok:
                    track.failed[m.status] = track.failed.get(m.status, 0) + 1
                if track.last_kept_us is not None and start - track.last_kept_us < self.interval_us:
                    continue
                track.last_kept_us = start
                track.kept += 1
                self.measurements.append((workload, target, m))
                self.records.append(ProfileRecord(workload, target, m, source, start, self._metrics_of(m)))

    def _add_timeline(self, timeline: Any) -> None:
        with self._items_lock:
            self.timelines.append(timeline)

    def _metrics_of(self, m: Any) -> Dict[str, float]:
        """The collected metrics of an ok measurement (its time alone if it has no profile)."""
        if not m.ok:
            return {}
        if m.profile is None:
            return {"time_us": m.time_us} if "time_us" in self.metrics else {}
        return {n: (m.time_us if n == "time_us" else getattr(m.profile, n, 0)) for n in self.metrics}

    def _snapshot(self) -> Tuple[List[ProfileRecord], Dict[str, _Track]]:
        with self._items_lock:
            tracks = {s: _Track(t.tid, t.clock_us, t.last_kept_us, t.seen, t.kept, dict(t.failed))
                      for s, t in self._tracks.items()}
            return list(self.records), tracks

    def _analysis(self, index: int, record: ProfileRecord) -> Tuple[str, str]:
        """(bottleneck, hint) of an ok record, computed once."""
        if index not in self._analyses:
            self._analyses[index] = _analyse(record.workload, record.target, record.measurement)
        return self._analyses[index]

    def report(self, top: int = 5) -> Dict[str, Any]:
        """The per-op breakdown, the top bottlenecks and the hints (see the class doc)."""
        _check_count(top, "report", "top")
        records, _ = self._snapshot()
        ops: List[ProfiledOp] = []
        failed = []
        for i, r in enumerate(records):
            w, m = r.workload, r.measurement
            if not m.ok:
                failed.append({"workload": w, "schedule": m.schedule, "status": m.status, "message": m.message})
                continue
            bottleneck, hint = self._analysis(i, r)
            compute, dma, sync, launch = (float(getattr(m.profile, n, 0.0)) for n in _PARTS)
            ops.append(ProfiledOp(_label(w), w, m.schedule, m.time_us, compute, dma, sync, launch, 0.0,
                                  bottleneck, hint))
        total = sum(o.time_us for o in ops)
        ops = [replace(o, share=(o.time_us / total if total else 0.0)) for o in ops]
        ops.sort(key=lambda o: o.time_us, reverse=True)
        return {"ops": ops, "bottlenecks": ops[:top], "total_us": total, "failed": failed}

    def summary(self, top: int = 5) -> str:
        """The report as text: one line per top op with its breakdown and hint."""
        r = self.report(top)
        lines = [f"{len(r['ops'])} ops, {r['total_us']:.1f} us in all; top {len(r['bottlenecks'])}:"]
        for o in r["bottlenecks"]:
            lines.append(f"  {o.share:6.1%} {o.time_us:10.2f} us  compute {o.compute_us:.1f} dma {o.dma_us:.1f} "
                         f"sync {o.sync_wait_us:.1f} launch {o.launch_us:.1f}  [{o.bottleneck}] {o.label}")
            lines.append(f"         hint: {o.hint}")
        for f in r["failed"]:
            lines.append(f"  failed: {_label(f['workload'])}: {f['status']} {f['message']}")
        return "\n".join(lines)

    def top_bottleneck_ops(self, k: int = 5, source: Optional[str] = None) -> List[BottleneckOp]:
        """The k ops (kept ok measurements grouped by workload label, of one source if given)
        with the largest total measured time, largest first. A tune's trials of one op all
        count towards it: pass source="measure" or "job" for a model's run."""
        _check_count(k, "top_bottleneck_ops", "k")
        records, _ = self._snapshot()
        groups: Dict[str, List[Tuple[int, ProfileRecord]]] = {}
        for i, r in enumerate(records):
            if r.measurement.ok and (source is None or r.source == source):
                groups.setdefault(_label(r.workload), []).append((i, r))
        total = sum(r.measurement.time_us for items in groups.values() for _, r in items)
        ops = [self._bottleneck_op(label, items, total) for label, items in groups.items()]
        ops.sort(key=lambda o: (-o.total_us, o.label))
        return ops[:k]

    def _bottleneck_op(self, label: str, items: List[Tuple[int, ProfileRecord]], total: float) -> BottleneckOp:
        """The op's figures; its bottleneck is the one that takes most of its time, its hint
        that of its longest measurement with that bottleneck."""
        timed = [(self._analysis(i, r), r.measurement.time_us) for i, r in items]
        by_kind: Dict[str, float] = {}
        for (kind, _), t in timed:
            by_kind[kind] = by_kind.get(kind, 0.0) + t
        kind = max(by_kind, key=lambda b: by_kind[b])
        hint = max((t, h) for (b, h), t in timed if b == kind)[1]
        op_total = sum(t for _, t in timed)
        return BottleneckOp(label, op_total, op_total / total if total else 0.0, op_total / len(timed),
                            len(timed), kind, hint)

    def stats(self, top: int = SUMMARY_TOP) -> Dict[str, Any]:
        """What summary.json holds: per source the counts (seen, kept, failed by status) and
        measured time; over kept measurements the means of every collected metric over the
        ok ones, overall and per op label; the kept failures; the top bottleneck ops."""
        _check_count(top, "stats", "top")
        records, tracks = self._snapshot()
        by_label: Dict[str, List[ProfileRecord]] = {}
        for r in records:
            by_label.setdefault(_label(r.workload), []).append(r)
        return {
            "metrics": list(self.metrics), "interval_us": self.interval_us,
            "sources": {s: {"seen": t.seen, "kept": t.kept, "failed": sum(t.failed.values()),
                            "failed_by_status": t.failed, "measured_us": t.clock_us} for s, t in tracks.items()},
            "overall": self._group_stats(records),
            "ops": {label: self._group_stats(rs) for label, rs in by_label.items()},
            "failures": [_failure(r) for r in records if not r.measurement.ok],
            "top_bottleneck_ops": [dict(o.__dict__) for o in self.top_bottleneck_ops(top)],
            "graphs": [_graph_stats(t) for t in list(self.timelines)],
        }

    def _group_stats(self, records: List[ProfileRecord]) -> Dict[str, Any]:
        ok = [r for r in records if r.measurement.ok]
        values = {n: [r.metrics[n] for r in ok if n in r.metrics] for n in self.metrics}
        means = {n: statistics.fmean(v) for n, v in values.items() if v}
        return {"count": len(records), "ok": len(ok), "failed": len(records) - len(ok), "mean": means}

    def trace_events(self) -> Dict[str, Any]:
        """What trace.json holds: Chrome trace events (Perfetto, chrome://tracing), one
        complete ("X") event per kept measurement on its source's track ("tid"), at its place
        on that source's clock of measured time (ts, dur in microseconds; not wall time)."""
        records, tracks = self._snapshot()
        events: List[Dict[str, Any]] = [
            {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "atvoss: measured time"}}]
        events += [{"ph": "M", "pid": 1, "tid": t.tid, "name": "thread_name", "args": {"name": s}}
                   for s, t in tracks.items()]
        events += [_event(r, tracks[r.source].tid) for r in records]
        for pid, timeline in enumerate(list(self.timelines), start=2):
            events += _timeline_events(timeline, pid)
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"clock": "measured time per source, laid end to end; not wall time; a simulated "
                                       "graph run (its own process) at its simulated times",
                              "interval_us": self.interval_us}}

    def write(self, output_dir: Optional[PathArg] = None) -> None:
        """Writes trace.json and summary.json into output_dir (default: the Profiler's),
        creating the directory when its parent exists."""
        path = self.output_dir if output_dir is None else _check_output_dir(output_dir, "write")
        if path is None:
            raise ValueError("write: field 'output_dir' is required: the Profiler was given none")
        os.makedirs(path, exist_ok=True)
        _write_json(os.path.join(path, "trace.json"), self.trace_events(), indent=None)
        _write_json(os.path.join(path, "summary.json"), self.stats())


def _analyse(workload: Any, target: Any, m: Any) -> Tuple[str, str]:
    """(bottleneck, hint) of an ok measurement: its backend's reading (backend::analyze: the
    simulator's breakdown on an NPU, the share of the peak FLOP/s on a CPU)."""
    if m.profile is None:
        return "unknown", "no profile was measured"
    t = target if isinstance(target, Target) else as_target(target)
    a = loads(_atvoss.analyze(dumps(m.to_json()), dumps(dict(m.schedule)), dumps(as_workload(workload).to_json()),
                              dumps(t.to_json())))
    return a["bottleneck"], a["hint"]


def _duration(m: Any) -> float:
    """A measurement's place on its source's clock: its time when ok, else 0."""
    return float(m.time_us) if m.ok and 0 < m.time_us < math.inf else 0.0


def _label(workload: Any) -> str:
    return str(getattr(workload, "label", workload))


def _failure(r: ProfileRecord) -> Dict[str, Any]:
    m = r.measurement
    return {"label": _label(r.workload), "source": r.source, "schedule": dict(m.schedule),
            "status": m.status, "message": m.message}


def _event(r: ProfileRecord, tid: int) -> Dict[str, Any]:
    m = r.measurement
    args: Dict[str, Any] = {"label": _label(r.workload), "target": str(getattr(r.target, "name", r.target)),
                            "schedule": dict(m.schedule), "status": m.status, **r.metrics}
    if m.message:
        args["message"] = m.message
    return {"name": _label(r.workload), "cat": r.source, "ph": "X", "pid": 1, "tid": tid,
            "ts": r.start_us, "dur": _duration(m), "args": args}


def _timeline_events(t: Any, pid: int) -> List[Dict[str, Any]]:
    """A simulated graph run as a process of its own: one track per stream, each kernel at
    its simulated start and end, the critical path marked in its args."""
    critical = set(t.critical_path)
    events: List[Dict[str, Any]] = [
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
         "args": {"name": f"graph {t.graph} on {t.target} ({t.policy}, simulated)"}}]
    for stream in sorted({n.stream for n in t.nodes}):
        events.append({"ph": "M", "pid": pid, "tid": stream + 1, "name": "thread_name",
                       "args": {"name": f"stream {stream}"}})
    for n in sorted(t.nodes, key=lambda n: (n.start_us, n.stream)):  # trace viewers read tracks in time order
        events.append({"name": n.name, "cat": "graph", "ph": "X", "pid": pid, "tid": n.stream + 1,
                       "ts": n.start_us, "dur": n.end_us - n.start_us,
                       "args": {"op": n.op, "cores": len(n.cores), "launched_us": n.launched_us,
                                "critical_path": n.name in critical}})
    return events


def _graph_stats(t: Any) -> Dict[str, Any]:
    return {"graph": t.graph, "target": t.target, "policy": t.policy, "makespan_us": t.makespan_us,
            "serial_us": t.serial_us, "utilisation": t.utilisation, "critical_path": list(t.critical_path),
            "kernels": len(t.nodes)}


def _write_json(path: str, doc: Dict[str, Any], indent: Optional[int] = 1) -> None:
    """doc as JSON at path, replaced whole (a reader never sees half a file). What is at path
    must be a regular file or nothing: a symlink, a device or a FIFO there is refused, never
    replaced (as every atvoss output, core/user_paths.hpp)."""
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
        kind = "a symlink" if os.path.islink(path) else "a directory" if os.path.isdir(path) else "not a regular file"
        raise ValueError(f"Profiler: output '{path}' is {kind}; refusing to replace it")
    tmp = path + ".tmp"
    if os.path.lexists(tmp) and (os.path.islink(tmp) or not os.path.isfile(tmp)):
        raise ValueError(f"Profiler: '{tmp}' (the file written first) is not a regular file; refusing to write")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=indent, separators=None if indent else (",", ":"))
    os.replace(tmp, path)


def _check_collect(value: Optional[Sequence[str]]) -> Tuple[str, ...]:
    if value is None:
        return METRICS
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"Profiler: field 'collect' must be a list of metric names ({', '.join(METRICS)})")
    names = list(value)
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"Profiler: field 'collect': unknown metric(s) {unknown}; allowed: {', '.join(METRICS)}")
    return tuple(dict.fromkeys(names))


def _check_interval(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Profiler: field 'interval_us' must be an int >= 0, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"Profiler: field 'interval_us' must be >= 0, got {value}")
    return value


def _check_count(value: Any, where: str, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: field '{name}' must be an int >= 1")


def _check_output_dir(value: Optional[PathArg], where: str) -> Optional[str]:
    """The directory as a str: it exists, or its parent does (it is created on writing)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{where}: field 'output_dir' must be a path, not {type(value).__name__}")
    path = os.fspath(value)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{where}: field 'output_dir': '{path}' is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, f"{where}: field 'output_dir': the directory '{parent}' "
                                "does not exist (create it first)", path)
    return path
