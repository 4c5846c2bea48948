"""The SSE events of a run: a ``type``-discriminated union.

On the wire each event is ``event: <type>``, ``id: <seq>``, ``data: <the model as JSON>``. Every
run ends with exactly one ``final``. ``token`` events are ephemeral (not stored); every other event
is stored with the thread and takes its next ``seq`` (1, 2, 3, ... across runs, with no gap); a
``token`` carries the ``seq`` of the stored event before it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

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


class ConsentEvent(_Envelope):
    type: Literal["consent"] = "consent"
    approval_id: str = Field(description="The LangGraph interrupt id; send it back in `resume`.")
    kind: str = Field(description="What is asked, e.g. `note_edit`; fixes the proposal schema.")
    title: str
    proposal: dict[str, Any] = Field(
        description="Structured proposal; for `note_edit` see NoteEditProposal."
    )
    allowed_decisions: list[Decision]
    expires_at: datetime


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
    | ConsentEvent
    | NoteEvent
    | ModelRetryEvent
    | ErrorEvent
    | ResyncEvent
    | FinalEvent,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
