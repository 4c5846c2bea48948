"""What the chaos clients saw: every attempt of every keyed request, and every durable event
they received live. The invariants compare this with what the server and the database say
afterwards; nothing here is read back from the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from consentry_tools.chaos.violations import Violation

__all__ = [
    "ACKNOWLEDGED",
    "Attempt",
    "ClientLog",
    "Event",
    "KeyedRequest",
    "RequestKind",
    "SeenEvents",
]

Event = dict[str, Any]
"""One SSE event's ``data``, as JSON."""
RequestKind = Literal["message", "decision"]
ACKNOWLEDGED = (200, 202)


@dataclass
class Attempt:
    """One try of a request: the answer, or how it failed."""

    server: str
    status: int | None = None
    """HTTP status; None when no answer came (connection refused or reset)."""
    failure: str | None = None
    """Why the attempt broke: ``connect`` (refused), ``no_answer`` (reset before an answer), ``cut``
    (the answer's stream ended without its ``final``)."""
    thread_id: str | None = None
    run_id: str | None = None
    replayed: bool = False
    """``Idempotent-Replayed: true``."""
    code: str | None = None
    """The error code of a refusal."""
    details: dict[str, Any] = field(default_factory=dict)
    final: str | None = None
    """The reason of the ``final`` event of the answered run, when the stream carried it."""

    @property
    def acknowledged(self) -> bool:
        """The server took the request: 200/202 naming its run."""
        return self.status in ACKNOWLEDGED and self.run_id is not None


@dataclass
class KeyedRequest:
    """One logical request, sent with one ``Idempotency-Key`` however often it is retried."""

    kind: RequestKind
    key: str
    path: str
    body: dict[str, Any]
    client: int
    thread_id: str | None
    """The thread it was sent to (None: a message that starts a new thread)."""
    text: str | None = None
    """A message's text."""
    approval_id: str | None = None
    decision: str | None = None
    edited: dict[str, Any] | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def first_acknowledged(self) -> Attempt | None:
        return next((a for a in self.attempts if a.acknowledged), None)

    @property
    def acknowledged(self) -> bool:
        return self.first_acknowledged is not None

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1

    def describe(self) -> str:
        if self.kind == "message":
            return f"message {self.text!r} (key {self.key})"
        return f"decision {self.decision} on {self.approval_id} (key {self.key}, {self.path})"


@dataclass
class SeenEvents:
    """The durable events (all but ``token``) a client received live, per thread and seq."""

    by_thread: dict[str, dict[int, Event]] = field(default_factory=dict)
    conflicts: list[tuple[str, int, Event, Event]] = field(default_factory=list)
    """The same thread and seq received twice with different content (first, second)."""

    def add(self, event: Event) -> None:
        thread_id, seq = str(event.get("thread_id", "")), event.get("seq")
        if not thread_id or not isinstance(seq, int) or event.get("type") == "token":
            return
        known = self.by_thread.setdefault(thread_id, {})
        first = known.setdefault(seq, event)
        if first != event:
            self.conflicts.append((thread_id, seq, first, event))

    def last_seq(self, thread_id: str) -> int | None:
        seen = self.by_thread.get(thread_id)
        return max(seen) if seen else None


@dataclass
class ClientLog:
    """Everything one client did and saw in one trial."""

    client: int
    note_id: str
    threads: list[str] = field(default_factory=list)
    """Every thread the server told this client of (headers, events), in order."""
    requests: list[KeyedRequest] = field(default_factory=list)
    seen: SeenEvents = field(default_factory=SeenEvents)
    conversations: int = 0
    problems: list[Violation] = field(default_factory=list)
    """What the client itself found wrong (a thread that never settled, a rejoin refused)."""

    def told_of(self, thread_id: str | None) -> None:
        if thread_id and thread_id not in self.threads:
            self.threads.append(thread_id)
