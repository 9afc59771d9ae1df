"""The tuning database and the runtime lookup table from Python (db/tuning_database.hpp,
db/table/schedule_table.hpp). Everything comes back as plain Python data: records are
dicts, lists of records can be turned into columns (numpy arrays for numeric columns)
with ``columns()``. pandas is not needed.
"""
import errno
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _atvoss
from ._json import dumps, loads
from .vocabulary import Schedule, Target, Workload, as_workload

PathLike = Union[str, os.PathLike]
TargetArg = Union[Target, str, Mapping[str, Any]]


def is_server_url(path: PathLike) -> bool:
    """True for a postgresql:// (or postgres://) URL: a database on a server, not a file."""
    text = os.fspath(path)
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def require_parent_dir(path: PathLike, what: str) -> None:
    """ValueError naming the Python argument `what` when path's directory does not exist
    (the C++ core would name the command-line flag). A server URL has no directory."""
    if is_server_url(path):
        return
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(parent):
        raise ValueError(f"{what}: '{os.fspath(path)}': the directory '{parent}' does not exist (create it first)")


def require_file(path: PathLike, what: str) -> None:
    """FileNotFoundError naming what and the path when nothing is there: the built-in type
    a caller catches, rather than the C++ core's RuntimeError."""
    if not os.path.exists(os.fspath(path)):
        raise FileNotFoundError(errno.ENOENT, f"{what}: no such file", os.fspath(path))


def _target_arg(target: TargetArg) -> str:
    if isinstance(target, Target):
        return target._arg()
    if isinstance(target, Mapping):
        return dumps(dict(target))
    if isinstance(target, str):
        return target
    raise TypeError(f"target must be a Target, a name, a dict or JSON text, not {type(target).__name__}")


def _resolved_target(target: Optional[TargetArg]) -> Optional[Target]:
    """The Target a query names, when it names one atvoss knows (a recorded GPU space's name
    stored in a database is not one: None)."""
    if target is None or isinstance(target, Target):
        return target
    try:
        return Target(dict(target) if isinstance(target, Mapping) else target)
    except (ValueError, TypeError):
        return None


def _workload_key(workload: Any, target: Optional[TargetArg] = None) -> str:
    """A workload key (16 hex digits) as it is, anything else through Workload, with the
    defaults tuning applies on that target (float32 on a CPU when no dtype is given), so a
    query finds what tune stored for the same dict."""
    if isinstance(workload, str) and re.fullmatch("[0-9a-f]{16}", workload):
        return workload
    return as_workload(workload, _resolved_target(target)).key


def columns(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Records as columns: "id", "time_us" and "created_at_ms" as numpy arrays; "status",
    "workload_key", "schedule" and "worker" as lists."""
    import numpy as np

    return {
        "id": np.array([r["id"] for r in records], dtype=np.int64),
        "time_us": np.array([r["measurement"]["time_us"] for r in records], dtype=np.float64),
        "created_at_ms": np.array([r["created_at_ms"] for r in records], dtype=np.int64),
        "status": [r["measurement"]["status"] for r in records],
        "workload_key": [r["workload_key"] for r in records],
        "schedule": [r["schedule"] for r in records],
        "worker": [r["worker"] for r in records],
    }


class Database:
    """An atvoss tuning database (created if absent unless read_only): an SQLite file, or
    a PostgreSQL database named by a ``postgresql://user@host/dbname`` URL, shared by every
    machine that names it. The password never goes in the URL: libpq reads it from
    PGPASSFILE (~/.pgpass), PGPASSWORD or a service file.

    Records are dicts as ``atvoss-db export`` writes them (workload, target, schedule,
    measurement, worker, job, created_at...) plus their "id". Workloads may be given as a
    Workload, dict, JSON text or a workload key; targets as a Target, preset name, a
    target name stored in the database (recorded GPU spaces) or JSON.
    """

    def __init__(self, path: PathLike, read_only: bool = False) -> None:
        if read_only and not is_server_url(path):
            require_file(path, "database")
        self._db = _atvoss.Database(os.fspath(path), bool(read_only))

    @property
    def path(self) -> str:
        """The database file or URL."""
        return self._db.path

    def best(self, workload: Any, target: TargetArg, k: int = 1) -> List[Dict[str, Any]]:
        """Up to k valid records of (workload, target), fastest first."""
        return loads(self._db.best(_workload_key(workload, target), _target_arg(target), k))

    def history(self, workload: Any, target: Optional[TargetArg] = None) -> List[Dict[str, Any]]:
        """Every record of workload (on target if given), oldest first."""
        return loads(self._db.history(_workload_key(workload, target),
                                      None if target is None else _target_arg(target)))

    def query(self, target: Optional[TargetArg] = None, workload: Any = None, op: Optional[str] = None,
              status: Optional[str] = None, since: Optional[str] = None, limit: int = 0) -> List[Dict[str, Any]]:
        """Records matching every filter given, newest first. since: ISO 8601 UTC or unix seconds."""
        f = {"target": None if target is None else _target_arg(target),
             "workload_key": None if workload is None else _workload_key(workload, target),
             "op": op, "status": status, "since": since, "limit": limit}
        return loads(self._db.query(dumps(f)))

    def stats(self) -> Dict[str, Any]:
        """Counts: targets, workloads, records, models, jobs, by_status, per_target, file_bytes."""
        return loads(self._db.stats())

    def targets(self) -> List[Dict[str, Any]]:
        """The targets stored: [{"key", "name", "description"}]."""
        return loads(self._db.targets())

    def export_table(self, target: TargetArg, path: PathLike) -> Dict[str, Any]:
        """Writes the runtime lookup table of target to path; {"entries", "checksum", "path"}."""
        return loads(self._db.export_table(_target_arg(target), os.fspath(path)))

    def export(self, path: PathLike, target: Optional[TargetArg] = None, op: Optional[str] = None) -> int:
        """Writes matching records as JSON lines (for import_ elsewhere); returns the count."""
        f = {"target": None if target is None else _target_arg(target), "op": op}
        return self._db.export_jsonl(os.fspath(path), dumps(f))

    def export_kernel_tuner_cache(self, path: PathLike, workload: Any, target: TargetArg,
                                  kernel_name: Optional[str] = None) -> Dict[str, Any]:
        """Writes the records of workload on target as a Kernel Tuner cache file (plain JSON,
        path ending in .json) that Kernel Tuner's simulation mode reads, and that ``import_``
        reads back. One entry per schedule: "time" in ms (or CompilationFailedConfig /
        RuntimeFailedConfig), "times" the repeats in ms; schedules only ever invalid are left
        out (absent, as Kernel Tuner marks a configuration that breaks the restrictions).
        tune_params_keys are the knob names (in the imported cache's order while that file is
        readable, else sorted), tune_params the values measured; device_name is
        the target's name, kernel_name the one given, else the kernel of an imported cache or
        the workload's op. Compile and verification times are not recorded by atvoss and are
        written as 0. Returns {"entries", "failed", "skipped", "kernel_name", "device_name",
        "path"}; ValueError naming the field if there is nothing to write or path is not .json."""
        if kernel_name is not None and not isinstance(kernel_name, str):
            raise TypeError("export_kernel_tuner_cache: field 'kernel_name' must be a str, "
                            f"not {type(kernel_name).__name__}")
        return loads(self._db.export_kernel_tuner_cache(os.fspath(path), _workload_key(workload, target), _target_arg(target),
                                                        kernel_name or ""))

    def import_(self, path: PathLike) -> Dict[str, int]:
        """Imports JSON lines (export) or a Kernel Tuner cache; the merge report
        {"added", "identical", "combined", "conflicts", ...}. All or nothing."""
        require_file(path, "import_")
        return loads(self._db.import_file(os.fspath(path)))

    def merge(self, other: PathLike) -> Dict[str, int]:
        """Merges another database file (left untouched) into this one; the merge report."""
        return loads(self._db.merge(os.fspath(other)))

    def models(self, target: TargetArg) -> List[Dict[str, Any]]:
        """The trained cost models of target, newest first (without their blobs)."""
        return loads(self._db.models(_target_arg(target)))

    def check(self) -> str:
        """SQLite's integrity and foreign-key check: "ok" or the problems found."""
        return self._db.integrity_check()

    def __repr__(self) -> str:
        return f"Database({self.path!r})"


@dataclass(frozen=True)
class LookupResult:
    """A lookup table's answer: match is "exact", "nearest" (the nearest shape of the
    same op, dtype and epilogue, at distance) or "none" (schedule None)."""

    match: str
    schedule: Optional[Schedule]
    time_us: float
    distance: float
    workload: Optional[Workload]
    target: str

    @property
    def exact(self) -> bool:
        """Whether the table holds this very workload."""
        return self.match == "exact"


class Table:
    """A runtime lookup table exported by Database.export_table or ``atvoss-db
    export-table`` (checksum verified on load)."""

    def __init__(self, path: PathLike) -> None:
        require_file(path, "table")
        self._table = _atvoss.Table(os.fspath(path))
        self.header: Dict[str, Any] = loads(self._table.header())
        description = self.header.get("target_description")
        self._target = _resolved_target(description) if isinstance(description, Mapping) else None

    def lookup(self, workload: Any) -> LookupResult:
        """The entry for workload: exact, else the nearest same-class shape, else none."""
        j = loads(self._table.lookup(dumps(as_workload(workload, self._target).to_json())))
        found = j.get("match") != "none"
        return LookupResult(j.get("match", "none"), Schedule(j["schedule"]) if found else None,
                            float(j.get("time_us", 0.0)) if found else float("inf"),
                            float(j.get("distance", 0.0)), Workload(j["workload"]) if found else None,
                            j.get("target", self.header.get("target_name", "")))

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"Table({self.header.get('target_name')!r}, entries={len(self)})"
