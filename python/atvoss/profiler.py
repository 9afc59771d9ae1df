"""Profiling as in the atvoss articles: ``with atvoss.Profiler() as p:`` collects every
measurement made by atvoss.measure inside the block, and ``p.report()`` gives the per-op
breakdown (compute / DMA / sync / launch from each Profile), the top-N bottlenecks and
the hint atvoss-analyze prints (simulator/analysis.hpp, called through the C++ core).
"""
import threading
from dataclasses import dataclass
from typing import Any, Dict, List

from . import _atvoss
from ._json import dumps, loads

_active: List["Profiler"] = []
_lock = threading.Lock()


@dataclass(frozen=True)
class ProfiledOp:
    """One measured op in a profile report: its label, schedule, time,
    time shares, the bottleneck ("compute", "dma", "sync-wait", "launch") and a hint."""

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


def collect(workload: Any, target: Any, measurements: List[Any]) -> None:
    """Hands measurements to every open Profiler (called by atvoss.measure)."""
    with _lock:
        profilers = list(_active)
    for p in profilers:
        p._add(workload, target, measurements)


class Profiler:
    """Collects the measurements made inside a ``with`` block (any thread).

    ``p.measurements`` lists (workload, target, Measurement); ``p.report(top=5)`` returns a
    dict with "ops" (every ok measurement, slowest first, with shares, bottleneck and hint),
    "bottlenecks" (the top ones), "total_us" and "failed" (measurements that were not ok);
    ``print(p.summary())`` prints it as a table.
    """

    def __init__(self) -> None:
        self.measurements: List[tuple] = []
        self._items_lock = threading.Lock()

    def __enter__(self) -> "Profiler":
        with _lock:
            _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with _lock:
            _active.remove(self)

    def _add(self, workload: Any, target: Any, measurements: List[Any]) -> None:
        with self._items_lock:
            self.measurements.extend((workload, target, m) for m in measurements)

    def report(self, top: int = 5) -> Dict[str, Any]:
        """The per-op breakdown, the top bottlenecks and the hints (see the class doc)."""
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise ValueError("report: field 'top' must be an int >= 1")
        ops: List[ProfiledOp] = []
        failed = []
        for w, _t, m in self.measurements:
            if not m.ok:
                failed.append({"workload": w, "schedule": m.schedule, "status": m.status, "message": m.message})
                continue
            a = loads(_atvoss.analyze(dumps(m.to_json()), dumps(m.schedule.to_json())))
            p = m.profile
            ops.append(ProfiledOp(w.label, w, m.schedule, m.time_us, p.compute_us, p.dma_us, p.sync_wait_us,
                                  p.launch_us, 0.0, a["bottleneck"], a["hint"]))
        total = sum(o.time_us for o in ops)
        ops = [ProfiledOp(**{**o.__dict__, "share": (o.time_us / total if total else 0.0)}) for o in ops]
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
            lines.append(f"  failed: {f['workload'].label}: {f['status']} {f['message']}")
        return "\n".join(lines)
