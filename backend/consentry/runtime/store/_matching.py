"""What a Store search compares in Python, as LangGraph's own stores do: a value against a
``filter`` (equality, or the operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``),
a namespace against ``list_namespaces``' conditions (``*`` matches any one label), and the
similarity of two embeddings."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

__all__ = [
    "InvalidFilterError",
    "check_filter",
    "cosine",
    "matches_conditions",
    "matches_filter",
    "scalar_equalities",
]

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


class InvalidFilterError(ValueError):
    """A search filter with an operator LangGraph's stores do not know (``$in``, a typo)."""


def check_filter(filter: Mapping[str, Any] | None) -> None:
    """Refuse an operator that is not one of ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
    ``$lte`` (it would match nothing, silently)."""
    for key, wanted in (filter or {}).items():
        if key.startswith("$") and key not in _OPERATORS:
            raise InvalidFilterError(f"Unsupported filter operator: {key!r}.")
        if isinstance(wanted, Mapping):
            check_filter(wanted)


_INT64 = 2**63


def scalar_equalities(filter: Mapping[str, Any] | None) -> dict[str, str | int | float | bool]:
    """The filter's plain ``key: scalar`` conditions the database can compare itself (a key
    with ``"`` or ``\\`` is compared in Python: it could not name a JSON path safely, nor can an
    integer beyond 64 bits be bound)."""
    return {
        key: value
        for key, value in (filter or {}).items()
        if isinstance(value, str | int | float | bool)
        and not ('"' in key or "\\" in key)
        and not (isinstance(value, int) and not -_INT64 <= value < _INT64)
    }


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """``value`` holds every condition of ``filter``."""
    return all(_holds(value.get(key), wanted) for key, wanted in (filter or {}).items())


def _holds(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and wanted and all(k in _OPERATORS for k in wanted):
        return all(_compare(op, actual, operand) for op, operand in wanted.items())
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            _holds(actual.get(k), v) for k, v in wanted.items()
        )
    return _comparable(actual, wanted) and bool(actual == wanted)


def _comparable(actual: Any, operand: Any) -> bool:
    """JSON's types apart: a boolean is not a number (Python's ``True == 1``)."""
    return isinstance(actual, bool) == isinstance(operand, bool)


def _compare(op: str, actual: Any, operand: Any) -> bool:
    if not _comparable(actual, operand):
        return op == "$ne"
    try:
        return bool(_OPERATORS[op](actual, operand))
    except TypeError:  # e.g. a text against a number: no match, as in LangGraph's own stores
        return False


def matches_conditions(
    namespace: tuple[str, ...], conditions: Sequence[MatchCondition] | None
) -> bool:
    """``namespace`` fits every prefix and suffix condition."""
    for condition in conditions or ():
        path = tuple(condition.path)
        if len(path) > len(namespace):
            return False
        part = (
            namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
        )
        if path and not all(p in ("*", n) for p, n in zip(path, part, strict=True)):
            return False
    return True


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two embeddings (0 when either is zero or they differ in size)."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0
