"""The tutor's state and the typed pieces stored in it."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["Intent", "NoteEditProposal", "NoteEditRevision", "TutorInput", "TutorState"]

Intent = Literal["answer", "search", "edit_note"]


class NoteEditProposal(BaseModel):
    """What the tutor asks to write: shown to the person in the consent event."""

    project_id: str
    note_id: str | None = Field(description="The note to edit; None proposes a new note.")
    title: str
    base_version: int | None = Field(description="The version the edit is based on (None: new).")
    base_content: str
    proposed_content: str = Field(description="The full content of the note after the edit.")
    diff: str = Field(description="Unified diff from the base content to the proposed content.")


class NoteEditRevision(BaseModel):
    """A person's own version of the proposal (decision ``edit``)."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(
        default=None, min_length=1, max_length=200_000, description="None keeps the proposed."
    )
    title: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("content")
    @classmethod
    def _content_is_not_blank(cls, content: str | None) -> str | None:
        if content is not None and not content.strip():
            raise ValueError("content must not be blank")
        return content

    @model_validator(mode="after")
    def _changes_something(self) -> Self:
        if self.content is None and self.title is None:
            raise ValueError("an edit sets `content`, `title` or both")
        return self


class TutorInput(TypedDict):
    """What the server sends for a new user message."""

    messages: list[AnyMessage]
    project_id: str
    note_id: str | None


class TutorState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    project_id: str
    note_id: str | None
    intent: Intent
    query: str
    found_notes: list[dict[str, Any]]
    proposal: dict[str, Any] | None
    decision: dict[str, Any] | None
