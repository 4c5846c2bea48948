"""A note's history: every version it had, with who wrote it and, for the assistant's, the consent
that authorized it (the versions themselves are written with each note write,
:mod:`consentry.storage.notes`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.approvals import DECIDED_BY_NAME
from consentry.storage.db.database import DbConnection
from consentry.storage.notes import get_note
from consentry.storage.tables import approvals, note_versions

__all__ = ["NoteVersionRecord", "list_note_versions"]


@dataclass(frozen=True, slots=True)
class NoteVersionRecord:
    """One stored version of a note (the wire model, which documents each field, is
    :class:`consentry.schemas.notes.NoteVersion`)."""

    note_id: str
    version: int
    title: str
    content: str
    author: Literal["user", "assistant"]
    approval_id: str | None
    decision: Literal["approve", "edit"] | None
    decided_by: str | None
    decided_by_name: str | None
    created_at: datetime


async def list_note_versions(
    conn: DbConnection, owner: Principal, note_id: str
) -> list[NoteVersionRecord]:
    """Every version, oldest first; an assistant's with the decision on the consent that
    authorized it (the approval the version carries; the owner's own, as the note is)."""
    await get_note(conn, owner, note_id)
    rows = await conn.execute(
        sa.select(
            note_versions,
            approvals.c.decision.label("approval_decision"),
            approvals.c.decided_by,
        )
        .select_from(
            note_versions.outerjoin(approvals, approvals.c.id == note_versions.c.approval_id)
        )
        .where(note_versions.c.note_id == note_id)
        .order_by(note_versions.c.version)
    )
    versions = []
    for row in rows:
        recorded = row.approval_decision or {}
        decision = recorded.get("decision")
        versions.append(
            NoteVersionRecord(
                note_id=row.note_id,
                version=row.version,
                title=row.title,
                content=row.content,
                author=row.author,
                approval_id=row.approval_id,
                decision=decision if decision in ("approve", "edit") else None,
                decided_by=row.decided_by if row.approval_id else None,
                decided_by_name=recorded.get(DECIDED_BY_NAME),
                created_at=row.created_at,
            )
        )
    return versions
