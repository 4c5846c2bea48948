"""Changing a thread's graph state outside a run: holding its row for the change (no run may
start, and none started since it was read), and copying it under a new id."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.tables import threads, transcript
from consentry.storage.threads._records import ThreadRecord


async def hold_thread(
    conn: DbConnection, owner: Principal, row: ThreadRecord, *, idle_at: datetime | None
) -> bool:
    """Hold the owner's thread ``row`` in ``conn``'s transaction while it is as read: no run
    active, none claimed since (its ``last_seq``). With ``idle_at`` (its graph state is
    updated), it becomes ``idle`` (its consents were closed) then, and its fencing token moves
    on (``leases.Claim.follows``); else nothing changes. False: it is not as read."""
    changes: dict[str, object] = {"updated_at": threads.c.updated_at}  # a no-op: a row lock
    if idle_at is not None:
        changes = {
            "status": "idle",
            "updated_at": idle_at,
            "fencing_token": threads.c.fencing_token + 1,
        }
    held = await conn.execute(
        threads.update()
        .where(
            threads.c.id == row.id,
            threads.c.tenant == owner.tenant,
            threads.c.user_id == owner.user,
            threads.c.status == row.status,
            threads.c.status != "running",
            threads.c.last_seq == row.last_seq,
        )
        .values(**changes)
        .returning(threads.c.id)
    )
    return held.first() is not None


async def copy_thread(
    conn: DbConnection, row: ThreadRecord, *, thread_id: str, now: datetime
) -> None:
    """A new idle thread ``thread_id`` with ``row``'s owner, graph, project, note, title,
    policy, options, assistant and metadata, and its transcript; no runs, no events, no
    consents (the caller copies its checkpoints)."""
    await conn.execute(
        threads.insert().values(
            id=thread_id,
            tenant=row.tenant,
            user_id=row.user_id,
            graph=row.graph,
            project_id=row.project_id,
            note_id=row.note_id,
            title=row.title,
            status="idle",
            last_reason=row.last_reason,
            last_seq=0,
            consent_policy=row.consent_policy,
            transcript_kept=row.transcript_kept,
            created_at=now,
            updated_at=now,
            metadata=row.metadata,
            run_options=row.run_options,
            assistant_id=row.assistant_id,
        )
    )
    copied = sa.select(
        sa.literal(thread_id),
        transcript.c.message_id,
        transcript.c.role,
        transcript.c.content,
        transcript.c.created_at,
    ).where(transcript.c.thread_id == row.id)
    columns = ["thread_id", "message_id", "role", "content", "created_at"]
    await conn.execute(transcript.insert().from_select(columns, copied.order_by(transcript.c.id)))
