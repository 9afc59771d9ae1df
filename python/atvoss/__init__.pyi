# Type stub of the atvoss package (python/atvoss/); docstrings live in the .py files.
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import _atvoss as _atvoss
from . import quantization as quantization
from . import runtime as runtime

__version__: str

_PathLike = Union[str, os.PathLike[str]]
_WorkloadLike = Union["Workload", Mapping[str, Any], str]
_TargetLike = Union["Target", Mapping[str, Any], str]
_ScheduleLike = Union["Schedule", Mapping[str, int]]

class StrategyError(RuntimeError): ...

class Workload:
    def __init__(self, spec: Union[Mapping[str, Any], str, None] = ..., **fields: Any) -> None: ...
    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> Workload: ...
    def to_json(self) -> Dict[str, Any]: ...
    def for_target(self, target: Target) -> Workload: ...
    @property
    def key(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def dims(self) -> Dict[str, int]: ...
    @property
    def label(self) -> str: ...

class Target:
    def __init__(self, spec: Union[str, Mapping[str, Any]]) -> None: ...
    @staticmethod
    def presets() -> List[str]: ...
    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> Target: ...
    def to_json(self) -> Dict[str, Any]: ...
    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str: ...

class Schedule(Mapping[str, int]):
    def __init__(self, values: Union[Mapping[str, int], str, None] = ..., **knobs: int) -> None: ...
    @classmethod
    def from_json(cls, value: Union[Mapping[str, int], str]) -> Schedule: ...
    def to_json(self) -> Dict[str, int]: ...
    @property
    def key(self) -> str: ...
    def __getitem__(self, knob: str) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...

class ScheduleSpace:
    backend: str
    def __init__(self, description: Mapping[str, Any], _space: Any = ...) -> None: ...
    @classmethod
    def of(cls, workload: _WorkloadLike, target: _TargetLike) -> ScheduleSpace: ...
    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> ScheduleSpace: ...
    def to_json(self) -> Dict[str, Any]: ...
    @property
    def knobs(self) -> Dict[str, List[int]]: ...
    @property
    def size(self) -> int: ...
    def check(self, schedule: _ScheduleLike) -> Tuple[bool, str]: ...
    def default(self) -> Optional[Schedule]: ...

class Profile:
    compute_us: float
    dma_us: float
    sync_wait_us: float
    launch_us: float
    l1_hit_rate: float
    dma_utilisation: float
    cube_utilisation: float
    gm_bytes: float
    peak_workspace_bytes: float
    kernels: int

class Measurement:
    schedule: Schedule
    status: str
    time_us: float
    repeats: List[float]
    profile: Optional[Profile]
    message: str
    @property
    def ok(self) -> bool: ...
    def to_json(self) -> Dict[str, Any]: ...

class TuneResult:
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
    best: Optional[Measurement]
    objective: str
    higher_is_better: bool
    confirmed: int
    pick_changed: bool
    @property
    def speedup(self) -> float: ...
    @property
    def best_objective(self) -> float: ...

def tune(workload: _WorkloadLike, target: _TargetLike, trials: int = ..., strategy: Any = ...,
         db: _PathLike = ..., seed: int = ..., farm: Optional[str] = ...,
         progress: Optional[Callable[[Dict[str, Any]], None]] = ..., *, cost_model: str = ...,
         repeat: int = ..., batch_size: int = ..., early_stopping: int = ...,
         export: Optional[_PathLike] = ..., confirm_top: Optional[int] = ...,
         strategy_config: Optional[Mapping[str, Any]] = ...) -> TuneResult: ...
def run_job(spec_or_path: Union[Mapping[str, Any], _PathLike], quiet: bool = ...,
            progress: Optional[Callable[[Dict[str, Any]], None]] = ...) -> Dict[str, Any]: ...
def measure(workload: _WorkloadLike, target: _TargetLike,
            schedules: Union[_ScheduleLike, Iterable[_ScheduleLike], None] = ..., repeat: int = ...,
            seed: int = ..., noise: float = ...) -> List[Measurement]: ...
def tune_kernel_cache(path: _PathLike, strategies: Union[str, Sequence[str]] = ..., trials: int = ...,
                      seed: int = ..., db: _PathLike = ..., target: _TargetLike = ...) -> Dict[str, TuneResult]: ...
def zoo_model(name: str) -> List[Dict[str, Any]]: ...
def serve_worker(farm: str, targets: Sequence[Union[Target, str]], *, backends: Optional[Sequence[str]] = ...,
                 slots: int = ..., token_file: Optional[_PathLike] = ..., name: str = ..., noise: float = ...,
                 recorded_dirs: Sequence[_PathLike] = ...) -> int: ...

def columns(records: List[Dict[str, Any]]) -> Dict[str, Any]: ...

class Database:
    def __init__(self, path: _PathLike, read_only: bool = ...) -> None: ...
    @property
    def path(self) -> str: ...
    def best(self, workload: Any, target: Any, k: int = ...) -> List[Dict[str, Any]]: ...
    def history(self, workload: Any, target: Any = ...) -> List[Dict[str, Any]]: ...
    def query(self, target: Any = ..., workload: Any = ..., op: Optional[str] = ..., status: Optional[str] = ...,
              since: Optional[str] = ..., limit: int = ...) -> List[Dict[str, Any]]: ...
    def stats(self) -> Dict[str, Any]: ...
    def targets(self) -> List[Dict[str, Any]]: ...
    def export_table(self, target: Any, path: _PathLike) -> Dict[str, Any]: ...
    def export(self, path: _PathLike, target: Any = ..., op: Optional[str] = ...) -> int: ...
    def export_kernel_tuner_cache(self, path: _PathLike, workload: Any, target: Any,
                                  kernel_name: Optional[str] = ...) -> Dict[str, Any]: ...
    def import_(self, path: _PathLike) -> Dict[str, int]: ...
    def merge(self, other: _PathLike) -> Dict[str, int]: ...
    def models(self, target: Any) -> List[Dict[str, Any]]: ...
    def check(self) -> str: ...

class LookupResult:
    match: str
    schedule: Optional[Schedule]
    time_us: float
    distance: float
    workload: Optional[Workload]
    target: str
    @property
    def exact(self) -> bool: ...

class Table:
    header: Dict[str, Any]
    def __init__(self, path: _PathLike) -> None: ...
    def lookup(self, workload: Any) -> LookupResult: ...
    def __len__(self) -> int: ...

class Trial:
    schedule: Schedule
    status: str
    time_us: float
    @property
    def ok(self) -> bool: ...

class SearchStrategy:
    priority: int
    call_timeout_s: Optional[float]
    space: ScheduleSpace
    workload: Optional[Workload]
    target: Target
    seed: int
    def __init__(self, space: ScheduleSpace, workload: Optional[Workload], target: Target, seed: int) -> None: ...
    @classmethod
    def can_apply(cls, workload: Workload, target: Target) -> bool: ...
    def propose(self, n: int) -> Sequence[_ScheduleLike]: ...
    def update(self, trials: List[Trial]) -> None: ...
    def observe(self, trials: List[Trial]) -> None: ...

_S = TypeVar("_S", bound=Type[SearchStrategy])
def register_strategy(name: Optional[str] = ..., priority: Optional[int] = ...) -> Callable[[_S], _S]: ...
def unregister_strategy(name: str) -> bool: ...
def strategy_names() -> List[str]: ...

class Backend:
    name: str
    def serves(self, workload: Workload, target: Target) -> bool: ...
    def space(self, workload: Workload, target: Target) -> Mapping[str, Sequence[int]]: ...
    def check(self, workload: Workload, target: Target, schedule: Schedule) -> Optional[str]: ...
    def default(self, workload: Workload, target: Target) -> Optional[Mapping[str, int]]: ...
    def measure(self, workload: Workload, target: Target, schedule: Schedule,
                repeat: int) -> Union[float, Sequence[float]]: ...

_B = TypeVar("_B", bound=Backend)
def register_backend(backend: _B) -> _B: ...
def backend_names() -> List[str]: ...

_Constraint = Union[str, Callable[[Dict[str, Any]], bool]]

class OptimizerTrial:
    config: Dict[str, Any]
    value: Optional[float]
    error: str
    resumed: bool

class Optimizer:
    trials: List[OptimizerTrial]
    def __init__(self, space: Mapping[str, Sequence[Any]], *, constraints: Sequence[_Constraint] = ...,
                 strategy: str = ..., seed: int = ..., name: str = ..., db: Optional[_PathLike] = ...,
                 strategy_config: Optional[Mapping[str, Any]] = ...) -> None: ...
    def ask(self, n: int = ...) -> List[Dict[str, Any]]: ...
    def tell(self, configs: Sequence[Dict[str, Any]], results: Sequence[Any]) -> None: ...
    @property
    def best(self) -> Optional[OptimizerTrial]: ...
    @property
    def size(self) -> int: ...

def minimize(objective: Callable[..., float], space: Mapping[str, Sequence[Any]], trials: int, *,
             constraints: Sequence[_Constraint] = ..., strategy: str = ..., seed: int = ..., batch: int = ...,
             name: str = ..., db: Optional[_PathLike] = ...,
             strategy_config: Optional[Mapping[str, Any]] = ...) -> Optimizer: ...

class Client:
    base: str
    timeout: float
    def __init__(self, address: str, token: Optional[str] = ..., token_file: Optional[str] = ...,
                 timeout: float = ...) -> None: ...
    def best(self, workload: Any, target: Union[Target, str]) -> Dict[str, Any]: ...
    def stats(self) -> Dict[str, Any]: ...

class ProfiledOp:
    label: str
    workload: Workload
    schedule: Schedule
    time_us: float
    compute_us: float
    dma_us: float
    sync_wait_us: float
    launch_us: float
    share: float
    bottleneck: str
    hint: str

from .profiler import BottleneckOp, ProfileRecord

class Profiler:
    metrics: Tuple[str, ...]
    interval_us: int
    output_dir: Optional[str]
    measurements: List[Tuple[Workload, Target, Measurement]]
    records: List[ProfileRecord]
    timelines: List[Timeline]
    def __init__(self, collect: Optional[Sequence[str]] = ..., interval_us: int = ...,
                 output_dir: Optional[_PathLike] = ...) -> None: ...
    def __enter__(self) -> Profiler: ...
    def __exit__(self, *exc: Any) -> None: ...
    def report(self, top: int = ...) -> Dict[str, Any]: ...
    def summary(self, top: int = ...) -> str: ...
    def top_bottleneck_ops(self, k: int = ..., source: Optional[str] = ...) -> List[BottleneckOp]: ...
    def stats(self, top: int = ...) -> Dict[str, Any]: ...
    def trace_events(self) -> Dict[str, Any]: ...
    def write(self, output_dir: Optional[_PathLike] = ...) -> None: ...

class Tensor:
    name: str
    shape: Tuple[int, ...]
    dtype: str
    bytes: float
    constant: bool
    location: str
    output: bool

class Node:
    name: str
    op: str
    inputs: List[str]
    outputs: List[str]
    kernel: Optional[Workload]
    step: str
    count: int
    attributes: Dict[str, Any]
    fused_into: Optional[str]
    fused_by: str
    fusible_inputs: Dict[str, bool]

class Graph:
    name: str
    tensors: Dict[str, Tensor]
    nodes: Dict[str, Node]
    def __init__(self, name: str = ...) -> None: ...
    def tensor(self, name: str, shape: Sequence[int] = ..., dtype: str = ..., *, constant: bool = ...,
               location: str = ..., output: bool = ...) -> str: ...
    def op(self, name: str, kind: Union[str, Workload, Mapping[str, Any]], inputs: Iterable[str] = ...,
           outputs: Iterable[str] = ..., *, count: int = ..., **attributes: Any) -> str: ...
    def connect(self, src: str, dst: str, tensor: Optional[str] = ..., *, shape: Sequence[int] = ...,
                dtype: str = ..., location: str = ..., fusible: bool = ...) -> str: ...
    def producer(self, tensor: str) -> Optional[str]: ...
    def consumers(self, tensor: str) -> List[str]: ...
    def kernels(self) -> List[str]: ...
    def subgraph(self, names: Iterable[str]) -> Graph: ...
    def copy(self) -> Graph: ...
    def to_json(self) -> Dict[str, Any]: ...
    @classmethod
    def from_json(cls, j: Mapping[str, Any], name: str = ...) -> Graph: ...
    @classmethod
    def from_onnx(cls, path: _PathLike, batch: int = ...) -> Graph: ...
    def simulate(self, target: Union[str, Mapping[str, Any], Target],
                 choices: Optional[Mapping[str, Tuple[Mapping[str, int], float]]] = ...,
                 policy: str = ...) -> Timeline: ...

class TimelineNode:
    name: str
    op: str
    launched_us: float
    start_us: float
    end_us: float
    stream: int
    cores: List[int]

class Timeline:
    graph: str
    target: str
    policy: str
    nodes: List[TimelineNode]
    makespan_us: float
    serial_us: float
    critical_path: List[str]
    utilisation: float

class FusionRule:
    pattern: Tuple[str, ...]
    max_fusion_depth: int
    memory_budget: float
    name: str

class FusionResult:
    original_ops: int
    fused_ops: int
    groups: List[List[str]]
    rules: List[str]
    bandwidth_saved_bytes: float
    graph: Graph

class FusionScheduler:
    rules: List[FusionRule]
    def __init__(self) -> None: ...
    def add_rule(self, pattern: Sequence[str], max_fusion_depth: Optional[int] = ...,
                 memory_budget: Optional[float] = ..., name: Optional[str] = ...) -> FusionRule: ...
    def schedule(self, graph: Graph) -> FusionResult: ...
    @staticmethod
    def builtin(graph: Graph) -> FusionResult: ...

class NodeResult:
    node: str
    workload: Workload
    schedule: Schedule
    time_us: float
    chosen_by: str
    fused: List[str]
    count: int

class GraphTuneResult:
    nodes: Dict[str, NodeResult]
    policies: List[str]
    graph: Graph
    total_us: float
    not_tuned: List[str]
    target: Target
    def simulate(self, policy: str = ...) -> Timeline: ...

_P = TypeVar("_P", bound=type)

def register_policy(name: Optional[str] = ..., priority: int = ...) -> Callable[[_P], _P]: ...
def unregister_policy(name: str) -> bool: ...
def policy_names() -> List[str]: ...
def tune_graph(graph: Graph, target: Union[Target, str], trials: int = ..., *,
               policies: Optional[Sequence[str]] = ..., fusion: Union[FusionScheduler, str, None] = ...,
               strategy: str = ..., db: Optional[_PathLike] = ..., seed: int = ...) -> GraphTuneResult: ...
