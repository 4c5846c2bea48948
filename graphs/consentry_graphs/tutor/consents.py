"""The tutor's consent kinds: what each one proposes, what a person may change, and its rules.

- ``note_edit``: write a summary into the open note, merged into its summary section (keeping
  every line a person wrote) or at its end (approve, edit or reject).
- ``note_create``: save a summary as a new note, when no note is open, or a review of the
  project's notes (``reviews``) (approve, edit or reject).
- ``note_delete``: delete the open note. Destructive, so it always asks a person, whatever the
  thread's policy says, and it takes no edits (approve or reject).
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from consentry_graphs.consent import ConsentKind

__all__ = [
    "NOTE_CREATE",
    "NOTE_DELETE",
    "NOTE_EDIT",
    "NoteCreateProposal",
    "NoteCreateRevision",
    "NoteDeleteProposal",
    "NoteEditProposal",
    "NoteEditRevision",
]


class NoteEditProposal(BaseModel):
    """What the tutor asks to write into the open note: shown to the person in the consent."""

    project_id: str
    note_id: str = Field(description="The note to edit.")
    title: str
    base_version: int = Field(description="The version the edit is based on.")
    base_content: str
    proposed_content: str = Field(description="The full content of the note after the edit.")
    diff: str = Field(description="Unified diff from the base content to the proposed content.")
    person_lines_removed: int = Field(
        default=0,
        ge=0,
        description=(
            "Lines a person wrote or changed that the edit removes (the card says so plainly). "
            "The tutor's summaries keep every one: they rewrite only the tutor's own lines."
        ),
    )


class NoteCreateProposal(BaseModel):
    """A new note the tutor asks to create in the project."""

    project_id: str
    title: str
    content: str = Field(description="The full content of the new note.")


class NoteDeleteProposal(BaseModel):
    """The note the tutor asks to delete, as it was when the tutor asked."""

    note_id: str
    title: str
    version: int = Field(description="Deleted only if the note is still at this version.")
    content: str = Field(description="What is lost: the note's content at `version`.")


class _NoteRevision(BaseModel):
    """A person's own title and/or content instead of the proposed ones (decision ``edit``)."""

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


class NoteEditRevision(_NoteRevision):
    """A person's version of a ``note_edit`` proposal: the note's full content and/or title."""


class NoteCreateRevision(_NoteRevision):
    """A person's version of a ``note_create`` proposal: the new note's content and/or title."""


def _edit_as_action(proposal: NoteEditProposal) -> dict[str, str]:
    """A ``note_edit`` as a reviewed action's args: the note's title and content after it."""
    return {"title": proposal.title, "content": proposal.proposed_content}


def _edit_diff(proposal: NoteEditProposal) -> str:
    removed = proposal.person_lines_removed
    warning = f"It removes {removed} line(s) you wrote.\n\n" if removed else ""
    return f"{warning}```diff\n{proposal.diff.rstrip()}\n```"


NOTE_EDIT: ConsentKind[NoteEditProposal, NoteEditRevision] = ConsentKind(
    name="note_edit",
    proposal_model=NoteEditProposal,
    edit_model=NoteEditRevision,
    description="Write a new version of the open note (the tutor adds or updates its summary).",
    action_args=_edit_as_action,
    action_description=_edit_diff,
)
NOTE_CREATE: ConsentKind[NoteCreateProposal, NoteCreateRevision] = ConsentKind(
    name="note_create",
    proposal_model=NoteCreateProposal,
    edit_model=NoteCreateRevision,
    description="Create a new note in the project (the tutor saves a summary, or a review).",
)
NOTE_DELETE: ConsentKind[NoteDeleteProposal, BaseModel] = ConsentKind(
    name="note_delete",
    proposal_model=NoteDeleteProposal,
    edit_model=None,
    allowed_decisions=("approve", "reject"),
    always_ask=True,
    description="Delete the open note and its history, if it is unchanged since the request.",
)
