"""A thread's row (:class:`ThreadRecord`), the columns it is read with, and the summary a thread
list shows (:func:`summarize`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import TerminalReason
from consentry.schemas.threads import ThreadStatus, ThreadSummary
from consentry.storage.tables import threads


@dataclass(frozen=True, slots=True)
class ThreadRecord:
    """A thread's row, as stored (``tables.threads``)."""

    id: str
    tenant: str
    user_id: str
    graph: str
    project_id: str
    note_id: str | None
    title: str
    status: ThreadStatus
    last_reason: TerminalReason | None
    last_seq: int
    consent_policy: ConsentPolicy
    tokens_used: int
    pruned_through: int
    active_run_id: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    fencing_token: int
    transcript_kept: bool
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] | None
    """The client's metadata (``PATCH /threads/{id}`` merges into it); None: none given."""
    run_options: dict[str, Any] | None
    """The options its client's last run gave (``runtime.runs.execute.RunOptions``)."""
    assistant_id: str | None
    """The stored assistant its latest run was started on (None: its graph's own)."""

    @property
    def never_ran(self) -> bool:
        """No run has claimed it yet (created by ``POST /threads``)."""
        return self.last_seq == 0 and self.status == "idle"


_COLUMNS = tuple(threads.c[field.name] for field in fields(ThreadRecord))
"""The columns of a :class:`ThreadRecord`, in its fields' order: a row of them is
``ThreadRecord(*row)`` (by position: a quarter of the cost by name, see ``storage.events``)."""


def summarize(row: ThreadRecord) -> ThreadSummary:
    return ThreadSummary(
        thread_id=row.id,
        consent_policy=row.consent_policy,
        graph=row.graph,
        project_id=row.project_id,
        note_id=row.note_id,
        title=row.title,
        status=row.status,
        last_reason=row.last_reason,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
