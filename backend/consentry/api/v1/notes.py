"""Projects, notes, note versions and full-text search (the work is :class:`NotesService`'s)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from consentry.api.http.deps import NotesDep, PrincipalDep, SettingsDep
from consentry.api.http.limits import check_note_text, page_limit
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.schemas.notes import (
    Note,
    NoteCreateRequest,
    NoteList,
    NoteUpdateRequest,
    NoteVersionList,
    Project,
    ProjectCreateRequest,
    ProjectList,
    SearchResults,
)

__all__ = ["router"]


router = APIRouter(prefix="/v1", tags=["notes"], responses=ERROR_RESPONSES)


@router.post("/projects", status_code=status.HTTP_201_CREATED)
async def create_project(
    body: ProjectCreateRequest, owner: PrincipalDep, notes: NotesDep
) -> Project:
    return await notes.create_project(owner, name=body.name)


@router.get("/projects")
async def list_projects(owner: PrincipalDep, notes: NotesDep) -> ProjectList:
    """The caller's projects; the default one is created on first use (with the sample notes,
    ``CONSENTRY_SAMPLE_NOTES``)."""
    return await notes.list_projects(owner)


@router.post("/projects/{project_id}/notes", status_code=status.HTTP_201_CREATED)
async def create_note(
    project_id: str,
    body: NoteCreateRequest,
    owner: PrincipalDep,
    notes: NotesDep,
    settings: SettingsDep,
) -> Note:
    check_note_text(settings, body.content)
    return await notes.create_note(owner, project_id, title=body.title, content=body.content)


@router.get("/projects/{project_id}/notes")
async def list_notes(project_id: str, owner: PrincipalDep, notes: NotesDep) -> NoteList:
    return await notes.list_notes(owner, project_id)


@router.get("/projects/{project_id}/search")
async def search_notes(
    project_id: str,
    owner: PrincipalDep,
    notes: NotesDep,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Annotated[int, page_limit(10, setting="max_search_results")],
) -> SearchResults:
    """Full-text search over the project's notes, best match first, with snippets."""
    return await notes.search_notes(owner, project_id, q, limit=limit)


@router.get("/notes/{note_id}")
async def get_note(note_id: str, owner: PrincipalDep, notes: NotesDep) -> Note:
    return await notes.get_note(owner, note_id)


@router.put("/notes/{note_id}")
async def update_note(
    note_id: str,
    body: NoteUpdateRequest,
    owner: PrincipalDep,
    notes: NotesDep,
    settings: SettingsDep,
) -> Note:
    """Write a new version based on `version`; a stale `version` gets 409 `version_conflict`."""
    check_note_text(settings, body.content)
    return await notes.update_note(
        owner, note_id, base_version=body.version, title=body.title, content=body.content
    )


@router.delete("/notes/{note_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_note(note_id: str, owner: PrincipalDep, notes: NotesDep) -> Response:
    await notes.delete_note(owner, note_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/notes/{note_id}/versions")
async def list_note_versions(note_id: str, owner: PrincipalDep, notes: NotesDep) -> NoteVersionList:
    return await notes.list_note_versions(owner, note_id)
