"""The tutor's note effects, each applied once per approval: the effects ledger row
(:func:`consentry.storage.effects.apply_once`) and the note write share the caller's transaction,
and a second call for the same approval returns the recorded outcome."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.effects import apply_once
from consentry.storage.notes import (
    NoteRecord,
    create_note,
    delete_note_at_version,
    find_note,
    update_note,
)
from consentry_graphs.services import AppliedDeletion, AppliedEdit, NoteSnapshot

__all__ = ["apply_note_creation", "apply_note_deletion", "apply_note_edit", "note_snapshot"]


def note_snapshot(note: NoteRecord) -> NoteSnapshot:
    """A note as a graph sees it."""
    return NoteSnapshot(
        note_id=note.note_id,
        project_id=note.project_id,
        title=note.title,
        content=note.content,
        version=note.version,
    )


async def apply_note_edit(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    approval_id: str,
    note_id: str,
    title: str,
    content: str,
    base_version: int,
    now: datetime,
) -> AppliedEdit:
    """Apply an approved edit exactly once: the ledger row and the note write share this
    transaction, and a second call for the same approval returns the recorded outcome."""

    async def act() -> AppliedEdit:
        current = await find_note(conn, owner, note_id)
        if current is None:
            outcome = AppliedEdit(outcome="note_missing")
        elif current.version != base_version:
            outcome = AppliedEdit(outcome="note_changed", current_version=current.version)
        else:
            note = await update_note(
                conn,
                owner,
                note_id,
                base_version=base_version,
                title=title,
                content=content,
                now=now,
                approval_id=approval_id,
            )
            outcome = AppliedEdit(outcome="applied", note=note_snapshot(note))
        return outcome

    return await _edit_once(
        conn,
        owner,
        thread_id=thread_id,
        approval_id=approval_id,
        kind="note_edit",
        act=act,
        now=now,
    )


async def apply_note_creation(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    approval_id: str,
    project_id: str,
    title: str,
    content: str,
    now: datetime,
) -> AppliedEdit:
    """Create an approved note exactly once (the ledger row shares this transaction)."""

    async def act() -> AppliedEdit:
        note = await create_note(
            conn,
            owner,
            project_id=project_id,
            title=title,
            content=content,
            now=now,
            approval_id=approval_id,
        )
        return AppliedEdit(outcome="applied", note=note_snapshot(note))

    return await _edit_once(
        conn,
        owner,
        thread_id=thread_id,
        approval_id=approval_id,
        kind="note_create",
        act=act,
        now=now,
    )


async def _edit_once(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    approval_id: str,
    kind: str,
    act: Callable[[], Awaitable[AppliedEdit]],
    now: datetime,
) -> AppliedEdit:
    """``act`` once per approval (``apply_once``), its outcome an :class:`AppliedEdit`."""
    return await apply_once(
        conn,
        owner,
        thread_id=thread_id,
        approval_id=approval_id,
        kind=kind,
        result_model=AppliedEdit,
        act=act,
        now=now,
    )


async def apply_note_deletion(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    approval_id: str,
    note_id: str,
    version: int,
    now: datetime,
) -> AppliedDeletion:
    """Delete an approved note exactly once, and only if it is still at ``version``."""

    async def act() -> AppliedDeletion:
        if await delete_note_at_version(conn, owner, note_id, version=version):
            outcome = AppliedDeletion(outcome="deleted", note_id=note_id)
        else:
            current = await find_note(conn, owner, note_id)
            outcome = (
                AppliedDeletion(outcome="note_missing", note_id=note_id)
                if current is None
                else AppliedDeletion(
                    outcome="note_changed", note_id=note_id, current_version=current.version
                )
            )
        return outcome

    return await apply_once(
        conn,
        owner,
        thread_id=thread_id,
        approval_id=approval_id,
        kind="note_delete",
        result_model=AppliedDeletion,
        act=act,
        now=now,
    )
