"""Turn LangGraph's stream chunks into Consentry events.

The run streams with ``stream_mode=["tasks", "messages", "updates", "custom", "values"]``:

- ``tasks`` start → ``step`` (node and its label),
- ``messages`` AI chunks with text → ``token`` (model calls tagged ``nostream`` never get here),
- ``updates`` with AI messages → ``message`` (when they have text) and a ``tool_call`` per call
  they ask for; tool messages → ``tool_result`` (its content cut past ``TOOL_RESULT_CHARS``);
  ``__interrupt__`` entries are collected for the run's end; ``__metadata__`` (cached replays) is
  skipped,
- ``custom`` ``{"event": "note", ...}`` → ``note``; ``{"event": "model_retry", ...}`` (from the
  retry layer, ``consentry_graphs.models.retrying``) → ``model_retry``,
- ``values`` → nothing: it is streamed for the listeners that ask for LangGraph's state after each
  step (the SDK face; ``_graph_outputs``). Reading the channels is cheap, and LangGraph adds the
  interrupts to the state at an interrupt, which the mapper leaves alone (it takes them from
  ``updates``, once).

A run that continues others (a ``recovery``, a ``retry``) does not tell again a ``message``, a
``note``, a ``tool_call`` or a ``tool_result`` they told (``said``): LangGraph replays the stored
writes of a node that finished before the crash or the failure, and an effect node that runs
again reports its recorded outcome. Within a run, a tool call or result told once is not told
again either (a node that hands the same message on, say); a call told again with other arguments
(edited before it ran) is.

Token chunks cost no more for any of this: only ``updates`` chunks (one a node) are looked into.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langgraph.types import Interrupt, StreamMode

from consentry.schemas.events import (
    Event,
    MessageEvent,
    ModelRetryEvent,
    NoteEvent,
    StepEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from consentry_graphs.models import MODEL_RETRY_EVENT
from consentry_graphs.registry import GraphSpec

__all__ = [
    "RESUMED_LABELS",
    "STREAM_MODES",
    "TOOL_RESULT_CHARS",
    "ChunkMapper",
    "Said",
    "said_by",
]

STREAM_MODES: list[StreamMode] = ["tasks", "messages", "updates", "custom", "values"]
Mapped = tuple[type[Event], dict[str, Any]]
_NOTE_FIELDS = ("note_id", "project_id", "title", "version", "content")
_RETRY_FIELDS = ("code", "attempt", "max_attempts", "retry_in_seconds", "discard_message_id")


TOOL_RESULT_CHARS = 8000
"""A ``tool_result`` carries at most this many characters of the result (and the
``tool_calls`` table keeps what the event carried); its ``content_chars`` states the whole
size. A tool that returns a web page must not make every replay of the thread carry it."""


Said = tuple[str, ...]
"""What a ``message``, ``note``, ``tool_call`` or ``tool_result`` event told: ``("message",
message_id)``, ``("note", note_id, version)``, ``("tool_call", tool_call_id, args as JSON)``,
``("tool_result", tool_call_id)``."""


def said_by(event_type: str, fields: dict[str, Any]) -> Said | None:
    """What an event of this type with these fields tells, if it is one of those above."""
    if event_type == "message":
        return ("message", str(fields["message_id"]))
    if event_type == "note":
        return ("note", str(fields["note_id"]), str(fields["version"]))
    if event_type == "tool_call":
        return ("tool_call", str(fields["tool_call_id"]), _args_key(fields["args"]))
    if event_type == "tool_result":
        return ("tool_result", str(fields["tool_call_id"]))
    return None


def _args_key(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


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
        tool_result_chars: int = TOOL_RESULT_CHARS,
        told_unread: bool = False,
    ) -> None:
        """``said``: messages, notes, tool calls and results the runs this one continues told
        already (a node whose writes were stored before a crash or a failure is replayed, or an
        effect node runs again and reports its recorded outcome): they are not told twice.
        ``resumed``: the nodes that asked the consents this run answers; their first step is
        labelled ``resumed_label``. ``tool_result_chars``: where a tool result is cut.
        ``told_unread``: a resumed run whose graph may hand on a tool call the run that asked
        told already (LangChain's review middleware returns the approved call again): before the
        first tool call, ``wants_told`` asks for what that run told (one read, only then)."""
        self._spec = spec
        self._said = said
        self._told_tools: set[Said] = set()
        """Tool calls and results this run told."""
        self._tool_names: dict[str, str] = {}
        """The tool of each call this run told, for a tool message that does not name it."""
        self._tool_result_chars = tool_result_chars
        self._told_unread = told_unread
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

    def wants_told(self, mode: str, chunk: Any) -> bool:
        """Whether this chunk hands on a tool call before what earlier runs told was read."""
        if not self._told_unread or mode != "updates" or not isinstance(chunk, dict):
            return False
        for update in chunk.values():
            for written in update if isinstance(update, list) else (update,):
                if isinstance(written, dict) and any(
                    isinstance(m, AIMessage) and m.tool_calls for m in _messages_of(written)
                ):
                    return True
        return False

    def told(self, said: frozenset[Said]) -> None:
        """What the runs before this one told (see ``told_unread``): not told again."""
        self._said = self._said | said
        self._told_unread = False

    def _map_updates(self, chunk: dict[str, Any]) -> Iterator[Mapped]:
        for node, update in chunk.items():
            if node == "__interrupt__":
                self.interrupts.extend(update)
            elif node != "__metadata__":
                # A node that wrote the messages twice in a step (parallel tasks of one node,
                # a list of commands) has a list of updates.
                for written in update if isinstance(update, list) else (update,):
                    if isinstance(written, dict):
                        yield from self._map_messages(_messages_of(written))

    def _map_messages(self, messages: Iterable[BaseMessage]) -> Iterator[Mapped]:
        for message in messages:
            if isinstance(message, AIMessage) and message.id:
                if message.text and ("message", message.id) not in self._said:
                    yield MessageEvent, {"message_id": message.id, "content": message.text}
                for call in message.tool_calls:
                    if (call_id := call.get("id")) and self._first_time(
                        ("tool_call", call_id, _args_key(call["args"]))
                    ):
                        self._tool_names[call_id] = call["name"]
                        yield (
                            ToolCallEvent,
                            {
                                "tool_call_id": call_id,
                                "name": call["name"],
                                "args": call["args"],
                                "message_id": message.id,
                            },
                        )
            elif isinstance(message, ToolMessage) and self._first_time(
                ("tool_result", message.tool_call_id)
            ):
                yield ToolResultEvent, self._result(message)

    def _first_time(self, said: Said) -> bool:
        """Whether a tool call or result was not told yet (and remember it is now)."""
        if said in self._said or said in self._told_tools:
            return False
        self._told_tools.add(said)
        return True

    def _result(self, message: ToolMessage) -> dict[str, Any]:
        content = message.content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        limit = self._tool_result_chars
        return {
            "tool_call_id": message.tool_call_id,
            "name": message.name or self._tool_names.get(message.tool_call_id, ""),
            "status": "error" if message.status == "error" else "success",
            "content": text[:limit],
            "content_chars": len(text),
            "truncated": len(text) > limit,
        }


def _messages_of(update: dict[str, Any]) -> Iterable[BaseMessage]:
    """The messages a node's update writes (a list, or one message as ``add_messages`` takes)."""
    messages = update.get("messages")
    if isinstance(messages, BaseMessage):
        return (messages,)
    return messages if isinstance(messages, list | tuple) else ()
