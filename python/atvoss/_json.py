"""JSON helpers shared by the package: values cross to the C++ core as JSON text.

Infinite times (no valid measurement yet) travel as JSON null and come back as math.inf.
"""
import json
import math
import os
import stat
from typing import Any

from . import _atvoss

# The largest file read whole into memory: the C++ core's bound (docs/architecture.md, "Inputs").
MAX_INPUT_FILE_BYTES = _atvoss.MAX_INPUT_FILE_BYTES


def dumps(value: Any) -> str:
    """Compact JSON text of a plain Python value; ValueError if it nests too deeply."""
    try:
        return json.dumps(value, separators=(",", ":"))
    except RecursionError:
        raise ValueError("value is nested too deeply to send as JSON") from None


def parse_text(text: str, what: str) -> Any:
    """JSON text given by the user as a Python value; ValueError naming what, also for
    nesting deeper than Python's recursion limit (json raises RecursionError there)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what}: not JSON and not a readable file: {e}") from None
    except RecursionError:
        raise ValueError(f"{what}: JSON nested too deeply") from None


def read_input_file(path: str, what: str) -> str:
    """The text of a regular file of at most MAX_INPUT_FILE_BYTES: a FIFO would block for
    good and a device would not end. ValueError naming what otherwise."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what}: '{path}' is not a regular file")
    if st.st_size > MAX_INPUT_FILE_BYTES:
        raise ValueError(f"{what}: '{path}' is {st.st_size} bytes, more than {MAX_INPUT_FILE_BYTES}")
    with open(path, encoding="utf-8") as f:
        try:
            return f.read()
        except UnicodeDecodeError as e:
            raise ValueError(f"{what}: '{path}' is not UTF-8 text: {e}") from None


def loads(text: str) -> Any:
    """Python value of JSON text from the C++ core."""
    return json.loads(text)


def time_or_inf(value: Any) -> float:
    """A time in microseconds, with null (never measured) as infinity."""
    return math.inf if value is None else float(value)
