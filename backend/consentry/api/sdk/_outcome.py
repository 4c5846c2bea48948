"""What the SDK reads at a run's end: the graph's state (``values`` frames, ``runs.wait`` and
``runs.join``), with ``__interrupt__`` while it waits, or ``__error__`` when the run failed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from consentry.principal import Principal
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ThreadReader

__all__ = ["run_outcome", "state_values"]


async def state_values(reader: ThreadReader, owner: Principal, thread_id: str) -> dict[str, Any]:
    """The graph's state now, with ``__interrupt__`` (``[{"value", "id"}]``) when it waits."""
    state = await reader.graph_state(owner, thread_id)
    values = dict(state.values)
    if state.interrupts:
        values["__interrupt__"] = state.interrupts
    return values


async def run_outcome(
    events: AsyncIterator[OutgoingEvent], reader: ThreadReader, owner: Principal
) -> dict[str, Any]:
    """Read a run's events to its ``final``: the state it left, or ``{"__error__": {"error":
    code, "message"}}`` when an error ended it."""
    error: dict[str, Any] | None = None
    async for event in events:
        if event.type == "error":
            data = json.loads(event.data)
            error = {"error": data["code"], "message": data["message"]}
        elif event.type == "final":
            data = json.loads(event.data)
            if error is not None:
                return {"__error__": error}
            return await state_values(reader, owner, data["thread_id"])
    raise RuntimeError("the run's events ended without its final event")
