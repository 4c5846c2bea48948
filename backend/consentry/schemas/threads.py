"""Threads as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import ConsentEvent, TerminalReason

__all__ = [
    "CancelAccepted",
    "ThreadDetail",
    "ThreadList",
    "ThreadStatus",
    "ThreadSummary",
    "ToolCall",
    "ToolCallList",
    "Transcript",
    "TranscriptMessage",
]

ThreadStatus = Literal["idle", "running", "awaiting_consent"]


class ThreadSummary(BaseModel):
    thread_id: str
    consent_policy: ConsentPolicy
    graph: str
    project_id: str
    note_id: str | None
    """The note the thread is about: the one its first message named (``GET
    /v1/threads?note_id=`` lists a note's conversations)."""
    title: str
    status: ThreadStatus
    last_reason: TerminalReason | None
    created_at: datetime
    updated_at: datetime


class ThreadList(BaseModel):
    threads: list[ThreadSummary]


class ThreadDetail(ThreadSummary):
    pending_consents: list[ConsentEvent]
    """Each pending consent exactly as its event was sent, so a reloaded page can show it again."""
    tokens_used: int
    """Model tokens (input and output) the thread's runs used, as the providers reported them;
    what ``CONSENTRY_THREAD_TOKEN_BUDGET`` is checked against. Each run's own usage is on its
    ``final`` event."""


class CancelAccepted(BaseModel):
    """``202``: the run stops at its next step boundary; its stream ends with ``final``
    ``cancelled``."""

    thread_id: str
    run_id: str
    status: Literal["cancelling"] = "cancelling"


class TranscriptMessage(BaseModel):
    message_id: str
    role: Literal["user", "assistant"]
    content: str


class Transcript(BaseModel):
    thread_id: str
    messages: list[TranscriptMessage]


class ToolCall(BaseModel):
    """A tool call a model asked for in the thread, with its result once the tool returned: what
    its ``tool_call`` and ``tool_result`` events told."""

    tool_call_id: str
    run_id: str = Field(description="The run that told the call.")
    name: str = Field(description="The tool.")
    args: dict[str, Any] = Field(description="The arguments the model gave it (as last edited).")
    message_id: str | None = Field(
        description="The assistant message that asked for it; null for a result whose call was "
        "never told."
    )
    status: Literal["pending", "success", "error"] = Field(
        description="`pending`: no result yet (the run stopped before the tool ran, or waits for "
        "a consent); `success` or `error`: the result's."
    )
    content: str | None = Field(
        description="The result as its `tool_result` carried it (cut when `truncated`)."
    )
    content_chars: int | None = Field(description="The whole result's length in characters.")
    truncated: bool
    created_at: datetime
    finished_at: datetime | None = Field(description="When its result was stored.")
    after_message_id: str | None = Field(
        description="The transcript message (`GET /v1/threads/{id}/messages`) said last before "
        "the call; null: before the first."
    )


class ToolCallList(BaseModel):
    """The thread's tool calls in the order the model asked for them; apart from its transcript,
    which keeps what the user and the assistant said."""

    thread_id: str
    tool_calls: list[ToolCall]
