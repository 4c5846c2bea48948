"""How the work of a run that stopped half-way goes on: a failed run a client retries, or a run
whose process died (``runtime.dead_runs``).

Every run stores the graph inputs it starts with when it is claimed (``runs.inputs``), and each
checkpoint its graph writes names the run and the input that wrote it (``RUN_MARK``,
``INPUT_MARK``). From those two, a stopped run's remaining work is exact:

- its graph never wrote a checkpoint from its inputs (the newest one is an earlier run's): all of
  its inputs again, so a message the graph never saw, or a decision it never applied, is not lost;
- otherwise: the consents its graph waits for with the decisions already recorded for them, or
  its unfinished nodes (``None``), then the inputs the run had not reached yet.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Command

from consentry.runtime.runs.execute import GraphInput, GraphPosition

__all__ = ["continuation"]


def continuation(
    position: GraphPosition,
    recorded: dict[str, Any],
    *,
    run_id: str | None,
    inputs: list[GraphInput] | None,
) -> list[GraphInput]:
    """What a new run starts with to finish run ``run_id``'s work ([] when nothing is left).
    ``recorded``: decisions already recorded for the consents the graph waits for. ``inputs``:
    the run's stored graph inputs (None for a run from before they were stored: then only what
    the checkpoint shows is continued)."""
    if inputs is not None and inputs and position.written_by != run_id:
        again = list(inputs)
        if recorded:
            first = again[0]
            if isinstance(first, Command) and isinstance(first.resume, dict):
                again[0] = Command(resume={**recorded, **first.resume})
            else:
                again.insert(0, Command(resume=recorded))
        return again
    head: list[GraphInput] = []
    if recorded:
        head.append(Command(resume=recorded))
    elif position.unfinished:
        head.append(None)
    if inputs is None or position.input_index is None:
        return head
    return head + inputs[position.input_index + 1 :]
