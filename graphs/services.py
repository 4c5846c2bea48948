"""The services a graph receives through LangGraph's runtime context.

Graphs depend on these small protocols, never on the server: the server passes an implementation
scoped to the caller (tenant + user), and a test can pass its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel

from graphs.consent import EffectLedger

__all__ = ["AppliedEdit", "GraphContext", "NoteHit", "NoteSnapshot", "NotesStore"]


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
    """The outcome of applying an approved note edit; the same one every time for an approval."""

    outcome: Literal["applied", "note_changed", "note_missing"]
    note: NoteSnapshot | None = None
    current_version: int | None = None


class NotesStore(Protocol):
    """Notes of one owner. Every method is scoped to that owner."""

    async def get_note(self, note_id: str) -> NoteSnapshot | None: ...

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]: ...

    async def apply_note_edit(
        self,
        *,
        approval_id: str,
        project_id: str,
        note_id: str | None,
        title: str,
        content: str,
        base_version: int | None,
    ) -> AppliedEdit:
        """Write ``content`` as the next version of the note (or create it), exactly once per
        ``approval_id``: a second call returns the first call's outcome and writes nothing."""
        ...


@dataclass(frozen=True)
class GraphContext:
    """LangGraph runtime context for every graph Consentry serves."""

    notes: NotesStore
    effects: EffectLedger
    user: str
