"""Graph-level policies, as in the atvoss articles: a class with ``can_apply(subgraph)`` and
``evaluate(subgraph)`` registered with ``@atvoss.register_policy(name, priority)``.
``atvoss.tune_graph`` asks the policies, highest priority first, about the part of the graph
no policy has taken yet; each returns schedule decisions for the nodes it takes (a schedule
for a node's kernel, fusion groups), and the tuner tunes every kernel left, with the job
runner's task scheduler spreading the trials (tuner/task_scheduler.hpp).

    @atvoss.register_policy("square-tiles", priority=10)
    class SquareTiles:
        def can_apply(self, subgraph): return any(n.op == "matmul" for n in subgraph.nodes.values())
        def evaluate(self, subgraph):
            return {"schedules": {n.name: {...} for n in subgraph.nodes.values() if n.op == "matmul"},
                    "fuse": [["fc1", "act1"]]}
    r = atvoss.tune_graph(graph, "ascend910b", trials=64, db="tune.db")

A decision is checked before anything is measured: a schedule must be valid in the node's
space, a fusion group a chain (each op the only reader of the one before, no kernel of its
own after the first). A class missing a method is refused at registration (TypeError); a
decision that fails its check raises ValueError naming the policy and the node.
"""
import abc
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from .graph import FusionScheduler, Graph, Node, Timeline, _joins, fuse_into
from .tuning import _check_int, measure, run_job
from .vocabulary import Schedule, ScheduleSpace, Target, Workload, as_target

_lock = threading.Lock()
_policies: Dict[str, "_Entry"] = {}

P = TypeVar("P", bound=type)


class AbstractSchedulePolicy(abc.ABC):
    """The articles' base class of a graph policy: implement can_apply and evaluate (see the
    module doc) and register the class with @atvoss.register_policy. Subclassing it is
    optional: register_policy takes any class with the two methods."""

    @abc.abstractmethod
    def can_apply(self, subgraph: Graph) -> bool:
        """Whether this policy takes part of subgraph."""

    @abc.abstractmethod
    def evaluate(self, subgraph: Graph) -> Mapping[str, Any]:
        """{"schedules": {node: schedule}, "fuse": [[node, ...], ...]} for the nodes it takes."""


@dataclass(frozen=True)
class _Entry:
    name: str
    priority: int
    policy: Any


def register_policy(name: Optional[str] = None, priority: int = 0) -> Callable[[P], P]:
    """Class decorator: registers an instance of the class under name (default: the class
    name) with priority (higher is asked first). The class must define can_apply(subgraph)
    and evaluate(subgraph); TypeError naming the missing method otherwise."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError("register_policy: priority must be an int")

    def decorate(cls: P) -> P:
        missing = [m for m in ("can_apply", "evaluate") if not callable(getattr(cls, m, None))]
        if missing:
            raise TypeError(f"register_policy: {cls.__name__} has no {' and no '.join(missing)}(subgraph) method")
        key = name or cls.__name__
        with _lock:
            _policies[key] = _Entry(key, priority, cls())
        return cls
    return decorate


def unregister_policy(name: str) -> bool:
    """Removes a policy; whether one was registered under name."""
    with _lock:
        return _policies.pop(name, None) is not None


def policy_names() -> List[str]:
    """Registered policies, highest priority first (ties by name)."""
    with _lock:
        return [e.name for e in sorted(_policies.values(), key=lambda e: (-e.priority, e.name))]


@dataclass(frozen=True)
class NodeResult:
    """One kernel of a tuned graph: its schedule and time, who chose it ("policy:<name>" or
    "tuner"), the ops fused into it, and how many times it runs (count)."""

    node: str
    workload: Workload
    schedule: Schedule
    time_us: float
    chosen_by: str
    fused: List[str]
    count: int


@dataclass(frozen=True)
class GraphTuneResult:
    """What tune_graph returns: one NodeResult per kernel that runs, the policies that took
    part of the graph (in order), the fused graph, total_us (the kernels' times times their
    counts, one after another), and not_tuned: the ops that run no kernel atvoss tunes and
    are fused into none (not in total_us)."""

    nodes: Dict[str, NodeResult]
    policies: List[str]
    graph: Graph
    total_us: float
    not_tuned: List[str]
    target: Target

    def simulate(self, policy: str = "critical_path") -> Timeline:
        """The fused graph run on the target's device under the chosen schedules
        (Graph.simulate): what runs concurrently, where total_us is the serial sum."""
        return self.graph.simulate(self.target, {n: (r.schedule, r.time_us) for n, r in self.nodes.items()}, policy)


def _kernel_node(g: Graph, name: str, policy: str) -> Node:
    node = g.nodes.get(name)
    if node is None:
        raise ValueError(f"tune_graph: policy '{policy}' names no node '{name}'")
    return node


def _kernel_of(g: Graph, name: str) -> Workload:
    kernel = g.nodes[name].kernel
    if kernel is None:
        raise ValueError(f"tune_graph: '{name}' runs no kernel")
    return kernel


def _apply_fusion(g: Graph, group: Sequence[str], policy: str, taken: Dict[str, str]) -> None:
    """Fuses group (a kernel, then the ops after it along sole edges) into its first node."""
    if isinstance(group, str) or len(group) < 2:
        raise ValueError(f"tune_graph: policy '{policy}': a fusion group lists two nodes or more, got {group!r}")
    head = _kernel_node(g, group[0], policy)
    if head.kernel is None or head.fused_into is not None:
        raise ValueError(f"tune_graph: policy '{policy}': '{group[0]}' runs no kernel of its own to fuse into")
    for before, name in zip(group, group[1:]):
        node = _kernel_node(g, name, policy)
        between = [t for t in g.nodes[before].outputs if t in node.inputs]
        if (not between or not _joins(node) or node.fused_into is not None or name in taken
                or any(len(g.consumers(t)) != 1 or g.tensors[t].output for t in between)):
            raise ValueError(f"tune_graph: policy '{policy}': '{name}' cannot run inside '{group[0]}': it must be "
                             f"the only reader of '{before}', an epilogue step or an op with no kernel, and not "
                             "taken yet")
    fuse_into(g, group, policy)
    taken.update((name, policy) for name in group[1:])


def _ask_policies(g: Graph, target: Target, names: Optional[Sequence[str]], taken: Dict[str, str],
                  fixed: Dict[str, Schedule]) -> List[str]:
    with _lock:
        entries = sorted(_policies.values(), key=lambda e: (-e.priority, e.name))
    if names is not None:
        unknown = [n for n in names if n not in {e.name for e in entries}]
        if unknown:
            raise ValueError(f"tune_graph: field 'policies': unknown {unknown}; registered: {policy_names()}")
        entries = [e for e in entries if e.name in names]
    used = []
    for e in entries:
        free = [n for n in g.nodes if n not in taken and g.nodes[n].fused_into is None]
        sub = g.subgraph(free)
        if not free or not e.policy.can_apply(sub):
            continue
        decisions = e.policy.evaluate(sub) or {}
        if not isinstance(decisions, Mapping):
            raise TypeError(f"tune_graph: policy '{e.name}': evaluate must return a dict, not {type(decisions).__name__}")
        for group in decisions.get("fuse", []):
            _apply_fusion(g, group, e.name, taken)
        for name, values in dict(decisions.get("schedules", {})).items():
            node = _kernel_node(g, name, e.name)
            if node.kernel is None or name in taken or node.fused_into is not None:
                raise ValueError(f"tune_graph: policy '{e.name}': '{name}' has no free kernel to schedule")
            try:
                schedule = Schedule(dict(values))
                ok, reason = ScheduleSpace.of(node.kernel, target).check(schedule)
            except (TypeError, ValueError) as err:
                ok, reason = False, str(err)
            if not ok:
                raise ValueError(f"tune_graph: policy '{e.name}': schedule of '{name}' is not valid: {reason}")
            fixed[name] = schedule
            taken[name] = e.name
        used.append(e.name)
    return used


def _tune_rest(g: Graph, target: Target, rest: List[str], trials: int, strategy: str, db: str, seed: int,
               workdir: str) -> Dict[str, Dict[str, Any]]:
    """The job runner tunes the kernels no policy took: {node: task summary}."""
    if not rest:
        return {}
    spec = {"name": g.name, "target": target.to_json(), "trials": trials, "strategy": strategy, "seed": seed,
            "database": db, "export": os.path.join(workdir, f"{g.name}-table.json"),
            "report": os.path.join(workdir, f"{g.name}-report.html"),
            "workloads": [{"workload": _kernel_of(g, n).to_json(), "name": n, "weight": g.nodes[n].count}
                          for n in rest]}
    summary = run_job(spec)
    by_node: Dict[str, Dict[str, Any]] = {}
    for task in summary["tasks"]:
        for layer in task["nodes"]:
            by_node[layer["name"]] = task
    return by_node


def tune_graph(graph: Graph, target: Union[Target, str], trials: int = 64, *,
               policies: Optional[Sequence[str]] = None, fusion: Union[FusionScheduler, str, None] = "builtin",
               strategy: str = "model-guided", db: Optional[Union[str, "os.PathLike[str]"]] = None,
               seed: int = 0) -> GraphTuneResult:
    """Tunes every kernel of graph (left untouched) on target. First fusion: "builtin"
    (atvoss's own pass), a FusionScheduler, or None; then the registered policies (policies:
    the names to ask; None: all, by priority) on what is left; then the tuner for the rest,
    with trials in all (a job, tuner/job_runner.hpp; db: its database, default a temporary
    one). A schedule a policy fixes is measured once. Returns a GraphTuneResult."""
    if not isinstance(graph, Graph):
        raise TypeError(f"tune_graph: graph must be an atvoss.Graph, not {type(graph).__name__}")
    _check_int(trials, "trials", 1)
    t = as_target(target)
    if fusion == "builtin":
        g = FusionScheduler.builtin(graph).graph
    elif isinstance(fusion, FusionScheduler):
        g = fusion.schedule(graph).graph
    elif fusion is None:
        g = graph.copy()
    else:
        raise ValueError(f"tune_graph: field 'fusion' must be 'builtin', a FusionScheduler or None, got {fusion!r}")
    taken: Dict[str, str] = {}
    fixed: Dict[str, Schedule] = {}
    used = _ask_policies(g, t, policies, taken, fixed)
    kernels = g.kernels()
    rest = [n for n in kernels if n not in fixed]
    with tempfile.TemporaryDirectory(prefix="atvoss-graph-") as workdir:
        tuned = _tune_rest(g, t, rest, trials, strategy, os.fspath(db) if db else os.path.join(workdir, "tune.db"),
                           seed, workdir)
    results: Dict[str, NodeResult] = {}
    for n in kernels:
        kernel, count = _kernel_of(g, n), g.nodes[n].count
        fused = [m for m, other in g.nodes.items() if other.fused_into == n]
        if n in fixed:
            [m] = measure(kernel, t, fixed[n], seed=seed)
            if not m.ok:
                raise ValueError(f"tune_graph: policy '{taken[n]}': schedule of '{n}' failed: {m.status} {m.message}")
            results[n] = NodeResult(n, kernel, fixed[n], m.time_us, f"policy:{taken[n]}", fused, count)
        else:
            task = tuned[n]
            results[n] = NodeResult(n, kernel, Schedule(task["chosen_schedule"]), float(task["chosen_us"]),
                                    "tuner", fused, count)
    total = sum(r.time_us * r.count for r in results.values())
    not_tuned = [n for n, node in g.nodes.items() if node.kernel is None and node.fused_into is None]
    return GraphTuneResult(results, used, g, total, not_tuned, t)
