"""JSON helpers shared by the package: values cross to the C++ core as JSON text.

Infinite times (no valid measurement yet) travel as JSON null and come back as math.inf.
"""
import json
import math
from typing import Any


def dumps(value: Any) -> str:
    """Compact JSON text of a plain Python value."""
    return json.dumps(value, separators=(",", ":"))


def loads(text: str) -> Any:
    """Python value of JSON text from the C++ core."""
    return json.loads(text)


def time_or_inf(value: Any) -> float:
    """A time in microseconds, with null (never measured) as infinity."""
    return math.inf if value is None else float(value)
