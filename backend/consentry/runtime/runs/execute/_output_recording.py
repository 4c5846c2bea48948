"""Which of LangGraph's chunks a run records for its listeners, and as what
(``RunEventStream.graph_modes``: what they asked; ``_graph_outputs``: the JSON).

- a ``messages`` chunk: as it is (``messages``, the SDK's ``messages-tuple``), and as the SDK's
  ``messages`` mode shows it (``messages/metadata``, ``messages/partial``,
  ``messages/complete``: ``_message_outputs``), for the listeners of each;
- a ``custom`` chunk of the graph itself: unless it is Consentry's own (``note``,
  ``model_retry``), which the run's stored events carry;
- any other: as it is, for the listeners of its mode.

A subgraph's are the same, named by their namespace (``subgraphs:<mode>``).
"""

from __future__ import annotations

from typing import Any

from consentry.runtime.runs.execute._event_stream import SUBGRAPHS, RunEventStream
from consentry.runtime.runs.execute._graph_outputs import graph_output_json
from consentry.runtime.runs.execute._message_outputs import PARTIAL, MessageAccumulator
from consentry_graphs.models import MODEL_RETRY_EVENT

__all__ = ["GraphOutputs"]

_OWN_CUSTOM = frozenset({"note", MODEL_RETRY_EVENT})


class GraphOutputs:
    """Records one run's graph outputs (create one per graph input streamed)."""

    def __init__(self, events: RunEventStream) -> None:
        self._events = events
        self._messages: dict[tuple[str, ...], MessageAccumulator] = {}

    def record(
        self, wanted: frozenset[str], mode: str, chunk: Any, *, namespace: tuple[str, ...] = ()
    ) -> None:
        """Record ``chunk`` of ``mode`` for the listeners that asked for it; ``wanted``: the
        modes asked of the graph (or, with a ``namespace``, of its subgraphs)."""
        if mode == "messages":
            if mode in wanted:
                self._record(mode, chunk, namespace, message_id=chunk[0].id)
            if PARTIAL in wanted:
                accumulator = self._messages.setdefault(namespace, MessageAccumulator())
                for shown, data in accumulator.outputs(chunk):
                    self._record(shown, data, namespace, message_id=chunk[0].id)
        elif mode in wanted and not (namespace == () and mode == "custom" and _own(chunk)):
            self._record(mode, chunk, namespace)

    def _record(
        self, mode: str, chunk: Any, namespace: tuple[str, ...], message_id: str | None = None
    ) -> None:
        events = self._events
        output = graph_output_json(
            mode, chunk, run_id=events.run_id, namespace=namespace, message_id=message_id
        )
        if output is not None:
            events.record_graph_output(SUBGRAPHS + mode if namespace else mode, output)


def _own(chunk: Any) -> bool:
    return isinstance(chunk, dict) and chunk.get("event") in _OWN_CUSTOM
