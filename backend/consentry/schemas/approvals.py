"""The approvals inbox: consent records as reviewers and other frontends see them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from consentry.schemas.requests import RequestModel
from consentry_graphs.wire_types import Decision

__all__ = [
    "Approval",
    "ApprovalList",
    "ApprovalStatus",
    "DecisionAccepted",
    "DecisionRequest",
    "RecordedDecision",
    "edited_goes_with_edit",
]

ApprovalStatus = Literal["pending", "approved", "edited", "rejected", "expired", "cancelled"]


def edited_goes_with_edit(schema: JsonDict) -> None:
    """The JSON Schema of a decision (``DecisionRequest``, ``ResumeDecision``) says what their
    ``_edited_goes_with_edit`` checks: `edit` comes with `edited`, the other decisions without."""
    schema["oneOf"] = [
        {
            "required": ["edited"],
            "properties": {"decision": {"const": "edit"}, "edited": {"type": "object"}},
        },
        {
            "properties": {
                "decision": {"enum": [d for d in get_args(Decision) if d != "edit"]},
                "edited": {"type": "null"},
            }
        },
    ]


class DecisionRequest(RequestModel):
    """A decision on one consent (the body of ``POST /v1/approvals/{id}/decision``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=edited_goes_with_edit)

    decision: Decision
    edited: dict[str, Any] | None = Field(
        default=None, description="With `edit`: the person's version, in the kind's edit schema."
    )
    comment: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _edited_goes_with_edit(self) -> Self:
        if self.decision == "edit" and self.edited is None:
            raise ValueError("decision `edit` needs `edited`")
        if self.decision != "edit" and self.edited is not None:
            raise ValueError("`edited` is only allowed with decision `edit`")
        return self


class RecordedDecision(BaseModel):
    """What was decided, by whom and when."""

    status: ApprovalStatus
    decision: str | None = Field(description="`approve`, `edit`, `reject`, or `expire`.")
    decided_by: str | None = Field(description="`tenant/user`, `policy` or `system`.")
    decided_by_name: str | None = Field(
        description="The display name of the person who decided, as it was at decision time "
        "(`CONSENTRY_API_KEYS` `token=tenant:user:Display Name`); null for `policy`, `system`, "
        "and a key without a name.",
    )
    decided_at: datetime | None
    edited: dict[str, Any] | None
    comment: str | None


class Approval(BaseModel):
    approval_id: str
    thread_id: str
    run_id: str = Field(description="The run that asked.")
    kind: str
    title: str
    proposal: dict[str, Any]
    proposal_hash: str
    allowed_decisions: list[Decision]
    created_at: datetime
    expires_at: datetime
    status: ApprovalStatus
    decided: RecordedDecision | None = Field(description="None while pending.")


class ApprovalList(BaseModel):
    approvals: list[Approval]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next (older) page.")


class DecisionAccepted(BaseModel):
    """``202``: the decision is recorded; the graph resumes in the background."""

    approval_id: str
    thread_id: str
    run_id: str
    status: ApprovalStatus


ApprovalChangeKind = Literal["requested", "decided", "expired", "cancelled"]


class ApprovalChange(BaseModel):
    """``GET /v1/approvals/stream``, ``event: approval``: one of the caller's approvals changed.
    ``approval`` is as it is when the frame was read (apply frames by ``approval_id``)."""

    change: ApprovalChangeKind
    approval: Approval


class ApprovalsReady(BaseModel):
    """``GET /v1/approvals/stream``, ``event: ready``: the changes after the client's cursor were
    sent; what follows is live. Its ``id:`` is the cursor to reconnect with."""

    pending: int = Field(description="How many of the caller's consents wait for a decision.")
