"""Notes in memory: a ``NotesStore`` for running the tutor without a server (tests, examples, and
the benchmark's naive baseline). Like the server's store, it applies each approval at most once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from consentry_graphs.services import AppliedDeletion, AppliedEdit, NoteHit, NoteSnapshot

__all__ = ["EffectCall", "InMemoryNotesStore"]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class EffectCall:
    """One call of an effect method of the store, with its arguments."""

    method: str
    approval_id: str
    args: dict[str, Any]


@dataclass
class InMemoryNotesStore:
    """A NotesStore for one owner, in memory; applies each approval at most once. ``notes`` is
    in the order they were last written (those given first, in the order given): a write moves
    a note to the end."""

    notes: dict[str, NoteSnapshot] = field(default_factory=dict)
    calls: list[EffectCall] = field(default_factory=list)
    outcomes: dict[str, AppliedEdit | AppliedDeletion] = field(default_factory=dict)
    writes: int = 0

    async def get_note(self, note_id: str) -> NoteSnapshot | None:
        return self.notes.get(note_id)

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]:
        words = set(_WORD.findall(query.lower()))
        return [
            NoteHit(note_id=note.note_id, title=note.title, snippet=note.content, score=1.0)
            for note in self.notes.values()
            if note.project_id == project_id and words & set(_WORD.findall(note.content.lower()))
        ][:limit]

    async def recent_notes(self, project_id: str, *, limit: int) -> list[NoteSnapshot]:
        written = [note for note in self.notes.values() if note.project_id == project_id]
        return written[::-1][:limit]

    def _recorded(
        self, method: str, approval_id: str, **args: Any
    ) -> AppliedEdit | AppliedDeletion | None:
        self.calls.append(EffectCall(method, approval_id, args))
        return self.outcomes.get(approval_id)

    async def apply_note_edit(
        self, *, approval_id: str, note_id: str, title: str, content: str, base_version: int
    ) -> AppliedEdit:
        recorded = self._recorded(
            "apply_note_edit",
            approval_id,
            note_id=note_id,
            title=title,
            content=content,
            base_version=base_version,
        )
        if isinstance(recorded, AppliedEdit):
            return recorded
        current = self.notes.get(note_id)
        if current is None:
            outcome = AppliedEdit(outcome="note_missing")
        elif current.version != base_version:
            outcome = AppliedEdit(outcome="note_changed", current_version=current.version)
        else:
            written = current.model_copy(
                update={"title": title, "content": content, "version": current.version + 1}
            )
            outcome = self._write(written)
        self.outcomes[approval_id] = outcome
        return outcome

    async def apply_note_creation(
        self, *, approval_id: str, project_id: str, title: str, content: str
    ) -> AppliedEdit:
        recorded = self._recorded(
            "apply_note_creation", approval_id, project_id=project_id, title=title, content=content
        )
        if isinstance(recorded, AppliedEdit):
            return recorded
        created = NoteSnapshot(
            note_id=f"note-{len(self.notes) + 1}",
            project_id=project_id,
            title=title,
            content=content,
            version=1,
        )
        outcome = self._write(created)
        self.outcomes[approval_id] = outcome
        return outcome

    async def apply_note_deletion(
        self, *, approval_id: str, note_id: str, version: int
    ) -> AppliedDeletion:
        recorded = self._recorded(
            "apply_note_deletion", approval_id, note_id=note_id, version=version
        )
        if isinstance(recorded, AppliedDeletion):
            return recorded
        current = self.notes.get(note_id)
        if current is None:
            deletion = AppliedDeletion(outcome="note_missing", note_id=note_id)
        elif current.version != version:
            deletion = AppliedDeletion(
                outcome="note_changed", note_id=note_id, current_version=current.version
            )
        else:
            del self.notes[note_id]
            self.writes += 1
            deletion = AppliedDeletion(outcome="deleted", note_id=note_id)
        self.outcomes[approval_id] = deletion
        return deletion

    def _write(self, note: NoteSnapshot) -> AppliedEdit:
        self.notes.pop(note.note_id, None)  # the most recently written last
        self.notes[note.note_id] = note
        self.writes += 1
        return AppliedEdit(outcome="applied", note=note)
