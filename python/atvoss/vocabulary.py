"""The vocabulary of atvoss as Python objects: Workload, Target, Schedule, ScheduleSpace.

Each wraps the canonical JSON of its C++ counterpart (core/*.hpp), so equality, keys and
JSON round-trips agree with the command-line tools and the database.
"""
import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from . import _atvoss
from ._json import dumps, loads, parse_text, read_input_file


def _json_arg(value: Any, field: str) -> Any:
    """A dict, or JSON text, or a file holding JSON, as a Python value; TypeError otherwise."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        text = value
        if not value.lstrip().startswith(("{", "[")) and os.path.exists(value):
            text = read_input_file(value, field)
        return parse_text(text, field)
    raise TypeError(f"{field} must be a dict, JSON text or a file path, not {type(value).__name__}")


class Workload:
    """One operator instance: op name, dims, dtype and fused epilogue (core/workload.hpp).

    Build it from a dict, JSON text or a file: ``Workload({"op": "matmul", "dims": {...}})``
    or with keywords: ``Workload(op="matmul", dims={"M": 512, "N": 512, "K": 512})``.
    Bad fields raise ValueError naming the field. The dtype defaults to float16, the NPU's;
    tune, measure and ScheduleSpace.of take a workload without a dtype as float32 on a CPU
    target (``for_target``), the type the host's kernels compute in.
    """

    __slots__ = ("_json", "_key", "_label", "_dtype_given")

    def __init__(self, spec: Union[Mapping[str, Any], str, None] = None, **fields: Any) -> None:
        if spec is None:
            spec = fields
        elif fields:
            raise TypeError("Workload: give a spec or keyword fields, not both")
        value = _json_arg(spec, "workload")
        self._dtype_given = not isinstance(value, Mapping) or "dtype" in value
        text, self._key, self._label = _atvoss.canonical_workload(dumps(value))
        self._json = loads(text)

    def for_target(self, target: "Target") -> "Workload":
        """This workload as it runs on target: on a CPU target (organisation "cpu"), float32
        when no dtype was given; otherwise itself."""
        if self._dtype_given or target.to_json().get("organisation") != "cpu":
            return self
        return Workload({**self._json, "dtype": "float32"})

    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> "Workload":
        """A Workload from a dict or JSON text."""
        return cls(value)

    def to_json(self) -> Dict[str, Any]:
        """The canonical JSON (defaults filled in) as a dict."""
        return json.loads(dumps(self._json))

    @property
    def key(self) -> str:
        """The stable key the database and lookup tables index by."""
        return self._key

    @property
    def op(self) -> str:
        """The operator name, e.g. "conv2d"."""
        return self._json["op"]

    @property
    def dims(self) -> Dict[str, int]:
        """The dims, e.g. {"M": 512, ...} (empty for recorded spaces)."""
        return dict(self._json.get("dims", {}))

    @property
    def label(self) -> str:
        """A short human-readable description."""
        return self._label

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workload) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Workload({dumps(self._json)})"


class Target:
    """A hardware target (core/target.hpp): a preset name ("ascend910", "ascend910b",
    "ascend310", "mlu370"), a hardware description file (a Target JSON or the seed format of
    docs/hardware-facts.md section 4), or a dict / JSON text such as
    ``{"preset": "ascend910b", "ai_cores": 20}``. ``Target.presets()`` lists the presets.
    """

    __slots__ = ("_json", "_key", "_name")

    def __init__(self, spec: Union[str, Mapping[str, Any]]) -> None:
        if isinstance(spec, Mapping):
            spec = dumps(dict(spec))
        elif not isinstance(spec, str):
            raise TypeError(f"target must be a preset name, a file, a dict or JSON text, not {type(spec).__name__}")
        text, self._key, self._name = _atvoss.load_target(spec)
        self._json = loads(text)

    @staticmethod
    def presets() -> List[str]:
        """Names of the built-in targets."""
        return list(_atvoss.target_names())

    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> "Target":
        """A Target from its full JSON description (a dict or JSON text)."""
        return cls(_json_arg(value, "target"))

    def to_json(self) -> Dict[str, Any]:
        """The full description as a dict; Target.from_json(t.to_json()) == t."""
        return json.loads(dumps(self._json))

    @property
    def name(self) -> str:
        """The target's name, e.g. "ascend910b"."""
        return self._name

    @property
    def key(self) -> str:
        """The stable key records of this target are stored under."""
        return self._key

    def _arg(self) -> str:
        return dumps(self._json)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Target({self._name!r}, key={self._key!r})"


class Schedule(Mapping[str, int]):
    """Knob values of one schedule, e.g. ``Schedule(tile_m=64, tile_n=128)``; a read-only
    mapping from knob name to int (core/schedule.hpp).
    """

    __slots__ = ("_values",)

    def __init__(self, values: Union[Mapping[str, int], str, None] = None, **knobs: int) -> None:
        if values is None:
            values = knobs
        elif knobs:
            raise TypeError("Schedule: give a mapping or keyword knobs, not both")
        raw = _json_arg(values, "schedule")
        if not isinstance(raw, dict):
            raise TypeError("schedule must be a mapping of knob names to ints")
        for k, v in raw.items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"schedule: knob '{k}' must be an int, not {type(v).__name__}")
            if not -(2**63) <= v < 2**63:
                raise ValueError(f"schedule: knob '{k}' must fit in a 64-bit integer, got {v}")
        self._values = loads(_atvoss.canonical_schedule(dumps(raw)))

    @classmethod
    def from_json(cls, value: Union[Mapping[str, int], str]) -> "Schedule":
        """A Schedule from a dict or JSON text."""
        return cls(value)

    def to_json(self) -> Dict[str, int]:
        """The knob values as a plain dict."""
        return dict(self._values)

    @property
    def key(self) -> str:
        """The stable key the database de-duplicates by."""
        return _atvoss.schedule_key(dumps(self._values))

    def __getitem__(self, knob: str) -> int:
        return self._values[knob]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Schedule):
            return other._values == self._values
        return isinstance(other, Mapping) and dict(other) == self._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        return "Schedule(" + ", ".join(f"{k}={v}" for k, v in self._values.items()) + ")"


class ScheduleSpace:
    """The knobs and values of one (workload, target) and their validity check
    (core/schedule_space.hpp). ``ScheduleSpace.of(workload, target)`` asks the backend that
    serves the pair; ``space.check(schedule)`` says whether a schedule is valid and why not.
    A space read back with from_json has knobs only: check and default need ``of``.
    """

    __slots__ = ("_json", "_space", "backend")

    def __init__(self, description: Mapping[str, Any], _space: Any = None) -> None:
        self._json = dict(description)
        if "knobs" not in self._json:
            raise ValueError("schedule space: field 'knobs' is missing")
        self._space = _space
        self.backend = _space.backend if _space is not None else ""

    @classmethod
    def of(cls, workload: Union[Workload, Mapping[str, Any], str],
           target: Union[Target, str, Mapping[str, Any]]) -> "ScheduleSpace":
        """The space of workload on target."""
        t = as_target(target)
        return cls._wrap(_atvoss.Space.of(dumps(as_workload(workload, t).to_json()), t._arg()))

    @classmethod
    def _wrap(cls, space: Any) -> "ScheduleSpace":
        return cls(loads(space.describe()), space)

    @classmethod
    def from_json(cls, value: Union[Mapping[str, Any], str]) -> "ScheduleSpace":
        """A space from its description {"knobs": [{"name":..,"values":[..]}], "size": n}."""
        return cls(_json_arg(value, "space"))

    def to_json(self) -> Dict[str, Any]:
        """The description as a dict."""
        return json.loads(dumps(self._json))

    @property
    def knobs(self) -> Dict[str, List[int]]:
        """Knob name -> its ordered values."""
        return {k["name"]: list(k["values"]) for k in self._json["knobs"]}

    @property
    def size(self) -> int:
        """Number of points (valid or not)."""
        return int(self._json.get("size", 0))

    def check(self, schedule: Union[Schedule, Mapping[str, int]]) -> Tuple[bool, str]:
        """(ok, reason): whether schedule is valid here; ValueError for unknown knobs."""
        if self._space is None:
            raise ValueError("check: this space was read from JSON; use ScheduleSpace.of(workload, target)")
        values = schedule.to_json() if isinstance(schedule, Schedule) else schedule
        if not isinstance(values, Mapping):
            raise TypeError("check: schedule must be a Schedule or a mapping of knob values")
        return self._space.check(values)

    def default(self) -> Optional[Schedule]:
        """The vendor-style default schedule, or None where the backend has none."""
        values = None if self._space is None else self._space.default()
        return None if values is None else Schedule(values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScheduleSpace) and other._json["knobs"] == self._json["knobs"]

    def __repr__(self) -> str:
        knobs = ", ".join(f"{n}[{len(v)}]" for n, v in self.knobs.items())
        return f"ScheduleSpace({knobs}; size={self.size})"


def as_workload(value: Any, target: Optional[Target] = None) -> Workload:
    """value as a Workload (a Workload, a dict, JSON text or a file); with a target, as it
    runs there (Workload.for_target)."""
    w = value if isinstance(value, Workload) else Workload(value)
    return w.for_target(target) if target is not None else w


def as_target(value: Any) -> Target:
    """value as a Target (a Target, a preset name, a file, a dict or JSON text)."""
    return value if isinstance(value, Target) else Target(value)


def as_schedule(value: Any) -> Schedule:
    """value as a Schedule (a Schedule, a dict or JSON text)."""
    return value if isinstance(value, Schedule) else Schedule(value)
