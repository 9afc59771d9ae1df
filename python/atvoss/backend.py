"""Backends written in Python: subclass atvoss.Backend and register an instance with
``atvoss.register_backend``; atvoss.tune, atvoss.measure and job specs run by atvoss.run_job
then measure the workloads it serves through it (python/src/bindings_backends.cpp puts it
behind the C++ backend interface, backend/backend.hpp, asked before the built-in ones). It
has no kernel plan, so reports count its kernels without their memory traffic. A farm
worker run from Python (atvoss.serve_worker, python/atvoss/farm.py) measures with it; the
C++ atvoss-worker cannot load it.

    class NumpySoftmax(atvoss.Backend):
        name = "numpy-softmax"
        def serves(self, workload, target): return workload.op == "softmax" and target.name == "numpy"
        def space(self, workload, target): return {"rows_per_call": [1, 8, 64, 512]}
        def measure(self, workload, target, schedule, repeat): return [time_it(schedule) for _ in range(repeat)]
    atvoss.register_backend(NumpySoftmax())
    atvoss.tune({"op": "softmax", "dims": {...}}, {"preset": "ascend910", "name": "numpy"}, trials=8)

A backend stays registered for the life of the process. An exception raised by measure() is
that schedule's runtime_error (the tuner goes on); one raised by serves, space, check or
default is a ValueError naming the backend.
"""
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _atvoss
from ._json import loads
from .vocabulary import Schedule, Target, Workload


class Backend:
    """Base class of a backend written in Python. Set ``name`` and implement ``serves``,
    ``space`` and ``measure``; ``check`` (valid unless it returns a reason) and ``default``
    (the baseline schedule, or None) are optional. Methods may be called from several
    threads in turn (each call holds the GIL)."""

    name: str = ""
    # Whether its measurements vary from run to run (a kernel timed on real hardware): then
    # tune confirms the winner, measuring the fastest again side by side (tune's
    # confirm_top), as for the host backend.
    noisy: bool = False
    # The longest one measure() call may take, in seconds (None: no bound): past it the
    # schedule is a "timeout" and tuning goes on. Ctrl-C stops a measure() in flight too.
    # Either takes effect at its next Python bytecode (a call blocked in C, such as a long
    # time.sleep, sees it when it returns).
    call_timeout_s: Optional[float] = 60.0

    def serves(self, workload: Workload, target: Target) -> bool:
        """Whether this backend measures workload on target."""
        return False

    def space(self, workload: Workload, target: Target) -> Mapping[str, Sequence[int]]:
        """The knobs: name -> the int values each may take."""
        raise NotImplementedError(f"{type(self).__name__}.space")

    def check(self, workload: Workload, target: Target, schedule: Schedule) -> Optional[str]:
        """None if schedule is valid, else the reason it is not."""
        return None

    def default(self, workload: Workload, target: Target) -> Optional[Mapping[str, int]]:
        """The schedule tuning is compared against, or None."""
        return None

    def measure(self, workload: Workload, target: Target, schedule: Schedule,
                repeat: int) -> Union[float, Sequence[float]]:
        """The time of schedule in microseconds: one number, or one per repeat."""
        raise NotImplementedError(f"{type(self).__name__}.measure")

    # Called by the C++ adapter with JSON text; converts to the package's objects.
    def _atvoss_serves(self, workload_json: str, target_json: str) -> bool:
        return bool(self.serves(Workload(loads(workload_json)), Target(loads(target_json))))

    def _atvoss_space(self, workload_json: str, target_json: str) -> List[Tuple[str, List[int]]]:
        knobs = self.space(Workload(loads(workload_json)), Target(loads(target_json)))
        return [(str(k), [int(v) for v in values]) for k, values in knobs.items()]

    def _atvoss_check(self, workload_json: str, target_json: str, schedule: Mapping[str, int]) -> str:
        reason = self.check(Workload(loads(workload_json)), Target(loads(target_json)), Schedule(dict(schedule)))
        return "" if reason is None else str(reason) or "invalid"

    def _atvoss_default(self, workload_json: str, target_json: str) -> Optional[Dict[str, int]]:
        d = self.default(Workload(loads(workload_json)), Target(loads(target_json)))
        return None if d is None else {str(k): int(v) for k, v in dict(d).items()}

    def _atvoss_measure(self, workload_json: str, target_json: str, schedule: Mapping[str, int],
                        repeat: int) -> List[float]:
        t = self.measure(Workload(loads(workload_json)), Target(loads(target_json)), Schedule(dict(schedule)), repeat)
        return [float(x) for x in t] if isinstance(t, Sequence) else [float(t)]


def register_backend(backend: Backend) -> Backend:
    """Makes backend serve its workloads in tune, measure and run_job, before the built-in
    backends, for the life of the process; returns it. TypeError if it is not a Backend
    instance overriding serves, space and measure; ValueError if its name is taken."""
    if not isinstance(backend, Backend):
        raise TypeError("register_backend takes an instance of a subclass of atvoss.Backend")
    for method in ("serves", "space", "measure"):
        if getattr(type(backend), method) is getattr(Backend, method):
            raise TypeError(f"register_backend: {type(backend).__name__} does not define {method}()")
    if not isinstance(backend.name, str) or not backend.name:
        raise TypeError(f"register_backend: {type(backend).__name__}.name must be a non-empty str")
    if not isinstance(backend.noisy, bool):
        raise TypeError(f"register_backend: {type(backend).__name__}.noisy must be a bool")
    _atvoss.register_backend(backend.name, backend, backend.noisy)
    return backend


def backend_names() -> List[str]:
    """Every backend name: those registered, then the built-ins."""
    return list(_atvoss.backend_names())

