"""``POST /v1/chat``: a user message, or a person's decision on a pending consent."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from backend.schemas.requests import RequestModel
from graphs.wire_types import Decision

__all__ = ["ChatRequest", "ConsentPolicy", "ResumeDecision"]

ConsentPolicy = Literal["ask", "auto_approve", "auto_reject"]


class ResumeDecision(RequestModel):
    """A person's answer to a ``consent`` event."""

    model_config = ConfigDict(extra="forbid")

    approval_id: str = Field(min_length=1, max_length=64, description="From the consent event.")
    decision: Decision
    edited: dict[str, Any] | None = Field(
        default=None,
        description="With `edit`: the person's version, in the consent kind's edit schema "
        "(for `note_edit`: `{content, title?}`).",
    )
    comment: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _edited_goes_with_edit(self) -> Self:
        if self.decision == "edit" and self.edited is None:
            raise ValueError("decision `edit` needs `edited`")
        if self.decision != "edit" and self.edited is not None:
            raise ValueError("`edited` is only allowed with decision `edit`")
        return self


class ChatRequest(RequestModel):
    """Start a run: exactly one of ``message`` or ``resume``."""

    model_config = ConfigDict(extra="forbid")

    thread_id: str | None = Field(
        default=None, min_length=1, max_length=36, description="Omit to start a new thread."
    )
    graph: str = Field(default="tutor", min_length=1, max_length=64)
    project_id: str | None = Field(default=None, min_length=1, max_length=36)
    note_id: str | None = Field(
        default=None, min_length=1, max_length=36, description="The note the user is looking at."
    )
    message: str | None = Field(default=None, min_length=1)
    resume: ResumeDecision | Annotated[list[ResumeDecision], Field(max_length=50)] | None = Field(
        default=None,
        description="A decision on a pending consent, or a list of decisions on several pending "
        "consents of the thread (parallel branches), applied together.",
    )
    consent_policy: ConsentPolicy | None = Field(
        default=None,
        description="For a new thread: `ask` (default: a person decides every consent), "
        "`auto_approve` (decided by `policy`), `auto_reject` (dry run: nothing applied). "
        "Consents of destructive kinds always ask.",
    )
    on_pending_consent: Literal["fail", "reject"] = Field(
        default="fail",
        description="A message while a consent is pending: `fail` (409 `consent_pending`) or "
        "`reject` (reject the pending consents first, in the same transaction).",
    )

    @model_validator(mode="after")
    def _exactly_one_input(self) -> Self:
        if (self.message is None) == (self.resume is None):
            raise ValueError("send exactly one of `message` or `resume`")
        if self.message is not None and not self.message.strip():
            raise ValueError("`message` must not be blank")
        if isinstance(self.resume, list):
            ids = [decision.approval_id for decision in self.resume]
            if not ids or len(set(ids)) != len(ids):
                raise ValueError("`resume` lists each pending consent once")
        return self

    @property
    def decisions(self) -> list[ResumeDecision]:
        if self.resume is None:
            return []
        return self.resume if isinstance(self.resume, list) else [self.resume]
