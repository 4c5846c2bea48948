"""A run's static breakpoints (the SDK's ``interrupt_before`` / ``interrupt_after``), checked
against its graph's nodes: the run stops before or after them, and a run with no ``input`` goes
on from where it stopped."""

from __future__ import annotations

from collections.abc import Set
from typing import Literal

from consentry.errors import InvalidRequestError
from consentry.schemas.chat import Breakpoints
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["breakpoints"]


def breakpoints(body: RunCreate, graph: str, nodes: Set[str]) -> tuple[Breakpoints, Breakpoints]:
    """The run's breakpoints, before and after: each a node of ``graph`` (422
    ``invalid_breakpoint`` naming the others), or ``"*"`` for every node."""
    for field_name in ("interrupt_before", "interrupt_after"):
        asked = getattr(body, field_name)
        if unknown := sorted(set(asked) - nodes) if isinstance(asked, list) else []:
            raise InvalidRequestError(
                f"`{field_name}` names {unknown[0]!r}, not a node of graph {graph!r}.",
                code="invalid_breakpoint",
                details={"field": field_name, "unknown": unknown, "nodes": sorted(nodes)},
            )
    return _of(body.interrupt_before), _of(body.interrupt_after)


def _of(asked: Literal["*"] | list[str] | None) -> Breakpoints:
    return asked if asked is None or asked == "*" else tuple(asked)
