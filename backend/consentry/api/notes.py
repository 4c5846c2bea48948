"""Projects, notes, note versions and full-text search."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from consentry.api.deps import PrincipalDep, ServicesDep
from consentry.api.limits import check_note_text, page_limit
from consentry.api.responses import ERROR_RESPONSES
from consentry.runtime.notes import default_project_id
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
from consentry.storage import notes as repo

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["notes"], responses=ERROR_RESPONSES)


@router.post("/projects", status_code=status.HTTP_201_CREATED)
async def create_project(
    body: ProjectCreateRequest, owner: PrincipalDep, services: ServicesDep
) -> Project:
    async with services.db.write() as conn:
        return await repo.create_project(conn, owner, name=body.name, now=services.clock())


@router.get("/projects")
async def list_projects(owner: PrincipalDep, services: ServicesDep) -> ProjectList:
    """The caller's projects; the default one is created on first use (with the sample notes,
    ``CONSENTRY_SAMPLE_NOTES``)."""
    async with services.db.read() as conn:
        if await repo.find_default_project_id(conn, owner) is not None:
            return ProjectList(projects=await repo.list_projects(conn, owner))
    async with services.db.write() as conn:  # first use: create it, with the sample notes
        await default_project_id(conn, owner, now=services.clock(), samples=services.sample_notes)
        return ProjectList(projects=await repo.list_projects(conn, owner))


@router.post("/projects/{project_id}/notes", status_code=status.HTTP_201_CREATED)
async def create_note(
    project_id: str, body: NoteCreateRequest, owner: PrincipalDep, services: ServicesDep
) -> Note:
    check_note_text(services.settings, body.content)
    async with services.db.write() as conn:
        return await repo.create_note(
            conn,
            owner,
            project_id=project_id,
            title=body.title,
            content=body.content,
            now=services.clock(),
        )


@router.get("/projects/{project_id}/notes")
async def list_notes(project_id: str, owner: PrincipalDep, services: ServicesDep) -> NoteList:
    async with services.db.read() as conn:
        return NoteList(notes=await repo.list_notes(conn, owner, project_id))


@router.get("/projects/{project_id}/search")
async def search_notes(
    project_id: str,
    owner: PrincipalDep,
    services: ServicesDep,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Annotated[int, page_limit(10, setting="max_search_results")],
) -> SearchResults:
    """Full-text search over the project's notes, best match first, with snippets."""
    async with services.db.read() as conn:
        await repo.get_project(conn, owner, project_id)
        hits = await repo.search_notes(conn, owner, project_id, q, limit=limit)
    return SearchResults(query=q, hits=hits)


@router.get("/notes/{note_id}")
async def get_note(note_id: str, owner: PrincipalDep, services: ServicesDep) -> Note:
    async with services.db.read() as conn:
        return await repo.get_note(conn, owner, note_id)


@router.put("/notes/{note_id}")
async def update_note(
    note_id: str, body: NoteUpdateRequest, owner: PrincipalDep, services: ServicesDep
) -> Note:
    """Write a new version based on `version`; a stale `version` gets 409 `version_conflict`."""
    check_note_text(services.settings, body.content)
    async with services.db.write() as conn:
        return await repo.update_note(
            conn,
            owner,
            note_id,
            base_version=body.version,
            title=body.title,
            content=body.content,
            now=services.clock(),
        )


@router.delete("/notes/{note_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_note(note_id: str, owner: PrincipalDep, services: ServicesDep) -> Response:
    async with services.db.write() as conn:
        await repo.delete_note(conn, owner, note_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/notes/{note_id}/versions")
async def list_note_versions(
    note_id: str, owner: PrincipalDep, services: ServicesDep
) -> NoteVersionList:
    async with services.db.read() as conn:
        return NoteVersionList(versions=await repo.list_note_versions(conn, owner, note_id))
