"""The transcript: every user and assistant message of a thread, in order.

A graph keeps only a window of its messages in its state (``consentry_graphs.window``); this is
where the whole conversation stays. A user's message is added with the first events its run stores
after giving it to the graph (so after the replies that came before it), an assistant's when its
``message`` event is stored, in those same transactions. When a run's process dies first, the run is
closed with the messages it was given and the replies its checkpoint holds that are not here yet
(``runtime.dead_runs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.db.direct import direct
from consentry.storage.tables import threads, transcript

__all__ = [
    "TranscriptEntry",
    "add_to_transcript",
    "kept_message_ids",
    "mark_transcript_kept",
    "read_transcript",
]


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One message of a thread's transcript (a row of ``tables.transcript``, or one to add)."""

    message_id: str
    role: Literal["user", "assistant"]
    content: str


_ADD = direct(
    transcript.insert().values(
        thread_id=sa.bindparam("p_thread"),
        message_id=sa.bindparam("p_message"),
        role=sa.bindparam("p_role"),
        content=sa.bindparam("p_content"),
        created_at=sa.bindparam("p_now"),
    )
)
_READ = (
    sa.select(transcript.c.message_id, transcript.c.role, transcript.c.content)
    .where(transcript.c.thread_id == sa.bindparam("p_thread"))
    .order_by(transcript.c.id)
)
_MARK_KEPT = direct(
    threads.update().where(threads.c.id == sa.bindparam("p_thread")).values(transcript_kept=True)
)


async def add_to_transcript(
    conn: DbConnection, thread_id: str, entries: Iterable[TranscriptEntry], *, now: datetime
) -> None:
    rows = [
        {
            "p_thread": thread_id,
            "p_message": entry.message_id,
            "p_role": entry.role,
            "p_content": entry.content,
            "p_now": now,
        }
        for entry in entries
    ]
    if rows:
        await execute_unread(conn, _ADD, rows)


async def read_transcript(conn: DbConnection, thread_id: str) -> Sequence[TranscriptEntry]:
    rows = await conn.execute(_READ, {"p_thread": thread_id})
    return [TranscriptEntry(row.message_id, row.role, row.content) for row in rows]


async def kept_message_ids(
    conn: DbConnection, thread_id: str, message_ids: Sequence[str]
) -> set[str]:
    """Which of ``message_ids`` the thread's transcript has."""
    if not message_ids:
        return set()
    rows = await conn.execute(
        sa.select(transcript.c.message_id).where(
            transcript.c.thread_id == thread_id, transcript.c.message_id.in_(message_ids)
        )
    )
    return {str(row.message_id) for row in rows}


async def mark_transcript_kept(conn: DbConnection, thread_id: str) -> None:
    """The transcript of this thread (from before the table existed) is now whole."""
    await conn.execute(_MARK_KEPT, {"p_thread": thread_id})
