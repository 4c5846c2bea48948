"""The note an SDK thread is about, named by its client in the thread's metadata.

A LangGraph SDK client (Agent Chat UI, ``useStream``) sends only ``{"messages": [...]}`` with
each run, so the tutor would never know which note a conversation is about. The thread's
``metadata.note_id`` says it, on ``threads.create`` or ``threads.update``:

- the value is one of the owner's notes (another owner's or an unknown one: 404
  ``note_not_found``), or ``null`` for none; any other value is 422 ``request_invalid``;
- it is the thread's note (``threads.note_id``, what ``GET /v1/threads?note_id=`` lists), not
  stored among the client's keys; an SDK run whose ``input`` names no note is about it
  (``start._targets``: one deleted since is none);
- a thread keeps its project: ``threads.create`` puts a thread with a note in the note's
  project, and ``threads.update`` with a note of another project is 422 ``project_mismatch``
  (a run claiming the thread meanwhile never sees its project change under it).

Changing it changes what the thread's next runs are about; a consent already asked keeps the
note its proposal names.
"""

from __future__ import annotations

from typing import Any

from consentry.errors import InvalidRequestError
from consentry.principal import Principal
from consentry.storage import notes as notes_repo
from consentry.storage import threads as threads_repo
from consentry.storage.db.database import DbConnection
from consentry.storage.notes import NoteRecord
from consentry.storage.threads import ThreadRecord

__all__ = ["named_note", "set_thread_note"]


async def named_note(conn: DbConnection, owner: Principal, value: Any) -> NoteRecord | None:
    """The owner's note ``metadata.note_id`` names (None for ``null``)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(
            "`metadata.note_id` is the id of one of your notes, or null for none.",
            details={
                "errors": [
                    {
                        "loc": ["body", "metadata", "note_id"],
                        "msg": "a note's id (a string) or null",
                        "type": "string_type",
                    }
                ]
            },
        )
    return await notes_repo.get_note(conn, owner, value)


async def set_thread_note(
    conn: DbConnection, owner: Principal, row: ThreadRecord, value: Any
) -> None:
    """Make the note ``value`` names the thread's (``row``, read in this write transaction)."""
    note = await named_note(conn, owner, value)
    if note is not None and note.project_id != row.project_id:
        raise InvalidRequestError(
            f"Thread {row.id!r} keeps its project: {row.project_id!r}; note {note.note_id!r} "
            f"is in project {note.project_id!r}.",
            code="project_mismatch",
            details={"project_id": row.project_id, "note_project_id": note.project_id},
        )
    await threads_repo.set_note(conn, row.id, note_id=None if note is None else note.note_id)
