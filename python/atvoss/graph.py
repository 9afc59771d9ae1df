"""Graphs and fusion from Python, on the model graph of the C++ frontend (frontend/graph.hpp):
``atvoss.Graph`` holds ops and tensors (each with the memory it lives in) joined by
``connect``; ``atvoss.FusionScheduler`` fuses chains of ops by rules a user adds (a pattern,
a depth and an on-chip memory budget) and reports the op counts and the global-memory
traffic saved. A graph is built op by op or read from an ONNX model (``Graph.from_onnx``),
and ``FusionScheduler.builtin`` runs atvoss's own fusion pass (frontend/graph_fusion.hpp)
on it. Policies that take parts of a graph: python/atvoss/policy.py.

    g = atvoss.Graph("block")
    g.tensor("x", (128, 768))
    g.op("fc", {"op": "matmul", "dims": {"M": 128, "N": 3072, "K": 768}}, inputs=["x"])
    g.op("act", "gelu")
    g.connect("fc", "act", shape=(128, 3072))
    f = atvoss.FusionScheduler()
    f.add_rule(["matmul", "gelu"], max_fusion_depth=2, memory_budget=2 << 20)
    r = f.schedule(g)      # r.original_ops 2, r.fused_ops 1, r.bandwidth_saved_bytes 1572864

What the figures mean: docs/graph-python.md.
"""
import copy
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _atvoss
from ._json import dumps, loads
from .vocabulary import Target, Workload

# Bytes per element of the dtypes atvoss tunes (core/workload.hpp DType), and ONNX's names.
_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "float": 4, "int64": 8, "int32": 4,
                "uint8": 1, "double": 8}
# Where a tensor lives. Only "global" (the device's DRAM/HBM) costs traffic a fusion saves.
GLOBAL = "global"


@dataclass
class Tensor:
    """A tensor: its shape, dtype, bytes (from them), whether it is a constant (weights), the
    memory it lives in ("global", or an on-chip buffer such as "l1" or "ub") and whether it
    is a graph output (read after the graph runs: never fused away)."""

    name: str
    shape: Tuple[int, ...] = ()
    dtype: str = "float16"
    bytes: float = 0.0
    constant: bool = False
    location: str = GLOBAL
    output: bool = False

    def __post_init__(self) -> None:
        self.shape = tuple(self.shape)
        if not self.bytes and self.shape:
            self.bytes = _shape_bytes(self.shape, self.dtype)


@dataclass
class Node:
    """An op: its name, kind (a kernel's op such as "matmul", an epilogue step such as
    "relu", or a model's op type), its own kernel (a Workload) if it has one, the epilogue
    step it can be inside a producer's kernel, its tensors by name, and after fusion the
    node it runs inside."""

    name: str
    op: str
    inputs: List[str] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    kernel: Optional[Workload] = None
    step: str = ""
    count: int = 1
    attributes: Dict[str, Any] = field(default_factory=dict)
    fused_into: Optional[str] = None
    fused_by: str = ""
    fusible_inputs: Dict[str, bool] = field(default_factory=dict)  # connect(fusible=False)


# Ops a Graph takes as epilogue steps by name (lowering's activations and chain ops).
STEPS = ("relu", "relu6", "gelu", "sigmoid", "tanh", "silu", "hardswish", "leaky_relu", "add", "bias",
         "scale", "batchnorm", "layernorm")


def _shape_bytes(shape: Sequence[int], dtype: str) -> float:
    if not shape:
        return 0.0
    return float(math.prod(int(d) for d in shape) * _DTYPE_BYTES.get(dtype, 4))


class Graph:
    """A dataflow graph of ops and tensors (see the module doc). Names are unique; every
    tensor has at most one producer. Bad input raises ValueError or TypeError naming the
    argument."""

    def __init__(self, name: str = "graph") -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("Graph: name must be a non-empty str")
        self.name = name
        self.tensors: Dict[str, Tensor] = {}
        self.nodes: Dict[str, Node] = {}

    # --- building -----------------------------------------------------------------------
    def tensor(self, name: str, shape: Sequence[int] = (), dtype: str = "float16", *, constant: bool = False,
               location: str = GLOBAL, output: bool = False) -> str:
        """Adds (or redescribes) the tensor name and returns its name."""
        if not isinstance(name, str) or not name:
            raise TypeError("Graph.tensor: name must be a non-empty str")
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ValueError(f"Graph.tensor: field 'shape' of '{name}' must be ints >= 0, got {list(shape)}")
        if not isinstance(location, str) or not location:
            raise ValueError(f"Graph.tensor: field 'location' of '{name}' must be a memory name such as 'global'")
        self.tensors[name] = Tensor(name, tuple(shape), dtype, _shape_bytes(shape, dtype), constant, location, output)
        return name

    def add_tensor(self, tensor: Tensor) -> str:
        """Adds a Tensor object (the articles' ``Tensor(name, shape, location=...)``) and
        returns its name; the same as tensor() with its fields."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Graph.add_tensor: expected an atvoss.Tensor, not {type(tensor).__name__}")
        self.tensor(tensor.name, tensor.shape, tensor.dtype, constant=tensor.constant, location=tensor.location,
                    output=tensor.output)
        return tensor.name

    def create_op(self, name: str, kind: Union[str, Workload, Mapping[str, Any]], inputs: Iterable[Any] = (),
                  outputs: Iterable[Any] = (), **attributes: Any) -> str:
        """The articles' name for op(); inputs and outputs may be Tensor objects too."""
        return self.op(name, kind, [self._tensor_name(t) for t in inputs], [self._tensor_name(t) for t in outputs],
                       **attributes)

    def _tensor_name(self, t: Any) -> str:
        return self.add_tensor(t) if isinstance(t, Tensor) else t

    def op(self, name: str, kind: Union[str, Workload, Mapping[str, Any]], inputs: Iterable[str] = (),
           outputs: Iterable[str] = (), *, count: int = 1, **attributes: Any) -> str:
        """Adds an op and returns its name. kind: a Workload (or its dict) for an op with a
        kernel of its own; an epilogue step ("relu", "gelu", "add", "batchnorm", ...: it can
        run inside its producer's kernel); any other str for an op atvoss does not tune.
        Tensors named in inputs/outputs that do not exist yet are added (facts unknown); with
        no outputs, the op writes "<name>:out" (the tensor connect(name, ...) uses)."""
        if not isinstance(name, str) or not name:
            raise TypeError("Graph.op: name must be a non-empty str")
        if name in self.nodes:
            raise ValueError(f"Graph.op: an op named '{name}' exists already")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"Graph.op: field 'count' of '{name}' must be an int >= 1 (the times it runs), "
                             f"got {count!r}")
        node = Node(name, "", count=count, attributes=dict(attributes))
        if isinstance(kind, (Workload, Mapping)):
            node.kernel = kind if isinstance(kind, Workload) else Workload(kind)
            node.op = node.kernel.op
        elif isinstance(kind, str) and kind:
            node.op = kind
            node.step = kind if kind in STEPS else ""
        else:
            raise TypeError(f"Graph.op: kind of '{name}' must be a Workload, a dict or an op name")
        self.nodes[name] = node
        for t in inputs:
            self._attach(name, t, as_output=False)
        for t in list(outputs) or [f"{name}:out"]:
            self._attach(name, t, as_output=True)
        return name

    def connect(self, src: str, dst: Union[str, Sequence[Any]], tensor: Any = None, *, shape: Sequence[int] = (),
                dtype: str = "float16", location: str = GLOBAL, fusible: bool = True,
                constraints: Optional[Mapping[str, Any]] = None) -> str:
        """Joins op src to op dst through a tensor (named tensor, else "src:out") that src
        writes and dst reads, and returns its name. Constraints: location, the memory the
        tensor lives in (on chip, it costs no global traffic; a fusion then saves none);
        fusible=False, src and dst never run in one kernel.

        The articles' form ``connect(op, inputs, out, constraints={...})`` (inputs a list)
        gives op its input tensors and its output tensor instead (names or Tensor objects);
        constraints may hold "location" (of out) and "fusible" (False: op never fuses with
        the producers of its inputs). Returns out's name."""
        if not isinstance(dst, str) and isinstance(dst, Sequence):
            return self._connect_op(src, dst, tensor, dict(constraints or {}))
        if constraints is not None:
            location = constraints.get("location", location)
            fusible = constraints.get("fusible", fusible)
        for n, what in ((src, "src"), (dst, "dst")):
            if n not in self.nodes:
                raise ValueError(f"Graph.connect: field '{what}': no op named '{n}'")
        t = tensor or f"{src}:out"
        self._rename_placeholder(src, t)
        if t not in self.tensors or shape:
            self.tensor(t, shape, dtype, location=location)
        else:
            self.tensors[t].location = location
        if t not in self.nodes[src].outputs:
            self._attach(src, t, as_output=True)
        if t not in self.nodes[dst].inputs:
            self._attach(dst, t, as_output=False)
        self.nodes[dst].fusible_inputs[t] = bool(fusible)
        return t

    def _connect_op(self, op: str, inputs: Sequence[Any], out: Any, constraints: Dict[str, Any]) -> str:
        if op not in self.nodes:
            raise ValueError(f"Graph.connect: field 'op': no op named '{op}'")
        unknown = sorted(set(constraints) - {"location", "fusible"})
        if unknown:
            raise ValueError(f"Graph.connect: field 'constraints': unknown key(s) {unknown}; allowed: location, fusible")
        if out is None:
            raise ValueError("Graph.connect: field 'out': name the tensor the op writes")
        node = self.nodes[op]
        for t in inputs:
            name = self._tensor_name(t)
            if name not in node.inputs:
                self._attach(op, name, as_output=False)
            node.fusible_inputs[name] = bool(constraints.get("fusible", True))
        name = self._tensor_name(out)
        self._rename_placeholder(op, name)
        if name not in self.tensors:
            self.tensor(name)
        if "location" in constraints:
            self.tensors[name].location = str(constraints["location"])
        if name not in node.outputs:
            self._attach(op, name, as_output=True)
        return name

    def _rename_placeholder(self, src: str, t: str) -> None:
        """Naming the edge of an op whose only output is still the "<src>:out" that op()
        made up (read by nobody): that output becomes t, so src keeps one output and stays
        fusible, as the articles' connect(op, inputs, out) expects."""
        placeholder = f"{src}:out"
        node = self.nodes[src]
        if t == placeholder or node.outputs != [placeholder] or self.consumers(placeholder):
            return
        if t in self.tensors and self.producer(t) not in (None, src):
            return  # written by another op: _attach names the conflict
        old = self.tensors.pop(placeholder)
        node.outputs = [t]
        if t not in self.tensors:
            self.tensors[t] = Tensor(t, old.shape, old.dtype, old.bytes, old.constant, old.location, old.output)

    def _attach(self, node: str, t: str, as_output: bool) -> None:
        if not isinstance(t, str) or not t:
            raise TypeError(f"Graph.op: tensors of '{node}' must be names")
        if t not in self.tensors:
            self.tensor(t)
        if as_output:
            other = self.producer(t)
            if other is not None and other != node:
                raise ValueError(f"Graph: tensor '{t}' is written by both '{other}' and '{node}'")
            self.nodes[node].outputs.append(t)
        else:
            self.nodes[node].inputs.append(t)

    # --- reading ------------------------------------------------------------------------
    def producer(self, tensor: str) -> Optional[str]:
        """The op writing tensor, or None (a graph input or a constant)."""
        return next((n.name for n in self.nodes.values() if tensor in n.outputs), None)

    def consumers(self, tensor: str) -> List[str]:
        """The ops reading tensor, in graph order."""
        return [n.name for n in self.nodes.values() if tensor in n.inputs]

    def kernels(self) -> List[str]:
        """The ops that run a kernel of their own: with a kernel and not fused into another."""
        return [n.name for n in self.nodes.values() if n.kernel is not None and n.fused_into is None]

    def subgraph(self, names: Iterable[str]) -> "Graph":
        """The ops named and the tensors they touch, as a graph of its own (a copy)."""
        sub = Graph(self.name)
        for name in names:
            node = copy.deepcopy(self.nodes[name])
            sub.nodes[name] = node
            for t in node.inputs + node.outputs:
                sub.tensors[t] = copy.deepcopy(self.tensors[t])
        return sub

    def copy(self) -> "Graph":
        """A deep copy."""
        return copy.deepcopy(self)

    # --- the C++ graph --------------------------------------------------------------------
    def to_json(self) -> Dict[str, Any]:
        """The frontend's graph JSON (frontend/graph_json.hpp)."""
        tensors = [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "bytes": t.bytes,
                    "constant": t.constant, "output": t.output} for t in self.tensors.values()]
        nodes = [{"name": n.name, "op": n.op, "inputs": n.inputs, "outputs": n.outputs,
                  "kernel": n.kernel.to_json() if n.kernel else None, "step": n.step, "count": n.count,
                  "fused_into": n.fused_into, "fused_by": n.fused_by} for n in self.nodes.values()]
        return {"tensors": tensors, "nodes": nodes}

    @classmethod
    def from_json(cls, j: Mapping[str, Any], name: str = "graph") -> "Graph":
        """A Graph from the frontend's graph JSON (locations: global)."""
        g = cls(name)
        for t in j.get("tensors", []):
            g.tensors[t["name"]] = Tensor(t["name"], tuple(t.get("shape", ())), t.get("dtype") or "float16",
                                          float(t.get("bytes", 0)), bool(t.get("constant")), GLOBAL,
                                          bool(t.get("output")))
        for n in j.get("nodes", []):
            g.nodes[n["name"]] = Node(n["name"], n["op"], list(n.get("inputs", [])), list(n.get("outputs", [])),
                                      Workload(n["kernel"]) if n.get("kernel") else None, n.get("step", ""),
                                      int(n.get("count", 1)), dict(n.get("attributes") or {}),
                                      n.get("fused_into"), n.get("fused_by", ""))
        return g

    @classmethod
    def from_onnx(cls, path: Union[str, "os.PathLike[str]"], batch: int = 1) -> "Graph":
        """The graph of an ONNX model as atvoss's frontend reads it, before any fusion: each
        node with its own kernel, its epilogue step, or why it is not tuned."""
        p = os.fspath(path)
        if not os.path.exists(p):
            raise FileNotFoundError(f"Graph.from_onnx: no such file: '{p}'")
        return cls.from_json(loads(_atvoss.onnx_graph(p, int(batch), False)),
                             os.path.splitext(os.path.basename(p))[0])

    def simulate(self, target: Union[str, Mapping[str, Any], "Target"],
                 choices: Optional[Mapping[str, Tuple[Mapping[str, int], float]]] = None,
                 policy: str = "critical_path") -> "Timeline":
        """Runs the graph on target's device with the execution simulator (docs/execution.md):
        a kernel in choices ({node: (schedule, time_us)}) costs that time on the cores and
        unit its schedule's plan holds; a kernel not in choices runs its backend's default
        schedule, measured noise-free (once per distinct workload); any other op its
        fallback time from its bytes on every vector core. policy: "critical_path" (the
        ready queue by upward rank) or "topological" (graph order). Open Profilers collect
        the timeline (source "graph")."""
        from .vocabulary import as_target
        from . import profiler as _profiling

        t = as_target(target)
        unknown = [n for n in (choices or {}) if n not in self.nodes or self.nodes[n].kernel is None]
        if unknown:
            raise ValueError(f"simulate: field 'choices' names no kernel of this graph: {unknown}")
        chosen = {n: {"schedule": dict(s), "time_us": float(us)} for n, (s, us) in (choices or {}).items()}
        chosen.update(self._defaults(t, [n for n in self.kernels() if n not in chosen]))
        j = loads(_atvoss.simulate_graph(dumps(self.to_json()), t._arg(), dumps(chosen), policy))
        timeline = Timeline(self.name, t.name, policy, [TimelineNode(**n) for n in j["nodes"]],
                            float(j["makespan_us"]), float(j["serial_us"]), list(j["critical_path"]),
                            float(j["utilisation"]))
        _profiling.collect_timeline(timeline)
        return timeline

    def _defaults(self, target: "Target", names: List[str]) -> Dict[str, Dict[str, Any]]:
        """{node: {"schedule", "time_us"}} for kernels run at their backend's default
        schedule, each distinct workload measured once, noise-free (none for a workload
        whose backend has no default, or whose default fails: those keep the fallback)."""
        out: Dict[str, Dict[str, Any]] = {}
        timed: Dict[str, Optional[Dict[str, Any]]] = {}
        for name in names:
            w = self.nodes[name].kernel
            assert w is not None
            w = w.for_target(target)
            if w.key not in timed:
                timed[w.key] = None
                text = _atvoss.default_schedule(dumps(w.to_json()), target._arg())
                if text is not None:
                    r = loads(_atvoss.measure(dumps(w.to_json()), target._arg(), "[" + text + "]", 1, 0, 0.0))
                    m = r["measurements"][0]
                    if m["status"] == "ok":
                        timed[w.key] = {"schedule": loads(text), "time_us": float(m["time_us"])}
            if timed[w.key] is not None:
                out[name] = timed[w.key]  # type: ignore[assignment]
        return out

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.nodes)} ops, {len(self.tensors)} tensors)"


@dataclass(frozen=True)
class TimelineNode:
    """One kernel of a simulated run: when its launch was issued, when it ran, the stream
    (lane) it ran on, the core (or engine) indices it held, what it ran on ("cube",
    "vector", "copy" or "comm" engines) and the device (execution/scheduler.hpp)."""

    name: str
    op: str
    launched_us: float
    start_us: float
    end_us: float
    stream: int
    cores: List[int]
    unit: str = "vector"
    device: int = 0


@dataclass(frozen=True)
class Timeline:
    """A graph run on its device by the execution simulator: per kernel its TimelineNode,
    the makespan, the serial sum of the same kernels, the critical path (node names) and the
    share of the cores' time kept busy."""

    graph: str
    target: str
    policy: str
    nodes: List[TimelineNode]
    makespan_us: float
    serial_us: float
    critical_path: List[str]
    utilisation: float


@dataclass(frozen=True)
class FusionRule:
    """A chain a FusionScheduler fuses: pattern[0] is the first op's kind (a kernel's op,
    such as "conv2d", or "*" for any kernel), the rest are the ops after it in order, in the
    grammar of the C++ fusion rules (lowering/fusion_rules.hpp: "a|b" either, "*" any op,
    "a+" one or more); at most max_fusion_depth ops in all; no intermediate tensor over
    memory_budget bytes."""

    pattern: Tuple[str, ...]
    max_fusion_depth: int
    memory_budget: float
    name: str
    tile_size: Optional[int] = None  # elements of an intermediate kept on chip at a time (None: all of it)

    def footprint(self, t: "Tensor") -> float:
        """The on-chip bytes an intermediate takes inside the fused kernel."""
        if self.tile_size is None or not t.shape:
            return t.bytes
        return min(t.bytes, self.tile_size * t.bytes / max(1, math.prod(t.shape)))


@dataclass
class FusionResult:
    """What a fusion schedule did: ops before and after (an op fused into another's kernel
    no longer counts), the groups (each a kernel op and the ops fused into it, in order), the
    rule of each group, the global-memory traffic saved (each intermediate tensor in global
    memory no longer written and read back: 2 x its bytes), and the fused graph."""

    original_ops: int
    fused_ops: int
    groups: List[List[str]]
    rules: List[str]
    bandwidth_saved_bytes: float
    graph: Graph


def fuse_into(g: Graph, group: Sequence[str], by: str) -> None:
    """Marks the ops of group after the first as running inside the first's kernel (fused_by:
    by); when they are all epilogue steps, they widen that kernel's epilogue, so a tuner
    tunes the fused kernel (as the built-in pass does)."""
    head = g.nodes[group[0]]
    for name in group[1:]:
        g.nodes[name].fused_into, g.nodes[name].fused_by = group[0], by
    steps = [g.nodes[n].step for n in group[1:]]
    if head.kernel is not None and all(steps):
        j = head.kernel.to_json()
        j["epilogue"] = list(j.get("epilogue", [])) + steps
        head.kernel = Workload(j)


def _joins(node: Node) -> bool:
    """Whether node can run inside another op's kernel: it is an epilogue step (its own
    kernel, as an ONNX Relu has, is then not needed) or has no kernel of its own."""
    return bool(node.step) or node.kernel is None


def _names(node: Node) -> List[str]:
    """The kinds a node goes by in a pattern: its own name for it ("Relu" in an ONNX graph),
    its epilogue step ("relu") and its kernel's op ("conv2d")."""
    names = [n for n in (node.op, node.step) if n]
    return names + ([node.kernel.op] if node.kernel is not None else [])


def _saved_bytes(g: Graph, groups: List[List[str]]) -> float:
    saved = 0.0
    for group in groups:
        members = set(group)
        for name in group[:-1]:
            for t in g.nodes[name].outputs:
                tensor = g.tensors[t]
                if tensor.location == GLOBAL and all(c in members for c in g.consumers(t)):
                    saved += 2 * tensor.bytes
    return saved


def _result(original: Graph, fused: Graph, groups: List[List[str]], rules: List[str]) -> FusionResult:
    ops = len(original.nodes)
    return FusionResult(ops, ops - sum(len(g) - 1 for g in groups), groups, rules, _saved_bytes(original, groups),
                        fused)


# A rule with a repeating step ("relu|gelu+") and no max_fusion_depth: no limit but the graph's.
_NO_DEPTH_LIMIT = 1 << 30

# The articles' add_rule(pattern, config): on-chip capacities an l1_preference picks as the
# memory budget when the config gives none (Ascend 910's L1 and unified buffer).
L1_BYTES = 1 << 20
UB_BYTES = 256 << 10


class FusionScheduler:
    """Fuses chains of ops by the rules added, in the order added (see add_rule). graph: the
    graph schedule() fuses when it is given none (the articles' FusionScheduler(graph))."""

    def __init__(self, graph: Optional[Graph] = None) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"FusionScheduler: graph must be an atvoss.Graph, not {type(graph).__name__}")
        self.graph = graph
        self.rules: List[FusionRule] = []

    def add_rule(self, pattern: Sequence[str], max_fusion_depth: Union[int, Mapping[str, Any], None] = None,
                 memory_budget: Optional[float] = None, name: Optional[str] = None) -> FusionRule:
        """Adds a rule. pattern: the op kinds of a chain, first the kernel's ("conv2d",
        "matmul", or "*" for any kernel), then the ops fused after it, in order ("batchnorm",
        "relu", ...); a step may be "a|b" (either), "*" (any op) or end in "+" (one or more
        such ops in a row), the grammar of the fusion rules a job declares
        (docs/job-spec.md); a chain fuses the longest prefix of the pattern it follows (two
        ops at least). max_fusion_depth: most ops in one fused group (default: the pattern's
        length, or no limit when a step repeats). memory_budget: bytes an intermediate tensor may take, since the fused kernel
        keeps it on chip (default: no limit). A chain also stops at a tensor read by more
        than one op, a graph output, or an edge connected with fusible=False.

        The articles' form ``add_rule(pattern, config)`` (a dict second) takes
        "max_fusion_depth", "memory_budget", "name", "tile_size" (elements of an
        intermediate the fused kernel keeps on chip at a time: its footprint is that many
        elements, not the whole tensor) and "l1_preference" (True: the budget is L1_BYTES,
        False: UB_BYTES, unless memory_budget is given)."""
        tile_size: Optional[int] = None
        if isinstance(max_fusion_depth, Mapping):
            config = dict(max_fusion_depth)
            unknown = sorted(set(config) - {"max_fusion_depth", "memory_budget", "name", "tile_size", "l1_preference"})
            if unknown:
                raise ValueError(f"add_rule: field 'config': unknown key(s) {unknown}")
            max_fusion_depth, name = config.get("max_fusion_depth"), config.get("name", name)
            memory_budget = config.get("memory_budget")
            if memory_budget is None and "l1_preference" in config:
                memory_budget = L1_BYTES if config["l1_preference"] else UB_BYTES
            tile_size = config.get("tile_size")
            if tile_size is not None and (isinstance(tile_size, bool) or not isinstance(tile_size, int) or tile_size < 1):
                raise ValueError(f"add_rule: field 'tile_size' must be an int >= 1 (elements), got {tile_size!r}")
        if isinstance(pattern, str) or len(pattern) < 2 or not all(isinstance(p, str) and p for p in pattern):
            raise ValueError("add_rule: field 'pattern' must list at least two op kinds, e.g. ['conv2d', 'relu']")
        _atvoss.check_fusion_pattern(list(pattern), "add_rule")
        repeating = any(p.endswith("+") for p in pattern)
        depth = (_NO_DEPTH_LIMIT if repeating else len(pattern)) if max_fusion_depth is None else max_fusion_depth
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
            raise ValueError(f"add_rule: field 'max_fusion_depth' must be an int >= 2, got {max_fusion_depth!r}")
        budget = math.inf if memory_budget is None else memory_budget
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
            raise ValueError(f"add_rule: field 'memory_budget' must be a number of bytes > 0, got {memory_budget!r}")
        rule = FusionRule(tuple(pattern), depth, float(budget), name or "+".join(pattern), tile_size)
        self.rules.append(rule)
        return rule

    def schedule(self, graph: Optional[Graph] = None) -> FusionResult:
        """Fuses graph (default: the one given to the constructor; left untouched) by the
        rules and returns the FusionResult."""
        graph = graph if graph is not None else self.graph
        if graph is None:
            raise ValueError("schedule: field 'graph' is required: the FusionScheduler was given none")
        if not self.rules:
            raise ValueError("schedule: no rule: call add_rule first (or FusionScheduler.builtin)")
        fused = graph.copy()
        groups: List[List[str]] = []
        rules: List[str] = []
        for name in list(fused.nodes):
            node = fused.nodes[name]
            if node.fused_into is not None or node.kernel is None:
                continue
            for rule in self.rules:
                chain = self._chain(fused, name, rule)
                if len(chain) >= 2:
                    fuse_into(fused, chain, rule.name)
                    groups.append(chain)
                    rules.append(rule.name)
                    break
        return _result(graph, fused, groups, rules)

    @staticmethod
    def _chain(g: Graph, start: str, rule: FusionRule) -> List[str]:
        """The ops from start that the rule fuses: the run of ops that could join start's
        kernel (each the sole reader of the last one's sole output, within the memory budget,
        not yet fused, on a fusible edge), cut to the prefix the rule's pattern matches (the
        fusion rules' own grammar, lowering/fusion_rules.hpp: "a|b", "*", "a+")."""
        chain = [start]
        while len(chain) < rule.max_fusion_depth:
            outputs = g.nodes[chain[-1]].outputs
            if len(outputs) != 1:
                break
            t = g.tensors[outputs[0]]
            readers = g.consumers(t.name)
            if t.output or len(readers) != 1 or rule.footprint(t) > rule.memory_budget:
                break
            nxt = g.nodes[readers[0]]
            if nxt.fused_into is not None or not _joins(nxt) or not nxt.fusible_inputs.get(t.name, True):
                break
            chain.append(nxt.name)
        names = [_names(g.nodes[n]) for n in chain]
        return chain[:_atvoss.fusion_pattern_prefix(list(rule.pattern), names)]

    @staticmethod
    def builtin(graph: Graph) -> FusionResult:
        """atvoss's own fusion pass (frontend/graph_fusion.hpp: conv and matmul epilogues,
        folding into weights, SiLU, ...) on graph, with the same figures. Its chains widen
        the kernels' epilogues, so the fused graph's kernels are what a tuner would tune. It
        sees no tensor locations and no fusible=False edges (the C++ graph has neither); the
        bandwidth figure still counts only tensors in global memory."""
        fused = Graph.from_json(loads(_atvoss.fuse_graph(dumps(graph.to_json()))), graph.name)
        for name, node in fused.nodes.items():  # keep what the C++ graph does not carry
            node.fusible_inputs = dict(graph.nodes[name].fusible_inputs)
        for t in fused.tensors.values():
            t.location = graph.tensors[t.name].location
        order = list(fused.nodes)
        groups: Dict[str, List[str]] = {}
        rules: Dict[str, str] = {}
        for name in order:
            into = fused.nodes[name].fused_into
            if into is not None:
                groups.setdefault(into, [into]).append(name)
                rules.setdefault(into, fused.nodes[name].fused_by)
        heads = [h for h in order if h in groups]
        return _result(graph, fused, [groups[h] for h in heads], [rules[h] for h in heads])
