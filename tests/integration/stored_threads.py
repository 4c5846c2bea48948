"""A thread row for storage-level tests: what ``storage.threads.create_thread`` writes for a new
conversation (in the default project, no note, consents asked)."""

from __future__ import annotations

from datetime import datetime

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.threads import create_thread

__all__ = ["add_thread"]


async def add_thread(
    conn: DbConnection,
    owner: Principal,
    thread_id: str,
    *,
    now: datetime,
    graph: str = "tutor",
    title: str = "A thread",
) -> None:
    await create_thread(
        conn,
        owner,
        thread_id=thread_id,
        graph=graph,
        project_id="project-1",
        note_id=None,
        title=title,
        consent_policy="ask",
        now=now,
    )
