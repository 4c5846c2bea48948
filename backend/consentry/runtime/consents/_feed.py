"""The approvals feed: a caller's approvals as they change, pushed (``GET /v1/approvals/stream``).

Every change to an approval (requested, decided, expired, cancelled) has its audit record,
written in the same transaction (``storage.audit``); that record's id is the feed's cursor, and
the transaction notifies the owner's feeds as it commits (``storage.db.database.notify_at_commit``:
PostgreSQL's ``NOTIFY``, so a change on any replica wakes the feeds on every replica; on SQLite,
the one process right after the commit). A feed reads when it is woken; it never polls.

A feed first sends the changes after the client's cursor (``Last-Event-ID``), then ``ready``
(the cursor, and how many approvals are pending), then each change as it commits. A change frame
carries the approval as it is when the frame is read, so a client applies frames by approval id,
in any order, any number of times.

On SQLite one writer commits at a time: records commit in cursor order. On PostgreSQL two
transactions may commit out of cursor order (an id is taken at insert, not at commit), so each
read also looks again at the records of the last ``LATE_COMMIT_SECONDS`` and sends those it has
not sent: a late commit is delivered, after a later cursor. (A client that reconnects with the
last cursor it got may be sent a change again; frames are idempotent.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.replicas import EventNotifications
from consentry.schemas.approvals import ApprovalChange, ApprovalsReady
from consentry.storage import approvals as approvals_repo
from consentry.storage.audit import (
    APPROVAL_CHANGES,
    ApprovalChangeRecord,
    approval_changes,
    last_approval_change,
    owner_key,
)
from consentry.storage.db.database import Database, DbConnection

__all__ = ["LATE_COMMIT_SECONDS", "ApprovalFeed"]

LATE_COMMIT_SECONDS = 30.0
"""How far back a read looks again for records committed after later ones (PostgreSQL)."""


class ApprovalFeed:
    def __init__(self, *, db: Database, notifications: EventNotifications, clock: Clock) -> None:
        self._db = db
        self._notifications = notifications
        self._clock = clock
        self._late = timedelta(seconds=LATE_COMMIT_SECONDS if db.is_postgres else 0)

    async def follow(self, owner: Principal, *, after: int | None) -> AsyncIterator[OutgoingEvent]:
        """The owner's approval changes after cursor ``after`` (None: from now), then ``ready``,
        then every change as it commits, until the client goes away."""
        async with self._notifications.watch_approvals(owner_key(owner)) as woken:
            sent: dict[int, datetime] = {}
            """Cursors sent (or known) in the late-commit window, with their records' times."""
            if after is None:
                async with self._db.read() as conn:
                    cursor = await last_approval_change(conn, owner)
                    if self._late:  # what committed before is the list the client reads
                        recent = await self._read(conn, owner, cursor)
                        sent = {r.id: r.created_at for r in recent if r.id <= cursor}
            else:
                cursor = after
                async for frame in self._changes(owner, cursor, sent):
                    cursor = max(cursor, frame.seq)
                    yield frame
            yield await self._ready(owner, cursor)
            while True:
                await woken.wait()
                woken.clear()
                async for frame in self._changes(owner, cursor, sent):
                    cursor = max(cursor, frame.seq)
                    yield frame

    async def _ready(self, owner: Principal, cursor: int) -> OutgoingEvent:
        async with self._db.read() as conn:
            pending = await approvals_repo.count_pending(conn, owner, now=self._clock())
        return OutgoingEvent(cursor, "ready", ApprovalsReady(pending=pending).model_dump_json())

    async def _read(
        self, conn: DbConnection, owner: Principal, cursor: int
    ) -> list[ApprovalChangeRecord]:
        since = self._clock() - self._late if self._late else None
        return await approval_changes(conn, owner, after=cursor, since=since)

    async def _changes(
        self, owner: Principal, cursor: int, sent: dict[int, datetime]
    ) -> AsyncIterator[OutgoingEvent]:
        """The changes after ``cursor``, and those of the late-commit window not sent yet,
        oldest first, each with its approval as it is now."""
        oldest = self._clock() - self._late
        for known, at in list(sent.items()):
            if at < oldest:
                del sent[known]
        async with self._db.read() as conn:
            rows = await self._read(conn, owner, cursor)
            for row in rows:
                if row.id in sent or row.approval_id is None:  # (a change names its approval)
                    continue
                approval = await approvals_repo.find_approval(conn, owner, row.approval_id)
                if approval is None:  # its thread was deleted since
                    continue
                if self._late:
                    sent[row.id] = row.created_at
                change = ApprovalChange(
                    change=APPROVAL_CHANGES[row.action],
                    approval=approvals_repo.to_approval(approval),
                )
                yield OutgoingEvent(row.id, "approval", change.model_dump_json())
