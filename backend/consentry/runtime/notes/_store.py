"""The notes store a graph receives: the storage layer, scoped to one owner and the run's
thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.storage import leases, note_effects, note_search
from consentry.storage import notes as notes_repo
from consentry.storage.checkpoints import CheckpointFence
from consentry.storage.db.database import Database, DbConnection
from consentry_graphs.services import AppliedDeletion, AppliedEdit, NoteHit, NoteSnapshot

__all__ = ["OwnerNotesStore"]


class OwnerNotesStore:
    """Implements :class:`consentry_graphs.services.NotesStore` for one owner's run on
    ``thread_id``: its effects apply only approvals of that thread, and (``fence``) only while
    the run holds the thread's lease: a replica that stalled past its lease and wakes in the
    middle of an effect commits nothing of it (:class:`LeaseLostError`, and the run stops), so
    that the replica that took the run over applies it, once."""

    def __init__(
        self,
        db: Database,
        owner: Principal,
        clock: Clock,
        *,
        thread_id: str,
        fence: CheckpointFence | None = None,
    ) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock
        self._thread_id = thread_id
        self._fence = fence

    @asynccontextmanager
    async def _effect(self) -> AsyncIterator[DbConnection]:
        """A write transaction for an effect, committed only while the run holds its lease."""
        try:
            async with self._db.write() as conn:
                yield conn
                if self._fence is not None:
                    thread_id, run_id, token = self._fence
                    leases.commit_only_while_leased(
                        conn, thread_id, run_id=run_id, fencing_token=token
                    )
        except Exception as exc:
            if self._fence is not None and leases.release_refused(exc):
                raise leases.LeaseLostError(self._fence.run_id) from exc
            raise

    async def get_note(self, note_id: str) -> NoteSnapshot | None:
        async with self._db.read() as conn:
            note = await notes_repo.find_note(conn, self._owner, note_id)
        return None if note is None else note_effects.note_snapshot(note)

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]:
        async with self._db.read() as conn:
            hits = await note_search.search_notes(conn, self._owner, project_id, query, limit=limit)
        return [
            NoteHit(note_id=h.note_id, title=h.title, snippet=h.snippet, score=h.score)
            for h in hits
        ]

    async def recent_notes(self, project_id: str, *, limit: int) -> list[NoteSnapshot]:
        async with self._db.read() as conn:
            found = await notes_repo.recent_notes(conn, self._owner, project_id, limit=limit)
        return [note_effects.note_snapshot(note) for note in found]

    async def apply_note_edit(
        self, *, approval_id: str, note_id: str, title: str, content: str, base_version: int
    ) -> AppliedEdit:
        async with self._effect() as conn:
            return await note_effects.apply_note_edit(
                conn,
                self._owner,
                thread_id=self._thread_id,
                approval_id=approval_id,
                note_id=note_id,
                title=title,
                content=content,
                base_version=base_version,
                now=self._clock(),
            )

    async def apply_note_creation(
        self, *, approval_id: str, project_id: str, title: str, content: str
    ) -> AppliedEdit:
        async with self._effect() as conn:
            return await note_effects.apply_note_creation(
                conn,
                self._owner,
                thread_id=self._thread_id,
                approval_id=approval_id,
                project_id=project_id,
                title=title,
                content=content,
                now=self._clock(),
            )

    async def apply_note_deletion(
        self, *, approval_id: str, note_id: str, version: int
    ) -> AppliedDeletion:
        async with self._effect() as conn:
            return await note_effects.apply_note_deletion(
                conn,
                self._owner,
                thread_id=self._thread_id,
                approval_id=approval_id,
                note_id=note_id,
                version=version,
                now=self._clock(),
            )
