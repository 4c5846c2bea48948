"""An event as it goes out: serialized once, what SSE sends and what storage keeps. Shared by the
streams of runs (``runtime.runs``), of the approvals feed (``runtime.consents``) and of a run
followed through the log (``runtime.replicas``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["GRAPH_OUTPUT", "OutgoingEvent", "kept_outputs"]

GRAPH_OUTPUT = "graph:"
"""The prefix of a graph output's type (``graph:values``...: ``runtime.runs``)."""


@dataclass(frozen=True, slots=True)
class OutgoingEvent:
    """An event serialized once: what SSE sends and what storage keeps."""

    seq: int
    type: str
    data: str
    outputs: str | None = None
    """The graph outputs kept with a durable event (a run asked with ``stream_resumable``): those
    recorded since the durable event before it, ``"<type> <json>"`` lines
    (``runtime.runs.kept_outputs`` reads them back)."""


def kept_outputs(
    event: OutgoingEvent, wanted: frozenset[str], *, outputs_from: int
) -> Iterator[OutgoingEvent]:
    """A durable event as a replay sends it: after the graph outputs of the modes ``wanted`` kept
    with it (those recorded since the durable event before it, each numbered as that one), when
    they are numbered ``outputs_from`` or later. A client that has seen event ``k`` may have had
    some of the outputs numbered ``k`` (they came after it): a join after ``k`` takes them from
    ``k + 1``, so none comes twice; a reader that goes on from events it read itself, from
    ``k``."""
    if event.outputs is not None and wanted and event.seq - 1 >= outputs_from:
        for line in event.outputs.split("\n"):
            event_type, _, data = line.partition(" ")
            if event_type.removeprefix(GRAPH_OUTPUT) in wanted:
                yield OutgoingEvent(event.seq - 1, event_type, data)
    yield event
