"""The SSE events of a run: a ``type``-discriminated union.

On the wire each event is ``event: <type>``, ``id: <seq>``, ``data: <the model as JSON>``. Every
run ends with exactly one ``final``. ``token`` events are ephemeral (not stored); every other event
is stored with the thread and takes its next ``seq`` (1, 2, 3, ... across runs, with no gap); a
``token`` carries the ``seq`` of the stored event before it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from consentry_graphs.wire_types import Decision, ModelFaultCode

__all__ = [
    "EVENT_ADAPTER",
    "ConsentEvent",
    "ErrorEvent",
    "Event",
    "FinalEvent",
    "MessageEvent",
    "ModelRetryEvent",
    "NoteEvent",
    "ResyncEvent",
    "RunStartedEvent",
    "StepEvent",
    "TerminalReason",
    "TokenEvent",
    "TokenUsage",
    "ToolCallEvent",
    "ToolResultEvent",
    "Trigger",
]

TerminalReason = Literal[
    "completed",
    "interrupted",
    "expired",
    "failed",
    "cancelled",
    "step_limit",
    "timeout",
    "budget_exhausted",
]
"""Why a run ended: ``completed`` (the graph finished), ``interrupted`` (waiting for consent),
``expired`` (a consent expired and the graph took its expired path), ``failed`` (an error event
precedes it), ``cancelled`` (cancelled by a client),
``step_limit`` (the run took more graph steps than allowed), ``timeout`` (the run took longer than
allowed), ``budget_exhausted`` (the thread's or tenant's token budget was used up; the run stopped
before the next model call)."""


Trigger = Literal["message", "resume", "expiry", "recovery", "retry"]
"""What started a run: a user ``message``, a decision (``resume``), a consent's ``expiry``, the
``recovery`` of a run whose process died, or a client's ``retry`` of a failed run."""


class _Envelope(BaseModel):
    # The server always sends every field: a default is not "optional" to a reader of events.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    thread_id: str
    run_id: str
    seq: int = Field(
        ge=1,
        description="Per-thread number of the stored event, one more than the stored event "
        "before it (a `token`, never stored, carries that event's); also the SSE `id:`.",
    )
    ts: datetime


class RunStartedEvent(_Envelope):
    type: Literal["run_started"] = "run_started"
    graph: str
    trigger: Trigger


class StepEvent(_Envelope):
    type: Literal["step"] = "step"
    node: str = Field(description="The graph node that started.")
    label: str = Field(description="What it does, for people.")


class TokenEvent(_Envelope):
    type: Literal["token"] = "token"
    message_id: str
    delta: str = Field(description="Text to append to the message with this id.")


class MessageEvent(_Envelope):
    type: Literal["message"] = "message"
    message_id: str
    role: Literal["assistant"] = "assistant"
    content: str


class ToolCallEvent(_Envelope):
    """The model asked for a tool: one event per call of its message (a message with calls and no
    text is told by these alone, never as a ``message``). Kept apart from the transcript, with its
    result, at ``GET /v1/threads/{thread_id}/tool-calls``. The same ``tool_call_id`` told again
    (its arguments edited before it ran) replaces the call told before."""

    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str = Field(description="The model's id of the call; its `tool_result` names it.")
    name: str = Field(description="The tool asked for.")
    args: dict[str, Any] = Field(description="The arguments the model gave it.")
    message_id: str = Field(description="The assistant message that asked for it.")


class ToolResultEvent(_Envelope):
    """A tool returned (or failed): what the model reads next. ``content`` is cut past 8,000
    characters; ``content_chars`` states the whole result's size."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str = Field(description="The `tool_call` this answers.")
    name: str = Field(description="The tool that ran (empty when the graph did not name it).")
    status: Literal["success", "error"] = Field(
        description="`error`: the tool failed; `content` is what the model is told about it."
    )
    content: str = Field(description="The result as text, cut when `truncated`.")
    content_chars: int = Field(ge=0, description="The whole result's length in characters.")
    truncated: bool = Field(description="`content` holds only the first characters of it.")


class ConsentEvent(_Envelope):
    """A consent the graph waits for: one of its consent kit's kinds, or (kind ``interrupt``) a
    raw ``interrupt(value)`` that is answered with any JSON value."""

    type: Literal["consent"] = "consent"
    approval_id: str = Field(description="Send it back in `resume`.")
    kind: str = Field(
        description="What is asked, e.g. `note_edit`; fixes the proposal schema. `interrupt`: a "
        "raw `interrupt(value)`, answered with `{approval_id, value}`."
    )
    title: str
    proposal: dict[str, Any] = Field(
        description="Structured proposal; for `note_edit` see NoteEditProposal; for "
        "`interrupt`, `{value}`."
    )
    allowed_decisions: list[Decision]
    interrupt_id: str = Field(
        default="",
        description="The LangGraph interrupt that asked; the same as `approval_id` but for a "
        "reviewed batch of tool calls (kind `tool_call`, LangChain's human-in-the-loop "
        "middleware), whose consents share it and are decided together in one request.",
    )
    value: JsonValue = Field(
        default=None, description="Kind `interrupt`: the value the graph passed to interrupt()."
    )
    response_schema: dict[str, Any] | None = Field(
        default=None,
        description="Kind `interrupt`: the JSON Schema an answer must fit, when the graph gave "
        "one (`interrupt(value, response_schema=...)`).",
    )
    expires_at: datetime | None = Field(
        description="When it expires unanswered; None: it waits until someone decides."
    )


class NoteEvent(_Envelope):
    type: Literal["note"] = "note"
    note_id: str
    project_id: str
    title: str
    version: int
    content: str


class ModelRetryEvent(_Envelope):
    """A model call failed and is tried again in ``retry_in_seconds`` (a UI can say why it
    waits). With ``discard_message_id`` set, the failed attempt had already streamed part of that
    message: drop its text; the next attempt streams the message again from its start."""

    type: Literal["model_retry"] = "model_retry"
    code: ModelFaultCode = Field(description="Why the attempt failed (see `error` codes).")
    attempt: int = Field(ge=1, description="The attempt that failed (1 is the first).")
    max_attempts: int = Field(ge=1)
    retry_in_seconds: float = Field(ge=0)
    discard_message_id: str | None = Field(
        description="The message whose streamed tokens are void, if the attempt had sent any."
    )


class ErrorEvent(_Envelope):
    type: Literal["error"] = "error"
    code: str
    message: str
    retryable: bool


class ResyncEvent(_Envelope):
    """Sent first when a client rejoins from an id older than the stored log (retention): the
    events up to ``seq`` are gone; the stream goes on from ``first_available_seq``. Not part of a
    run: ``run_id`` is empty."""

    type: Literal["resync"] = "resync"
    first_available_seq: int | None = Field(
        description="The oldest stored event after the gap; None if none is stored yet."
    )


class TokenUsage(BaseModel):
    """Model tokens, as the provider reported them (the offline model counts words)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class FinalEvent(_Envelope):
    type: Literal["final"] = "final"
    reason: TerminalReason
    usage: TokenUsage = Field(default_factory=TokenUsage, description="Model tokens this run used.")


Event = Annotated[
    RunStartedEvent
    | StepEvent
    | TokenEvent
    | MessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | ConsentEvent
    | NoteEvent
    | ModelRetryEvent
    | ErrorEvent
    | ResyncEvent
    | FinalEvent,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
