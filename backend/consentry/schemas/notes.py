"""Projects, notes, note versions and search results."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from consentry.schemas.requests import RequestModel

__all__ = [
    "Note",
    "NoteCreateRequest",
    "NoteList",
    "NoteUpdateRequest",
    "NoteVersion",
    "NoteVersionList",
    "Project",
    "ProjectCreateRequest",
    "ProjectList",
    "SearchHit",
    "SearchResults",
]

MAX_VERSION = 2**31 - 1
"""Versions are 32-bit integers on every database (PostgreSQL `integer`)."""
Title = Field(min_length=1, max_length=200)
Content = Field(description="At most `CONSENTRY_MAX_NOTE_CHARS` characters (default 200,000).")


class ProjectCreateRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)


class Project(BaseModel):
    project_id: str
    name: str
    is_default: bool
    created_at: datetime


class ProjectList(BaseModel):
    projects: list[Project]


class NoteCreateRequest(RequestModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Title
    content: str = Content


def _changes_something(schema: JsonDict) -> None:
    """The JSON Schema of ``NoteUpdateRequest`` says what its ``_changes_something`` checks."""
    schema["anyOf"] = [
        {"required": [name], "properties": {name: {"type": "string"}}}
        for name in ("title", "content")
    ]


class NoteUpdateRequest(RequestModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_changes_something)
    version: int = Field(ge=1, le=MAX_VERSION, description="The version this edit is based on.")
    title: str | None = Field(default=None, min_length=1, max_length=200)
    content: str | None = Field(
        default=None, description="At most `CONSENTRY_MAX_NOTE_CHARS` characters."
    )

    @model_validator(mode="after")
    def _changes_something(self) -> Self:
        if self.title is None and self.content is None:
            raise ValueError("send `title`, `content` or both")
        return self


class Note(BaseModel):
    note_id: str
    project_id: str
    title: str
    content: str
    version: int
    created_at: datetime
    updated_at: datetime


class NoteList(BaseModel):
    notes: list[Note]


class NoteVersion(BaseModel):
    note_id: str
    version: int
    title: str
    content: str
    author: Literal["user", "assistant"]
    approval_id: str | None = Field(description="The consent that authorized an assistant edit.")
    decision: Literal["approve", "edit"] | None = Field(
        description="How that consent was decided: `approve` (the tutor's proposal as it was) "
        "or `edit` (a person's version of it); null for a person's own save."
    )
    decided_by: str | None = Field(
        description="Who decided that consent: `tenant/user` or `policy`; null for a person's "
        "own save."
    )
    decided_by_name: str | None = Field(
        description="The decider's display name at decision time; null for `policy`, a key "
        "without a name, and a person's own save."
    )
    created_at: datetime


class NoteVersionList(BaseModel):
    versions: list[NoteVersion]


class SearchHit(BaseModel):
    note_id: str
    title: str
    snippet: str = Field(description="Matching text; matched terms are wrapped in `**`.")
    score: float = Field(description="Higher is more relevant.")


class SearchResults(BaseModel):
    query: str
    hits: list[SearchHit]
