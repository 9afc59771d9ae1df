"""Constraints over a parameter space, as Kernel Tuner's restrictions: expressions such as
``"block_x * block_y <= 1024"`` or ``"order in ('ij', 'ji') and unroll % 2 == 0"``, parsed by
atvoss's closed grammar (core/constraint.hpp: arithmetic, comparisons, ``in``, boolean
operators, min/max/abs/int/float/round and the space's parameter names; nothing is handed to
Python's eval), or callables taking the config dict.
"""
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _atvoss

Constraint = Union[str, Callable[[Dict[str, Any]], Any]]

# Points checked up front (as Kernel Tuner builds its space), so strategies check validity
# without calling back into Python.
MAX_CONSTRAINED_POINTS = 1 << 22


def _as_constraint_value(v: Any) -> Union[float, str]:
    if isinstance(v, str):
        return v
    if isinstance(v, numbers.Real):  # bool too: True is 1
        return float(v)
    return repr(v)


def check(constraint: str, names: Sequence[str]) -> None:
    """ValueError naming the position and what was expected if constraint does not parse,
    or names anything but a parameter."""
    _atvoss.check_constraint(constraint, list(names))


def valid_points(constraints: Sequence[Constraint], names: Sequence[str],
                 values: Sequence[Sequence[Any]]) -> Optional[List[int]]:
    """The flat indices (mixed radix, first parameter most significant) of the points every
    constraint allows; None when there are no constraints."""
    if not constraints:
        return None
    for c in constraints:
        if not (isinstance(c, str) or callable(c)):
            raise TypeError(f"constraints: each must be a string or a callable, not {type(c).__name__}")
    texts = [c for c in constraints if isinstance(c, str)]
    calls = [c for c in constraints if not isinstance(c, str)]
    plain = [[_as_constraint_value(v) for v in vs] for vs in values]
    flat = _atvoss.constraint_points(texts, list(names), plain, MAX_CONSTRAINED_POINTS)
    if not calls:
        return list(flat)
    sizes = [len(vs) for vs in values]
    out = []
    for index in flat:
        config, rest = {}, index
        for name, vs, size in reversed(list(zip(names, values, sizes))):
            config[name] = vs[rest % size]
            rest //= size
        config = {n: config[n] for n in names}
        try:
            ok = all(c(config) for c in calls)
        except Exception as e:
            raise ValueError(f"constraints: evaluating them on {config} raised {type(e).__name__}: {e}") from None
        if ok:
            out.append(index)
    return out


__all__ = ["Constraint", "MAX_CONSTRAINED_POINTS", "check", "valid_points"]
