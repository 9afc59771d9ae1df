"""Custom search policies in Python: subclass SearchStrategy, decorate it with
``@atvoss.register_strategy(name=..., priority=...)``, and name it in atvoss.tune or in a
job spec run by atvoss.run_job. The C++ side (python/src/bindings_strategies.cpp) puts it
in the strategy registry (search/strategy_registry.hpp) and checks every proposal, so a
faulty policy raises atvoss.StrategyError (with its traceback) and harms neither the tuner
nor the database.
"""
import random
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import _atvoss
from ._json import loads
from .vocabulary import Schedule, ScheduleSpace, Target, Workload

StrategyError = _atvoss.StrategyError
StrategyError.__doc__ = """A Python search policy failed: it raised (the message carries its traceback)
or broke the SearchStrategy contract (invalid, repeated or too many schedules). A RuntimeError."""


@dataclass(frozen=True)
class Trial:
    """One measured schedule as a strategy sees it: status "ok" or a candidate error
    ("invalid", "compile_error", ...), and time_us (meaningful only when ok)."""

    schedule: Schedule
    status: str
    time_us: float

    @property
    def ok(self) -> bool:
        """Whether the schedule ran correctly."""
        return self.status == "ok"


def _trials(items: Sequence[Tuple[Mapping[str, int], str, float]]) -> List[Trial]:
    return [Trial(Schedule(values), status, time_us) for values, status, time_us in items]


class SearchStrategy:
    """Base class of a Python search policy over one schedule space.

    Implement ``propose(n)`` (up to n new schedules: Schedules or dicts of knob values,
    each valid, distinct and never proposed or measured before) and ``update(trials)``
    (the results of the last proposal). ``observe(trials)`` receives schedules measured
    elsewhere (the database, on resume); by default it calls update. The class attributes
    / methods ``priority`` and ``can_apply(workload, target)`` rank and restrict the policy
    when tune is called with strategy="auto".

    The tuner constructs it as ``cls(space, workload, target, seed)``; ``self.space``,
    ``self.workload``, ``self.target`` and ``self.rng`` (a random.Random seeded with seed)
    are set by this base class.
    """

    priority: int = 0
    #: Seconds one call of propose, update or observe may take; past it the call is
    #: interrupted with TimeoutError and tune raises StrategyError naming the limit (a call
    #: blocked in C, e.g. time.sleep, is interrupted when it returns). None: no limit.
    call_timeout_s: Optional[float] = 60.0

    def __init__(self, space: ScheduleSpace, workload: Optional[Workload], target: Target, seed: int) -> None:
        self.space = space
        self.workload = workload
        self.target = target
        self.seed = seed
        self.rng = random.Random(seed)

    @classmethod
    def can_apply(cls, workload: Workload, target: Target) -> bool:
        """Whether this policy applies to (workload, target); default: everywhere."""
        return True

    def propose(self, n: int) -> Sequence[Union[Schedule, Mapping[str, int]]]:
        """Up to n new valid schedules to measure next."""
        raise NotImplementedError(f"{type(self).__name__}.propose")

    def update(self, trials: List[Trial]) -> None:
        """Results of the schedules last proposed (any order, maybe a subset)."""

    def observe(self, trials: List[Trial]) -> None:
        """Schedules measured elsewhere; by default treated like update."""
        self.update(trials)

    # Called by the C++ adapter; converts between its plain values and Trial / Schedule.
    def _atvoss_propose(self, n: int) -> List[Any]:  # the C++ adapter checks that each is a dict
        return [s.to_json() if isinstance(s, Schedule) else s for s in self.propose(n)]

    def _atvoss_update(self, items: Sequence[Tuple[Mapping[str, int], str, float]]) -> None:
        self.update(_trials(items))

    def _atvoss_observe(self, items: Sequence[Tuple[Mapping[str, int], str, float]]) -> None:
        if items:
            self.observe(_trials(items))


S = TypeVar("S", bound=Type[SearchStrategy])

# name -> registered class, for strategy="auto" (the C++ registry holds the factories).
_classes: Dict[str, Type[SearchStrategy]] = {}


def register_strategy(name: Optional[str] = None, priority: Optional[int] = None) -> Callable[[S], S]:
    """Class decorator: makes a SearchStrategy subclass usable by name (default: the class
    name) in atvoss.tune and in job specs. priority (default: the class's ``priority``)
    orders registered strategies for strategy="auto". Registering a name again replaces
    the earlier class; built-in names are refused (ValueError)."""

    def decorate(cls: S) -> S:
        if not (isinstance(cls, type) and issubclass(cls, SearchStrategy)):
            raise TypeError("register_strategy decorates a subclass of atvoss.SearchStrategy")
        if cls.propose is SearchStrategy.propose:  # else it would fail only when tune calls it
            raise TypeError(f"register_strategy: {cls.__name__} does not define propose(n)")
        strategy_name = name if name is not None else cls.__name__
        if not isinstance(strategy_name, str):
            raise TypeError("register_strategy: name must be a str")
        rank = cls.priority if priority is None else priority
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError("register_strategy: priority must be an int")

        def make(space: Any, workload_json: str, target_json: str, seed: int) -> SearchStrategy:
            w = loads(workload_json)
            workload = Workload(w) if w else None
            return cls(ScheduleSpace._wrap(space), workload, Target.from_json(target_json), seed)

        def can_apply(workload_json: str, target_json: str) -> bool:
            return bool(cls.can_apply(Workload(loads(workload_json)), Target.from_json(target_json)))

        _atvoss.register_strategy(strategy_name, rank, make, can_apply)
        _classes[strategy_name] = cls
        cls.priority = rank
        cls.strategy_name = strategy_name  # type: ignore[attr-defined]
        return cls

    return decorate


def unregister_strategy(name: str) -> bool:
    """Removes a registered strategy; False if none had that name."""
    _classes.pop(name, None)
    return bool(_atvoss.unregister_strategy(name))


def strategy_names() -> List[str]:
    """Every strategy name tune accepts: the built-ins, then the registered ones."""
    return list(_atvoss.strategy_names())


def resolve_strategy(strategy: Any, workload: Workload, target: Target) -> str:
    """The registry name tune passes on for a strategy given as a name, a registered class
    or "auto" (highest priority registered strategy that can_apply, else "model-guided")."""
    if isinstance(strategy, type) and issubclass(strategy, SearchStrategy):
        registered = getattr(strategy, "strategy_name", None)
        if registered is None:
            raise ValueError(f"strategy: {strategy.__name__} is not registered (use @atvoss.register_strategy)")
        return registered
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a name or a registered SearchStrategy class, not {type(strategy).__name__}")
    if strategy != "auto":
        return strategy
    ranked = sorted(_classes.items(), key=lambda item: (-item[1].priority, item[0]))
    for registered, cls in ranked:
        if cls.can_apply(workload, target):
            return registered
    return "model-guided"
