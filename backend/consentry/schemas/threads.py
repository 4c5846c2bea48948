"""Threads as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import ConsentEvent, TerminalReason

__all__ = [
    "CancelAccepted",
    "ThreadDetail",
    "ThreadList",
    "ThreadStatus",
    "ThreadSummary",
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
