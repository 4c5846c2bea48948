"""What a graph receives through LangGraph's runtime context (``GraphContext``): the caller's
notes store, the ledger of effects already applied, who the user is, and the conversation window.

Graphs depend on these small protocols, never on the server: the server passes an implementation
scoped to the caller (tenant + user), and a test can pass its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from consentry_graphs.consent import EffectLedger
from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW

__all__ = [
    "AppliedDeletion",
    "AppliedEdit",
    "GraphContext",
    "NoteHit",
    "NoteSnapshot",
    "NotesStore",
]


class NoteSnapshot(BaseModel):
    note_id: str
    project_id: str
    title: str
    content: str
    version: int


class NoteHit(BaseModel):
    note_id: str
    title: str
    snippet: str
    score: float


class AppliedEdit(BaseModel):
    """The outcome of an approved note edit or creation; the same one every time for an approval."""

    outcome: Literal["applied", "note_changed", "note_missing"]
    note: NoteSnapshot | None = None
    current_version: int | None = None


class AppliedDeletion(BaseModel):
    """The outcome of an approved note deletion; the same one every time for an approval."""

    outcome: Literal["deleted", "note_changed", "note_missing"]
    note_id: str
    current_version: int | None = Field(
        default=None, description="With `note_changed`: the version the note is at now."
    )


class NotesStore(Protocol):
    """Notes of one owner. Every method is scoped to that owner."""

    async def get_note(self, note_id: str) -> NoteSnapshot | None: ...

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]: ...

    async def apply_note_edit(
        self, *, approval_id: str, note_id: str, title: str, content: str, base_version: int
    ) -> AppliedEdit:
        """Write ``content`` as the next version of the note if it is still at ``base_version``,
        exactly once per ``approval_id``: a second call returns the first call's outcome and
        writes nothing."""
        ...

    async def apply_note_creation(
        self, *, approval_id: str, project_id: str, title: str, content: str
    ) -> AppliedEdit:
        """Create a note, exactly once per ``approval_id`` (a second call returns the first
        call's outcome and creates nothing)."""
        ...

    async def apply_note_deletion(
        self, *, approval_id: str, note_id: str, version: int
    ) -> AppliedDeletion:
        """Delete the note if it is still at ``version``, exactly once per ``approval_id`` (a
        second call returns the first call's outcome and deletes nothing)."""
        ...


@dataclass(frozen=True)
class GraphContext:
    """LangGraph runtime context for every graph Consentry serves."""

    notes: NotesStore
    effects: EffectLedger
    user: str
    conversation_window: int = DEFAULT_CONVERSATION_WINDOW
    """Messages the graph keeps in its state (``consentry_graphs.window``); older ones live only in
    the server's transcript."""
