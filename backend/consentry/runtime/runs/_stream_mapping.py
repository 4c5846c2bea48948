"""Turn LangGraph's stream chunks into Consentry events.

The run streams with ``stream_mode=["tasks", "messages", "updates", "custom"]``:

- ``tasks`` start → ``step`` (node and its label),
- ``messages`` AI chunks with text → ``token`` (model calls tagged ``nostream`` never get here),
- ``updates`` with AI messages → ``message``; ``__interrupt__`` entries are collected for the
  run's end; ``__metadata__`` (cached replays) is skipped,
- ``custom`` ``{"event": "note", ...}`` → ``note``; ``{"event": "model_retry", ...}`` (from the
  retry layer, ``consentry_graphs.models.retrying``) → ``model_retry``.

A run that continues others (a ``recovery``, a ``retry``) does not tell again a ``message`` or a
``note`` they told (``said``): LangGraph replays the stored writes of a node that finished before
the crash or the failure, and an effect node that runs again reports its recorded outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.types import Interrupt, StreamMode

from consentry.schemas.events import (
    Event,
    MessageEvent,
    ModelRetryEvent,
    NoteEvent,
    StepEvent,
    TokenEvent,
)
from consentry_graphs.models import MODEL_RETRY_EVENT
from consentry_graphs.registry import GraphSpec

__all__ = ["RESUMED_LABELS", "STREAM_MODES", "ChunkMapper", "Said", "said_by"]

STREAM_MODES: list[StreamMode] = ["tasks", "messages", "updates", "custom"]
Mapped = tuple[type[Event], dict[str, Any]]
_NOTE_FIELDS = ("note_id", "project_id", "title", "version", "content")
_RETRY_FIELDS = ("code", "attempt", "max_attempts", "retry_in_seconds", "discard_message_id")


Said = tuple[str, ...]
"""What a ``message`` or ``note`` event told: ``("message", message_id)``, ``("note", note_id,
version)``."""


def said_by(event_type: str, fields: dict[str, Any]) -> Said | None:
    """What an event of this type with these fields tells, if it is a message or a note."""
    if event_type == "message":
        return ("message", str(fields["message_id"]))
    if event_type == "note":
        return ("note", str(fields["note_id"]), str(fields["version"]))
    return None


RESUMED_LABELS: dict[str, str] = {
    "resume": "Your decision arrived",
    "expiry": "Nobody decided in time",
}
"""The label of the first step of a node that asked a consent, in the run its answer resumes
(LangGraph runs the node again from its first line): not the node's own "Asking …" label."""


class ChunkMapper:
    def __init__(
        self,
        spec: GraphSpec,
        *,
        said: frozenset[Said] = frozenset(),
        resumed: frozenset[str] = frozenset(),
        resumed_label: str | None = None,
    ) -> None:
        """``said``: messages and notes the runs this one continues told already (a node whose
        writes were stored before a crash or a failure is replayed, or an effect node runs
        again and reports its recorded outcome): they are not told twice. ``resumed``: the
        nodes that asked the consents this run answers; their first step is labelled
        ``resumed_label``."""
        self._spec = spec
        self._said = said
        self._resumed = set(resumed) if resumed_label else set()
        self._resumed_label = resumed_label
        self.interrupts: list[Interrupt] = []

    def map(self, mode: str, chunk: Any) -> Iterator[Mapped]:
        if mode == "tasks":
            if "input" in chunk:
                node = chunk["name"]
                if node in self._resumed:
                    self._resumed.discard(node)
                    yield StepEvent, {"node": node, "label": self._resumed_label}
                else:
                    yield StepEvent, {"node": node, "label": self._spec.label_for(node)}
        elif mode == "messages":
            message = chunk[0]
            if isinstance(message, AIMessageChunk) and message.id and (text := message.text):
                yield TokenEvent, {"message_id": message.id, "delta": text}
        elif mode == "updates":
            yield from self._map_updates(chunk)
        elif mode == "custom" and isinstance(chunk, dict):
            if chunk.get("event") == "note":
                note = {key: chunk[key] for key in _NOTE_FIELDS}
                if said_by("note", note) not in self._said:
                    yield NoteEvent, note
            elif chunk.get("event") == MODEL_RETRY_EVENT:
                yield ModelRetryEvent, {key: chunk[key] for key in _RETRY_FIELDS}

    def _map_updates(self, chunk: dict[str, Any]) -> Iterator[Mapped]:
        for node, update in chunk.items():
            if node == "__interrupt__":
                self.interrupts.extend(update)
            elif node != "__metadata__" and isinstance(update, dict):
                for message in update.get("messages") or ():
                    if (
                        isinstance(message, AIMessage)
                        and message.id
                        and message.text
                        and ("message", message.id) not in self._said
                    ):
                        yield MessageEvent, {"message_id": message.id, "content": message.text}
