"""The notes service behind ``/v1/projects`` and ``/v1/notes``: each call is one transaction (a
read, or a write when it writes), scoped to the caller, and answers with the wire models.

Errors come from storage unchanged: an unknown (or another owner's) project or note is 404
``not_found``, a stale base version 409 ``version_conflict``.
"""

from __future__ import annotations

from collections.abc import Sequence

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.notes._samples import SampleNote, default_project_id
from consentry.schemas.notes import (
    Note,
    NoteList,
    NoteVersion,
    NoteVersionList,
    Project,
    ProjectList,
    SearchHit,
    SearchResults,
)
from consentry.storage import note_search, note_versions
from consentry.storage import notes as notes_repo
from consentry.storage import projects as projects_repo
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.note_search import SearchHitRecord
from consentry.storage.note_versions import NoteVersionRecord
from consentry.storage.notes import NoteRecord
from consentry.storage.projects import ProjectRecord

__all__ = ["NotesService"]


class NotesService:
    """Projects, notes, their versions and search, for one caller per call."""

    def __init__(self, *, db: Database, clock: Clock, sample_notes: Sequence[SampleNote]) -> None:
        """``sample_notes``: what an owner's default project starts with, when listing the
        projects creates it (``CONSENTRY_SAMPLE_NOTES``)."""
        self._db = db
        self._clock = clock
        self._sample_notes = sample_notes

    async def create_project(self, owner: Principal, *, name: str) -> Project:
        async with self._db.write() as conn:
            project = await projects_repo.create_project(conn, owner, name=name, now=self._clock())
        return _project(project)

    async def list_projects(self, owner: Principal) -> ProjectList:
        """The owner's projects; the default one is created on first use (with the samples)."""
        async with self._db.read() as conn:
            if await projects_repo.find_default_project_id(conn, owner) is not None:
                return await _projects(conn, owner)
        async with self._db.write() as conn:  # first use: create it, with the sample notes
            await default_project_id(conn, owner, now=self._clock(), samples=self._sample_notes)
            return await _projects(conn, owner)

    async def create_note(
        self, owner: Principal, project_id: str, *, title: str, content: str
    ) -> Note:
        async with self._db.write() as conn:
            note = await notes_repo.create_note(
                conn, owner, project_id=project_id, title=title, content=content, now=self._clock()
            )
        return _note(note)

    async def list_notes(self, owner: Principal, project_id: str) -> NoteList:
        async with self._db.read() as conn:
            notes = await notes_repo.list_notes(conn, owner, project_id)
        return NoteList(notes=[_note(note) for note in notes])

    async def search_notes(
        self, owner: Principal, project_id: str, query: str, *, limit: int
    ) -> SearchResults:
        """The project's notes that match ``query``, best first (404 for an unknown project)."""
        async with self._db.read() as conn:
            await projects_repo.get_project(conn, owner, project_id)
            hits = await note_search.search_notes(conn, owner, project_id, query, limit=limit)
        return SearchResults(query=query, hits=[_search_hit(hit) for hit in hits])

    async def get_note(self, owner: Principal, note_id: str) -> Note:
        async with self._db.read() as conn:
            note = await notes_repo.get_note(conn, owner, note_id)
        return _note(note)

    async def update_note(
        self,
        owner: Principal,
        note_id: str,
        *,
        base_version: int,
        title: str | None,
        content: str | None,
    ) -> Note:
        """Write the next version if the note is still at ``base_version``; else 409."""
        async with self._db.write() as conn:
            note = await notes_repo.update_note(
                conn,
                owner,
                note_id,
                base_version=base_version,
                title=title,
                content=content,
                now=self._clock(),
            )
        return _note(note)

    async def delete_note(self, owner: Principal, note_id: str) -> None:
        async with self._db.write() as conn:
            await notes_repo.delete_note(conn, owner, note_id)

    async def list_note_versions(self, owner: Principal, note_id: str) -> NoteVersionList:
        async with self._db.read() as conn:
            versions = await note_versions.list_note_versions(conn, owner, note_id)
        return NoteVersionList(versions=[_note_version(version) for version in versions])


async def _projects(conn: DbConnection, owner: Principal) -> ProjectList:
    projects = await projects_repo.list_projects(conn, owner)
    return ProjectList(projects=[_project(project) for project in projects])


def _project(record: ProjectRecord) -> Project:
    return Project(
        project_id=record.project_id,
        name=record.name,
        is_default=record.is_default,
        created_at=record.created_at,
    )


def _note(record: NoteRecord) -> Note:
    return Note(
        note_id=record.note_id,
        project_id=record.project_id,
        title=record.title,
        content=record.content,
        version=record.version,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _note_version(record: NoteVersionRecord) -> NoteVersion:
    return NoteVersion(
        note_id=record.note_id,
        version=record.version,
        title=record.title,
        content=record.content,
        author=record.author,
        approval_id=record.approval_id,
        decision=record.decision,
        decided_by=record.decided_by,
        decided_by_name=record.decided_by_name,
        created_at=record.created_at,
    )


def _search_hit(record: SearchHitRecord) -> SearchHit:
    return SearchHit(
        note_id=record.note_id, title=record.title, snippet=record.snippet, score=record.score
    )
