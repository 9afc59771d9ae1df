"""atvoss from Python: tune operator schedules, query the tuning database, write search
policies and profile kernels, on the C++ libraries of this repository (README "Python").

    import atvoss
    w = atvoss.Workload(op="matmul", dims={"M": 512, "N": 512, "K": 512})
    r = atvoss.tune(w, "ascend910b", trials=32, strategy="random", db="tune.db")
    print(r.best_schedule, r.best_us, r.default_us)
"""
import os as _os

__version__ = "0.1.0"  # pyproject.toml's version; test_docs checks the two agree

# Before the C++ core loads libgomp (which reads this once): OpenMP threads that wait by
# spinning stalled the runtime's kernels in multiples of 4 ms next to numpy's own threads.
# Passive waiting is what the tuner's kernel runner measures with (host/kernel_timing.cpp),
# so the runtime delivers the times the tuner reported. A value the user set is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The same trap from numpy's side: after each call OpenBLAS's idle threads poll for 2^28
# cycles (about 0.1 s) and took a core from a 2-thread tuned kernel run between numpy calls
# (1024^3: 26.9 ms against the tuner's 11.7; 16.4 ms with this; docs/runtime.md). It only
# takes effect when numpy is imported after atvoss. A value the user set is kept.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

# An installed package carries the host backend's kernel runner (setup.py); in the build
# tree the C++ core finds it by the path CMake compiled in. A runner the user set is kept.
_runner = _os.path.join(_os.path.dirname(__file__), "bin", "atvoss-kernel-runner")
if _os.access(_runner, _os.X_OK):
    _os.environ.setdefault("ATVOSS_KERNEL_RUNNER", _runner)

from . import constraints, quantization, runtime  # noqa: E402 (after the environment above)
from .backend import Backend, backend_names, register_backend
from .client import Client
from .database import Database, LookupResult, Table, columns
from .farm import serve_worker
from .graph import FusionResult, FusionRule, FusionScheduler, Graph, Tensor, Timeline, TimelineNode
from .optimizer import Optimizer, OptimizerTrial, maximize, minimize, optimize
from .policy import AbstractSchedulePolicy, GraphTuneResult, NodeResult, policy_names, register_policy, tune_graph, unregister_policy
from .profiler import ProfiledOp, Profiler
from .strategy import SearchStrategy, StrategyError, Trial, register_strategy, strategy_names, unregister_strategy
from .tuning import (Measurement, Profile, TuneResult, measure, run_job, tune, tune_kernel_cache,
                     zoo_model)
from .vocabulary import Schedule, ScheduleSpace, Target, Workload

__all__ = [
    "AbstractSchedulePolicy", "Backend", "Client", "Database", "FusionResult", "FusionRule", "FusionScheduler", "Graph", "GraphTuneResult",
    "NodeResult", "Timeline", "TimelineNode", "policy_names", "register_policy", "tune_graph", "unregister_policy", "LookupResult", "Measurement", "Optimizer", "OptimizerTrial", "Profile",
    "ProfiledOp", "Profiler", "backend_names", "maximize", "minimize", "optimize", "register_backend",
    "Schedule", "ScheduleSpace", "SearchStrategy", "StrategyError", "Table", "Target", "Tensor", "Trial",
    "TuneResult", "Workload", "columns", "measure", "register_strategy", "run_job", "serve_worker",
    "strategy_names", "tune", "tune_kernel_cache", "unregister_strategy", "zoo_model",
]
