"""The approvals inbox: consent records as reviewers and other frontends see them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic.config import JsonDict

from consentry.schemas.requests import RequestModel
from consentry_graphs.wire_types import Decision

__all__ = [
    "RAW_INTERRUPT",
    "TOOL_CALL",
    "Approval",
    "ApprovalList",
    "ApprovalStatus",
    "DecisionAccepted",
    "DecisionFields",
    "DecisionRequest",
    "RecordedDecision",
    "answer_by_default",
    "check_decision_fields",
    "edited_goes_with_edit",
]

RAW_INTERRUPT = "interrupt"
"""The kind of a consent asked by a raw ``interrupt(value)`` (not the consent kit): it is
answered with any JSON value, which the graph receives as is."""

TOOL_CALL = "tool_call"
"""The kind of a consent asked by LangChain's ``HumanInTheLoopMiddleware``: one tool call to
review (``approve``, ``edit`` its args, ``reject``, ``respond`` in the tool's place)."""

ApprovalStatus = Literal[
    "pending", "approved", "edited", "rejected", "answered", "expired", "cancelled", "superseded"
]


_WITH_FIELDS = ("edit", "answer", "respond")


def edited_goes_with_edit(schema: JsonDict) -> None:
    """The JSON Schema of a decision (``DecisionRequest``, ``ResumeDecision``) says what
    :func:`check_decision_fields` checks: `edit` comes with `edited`, `answer` with `value`, the
    other decisions with neither."""
    schema["oneOf"] = [
        {
            "required": ["edited"],
            "properties": {
                "decision": {"const": "edit"},
                "edited": {"type": "object"},
                "value": {"type": "null"},
            },
        },
        {
            "required": ["value"],
            "properties": {"decision": {"const": "answer"}, "edited": {"type": "null"}},
        },
        {
            "required": ["comment"],
            "properties": {
                "decision": {"const": "respond"},
                "comment": {"type": "string", "minLength": 1},
                "edited": {"type": "null"},
                "value": {"type": "null"},
            },
        },
        {
            "properties": {
                "decision": {"enum": [d for d in get_args(Decision) if d not in _WITH_FIELDS]},
                "edited": {"type": "null"},
                "value": {"type": "null"},
            },
        },
    ]


def answer_by_default(data: Any) -> Any:
    """A decision that carries a ``value`` and no ``decision`` is an ``answer``."""
    if isinstance(data, dict) and "value" in data and "decision" not in data:
        return {**data, "decision": "answer"}
    return data


def check_decision_fields(
    decision: Decision, edited: Any, value: Any, value_given: bool, comment: str | None
) -> None:
    """`edit` comes with `edited`, `answer` with `value` (any JSON, null too), `respond` with a
    `comment` (the tool's result), the others with neither (a null `value` is no value)."""
    if decision == "respond" and not comment:
        raise ValueError("decision `respond` needs `comment`: what the tool call returns")
    if decision == "edit" and edited is None:
        raise ValueError("decision `edit` needs `edited`")
    if decision != "edit" and edited is not None:
        raise ValueError("`edited` is only allowed with decision `edit`")
    if decision == "answer" and not value_given:
        raise ValueError("decision `answer` needs `value`")
    if decision != "answer" and value is not None:
        raise ValueError("`value` is only allowed with decision `answer`")


class DecisionFields(RequestModel):
    """What a person decides on a consent, wherever it is sent: ``edited`` for ``edit``,
    ``value`` for ``answer``, ``comment`` for ``respond`` (:func:`check_decision_fields`)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=edited_goes_with_edit)

    decision: Decision = Field(description="Omit it with `value`: an `answer`.")
    edited: dict[str, Any] | None = Field(
        default=None,
        description="With `edit`: the person's version, in the consent kind's edit schema "
        "(for `note_edit`: `{content, title?}`).",
    )
    value: JsonValue = Field(
        default=None,
        description="With `answer` (a raw `interrupt()`): the value the graph receives, any "
        "JSON, checked against the interrupt's `response_schema` when it has one.",
    )
    comment: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="before")
    @classmethod
    def _answer_by_default(cls, data: Any) -> Any:
        return answer_by_default(data)

    @model_validator(mode="after")
    def _fields_fit_the_decision(self) -> Self:
        given = "value" in self.model_fields_set
        check_decision_fields(self.decision, self.edited, self.value, given, self.comment)
        return self


class DecisionRequest(DecisionFields):
    """A decision on one consent (the body of ``POST /v1/approvals/{id}/decision``): with
    ``edited`` for ``edit``, ``value`` for ``answer``, ``comment`` for ``respond``."""


class RecordedDecision(BaseModel):
    """What was decided, by whom and when."""

    status: ApprovalStatus
    decision: str | None = Field(description="`approve`, `edit`, `reject`, `answer`, or `expire`.")
    decided_by: str | None = Field(description="`tenant/user`, `policy` or `system`.")
    decided_by_name: str | None = Field(
        description="The display name of the person who decided, as it was at decision time "
        "(`CONSENTRY_API_KEYS` `token=tenant:user:Display Name`); null for `policy`, `system`, "
        "and a key without a name.",
    )
    decided_at: datetime | None
    edited: dict[str, Any] | None
    value: JsonValue = Field(default=None, description="With `answer`: the value given.")
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
    interrupt_id: str = Field(
        default="",
        description="The LangGraph interrupt it answers (the consent event's); the tool calls "
        "of one review share it and are decided together.",
    )
    value: JsonValue = Field(
        default=None, description="Kind `interrupt`: the raw value the graph's interrupt() gave."
    )
    response_schema: dict[str, Any] | None = Field(
        default=None, description="Kind `interrupt`: the JSON Schema an answer must fit, if any."
    )
    created_at: datetime
    expires_at: datetime | None = Field(description="None: it waits until someone decides.")
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


ApprovalChangeKind = Literal["requested", "decided", "expired", "cancelled", "superseded"]


class ApprovalChange(BaseModel):
    """``GET /v1/approvals/stream``, ``event: approval``: one of the caller's approvals changed.
    ``approval`` is as it is when the frame was read (apply frames by ``approval_id``)."""

    change: ApprovalChangeKind
    approval: Approval


class ApprovalsReady(BaseModel):
    """``GET /v1/approvals/stream``, ``event: ready``: the changes after the client's cursor were
    sent; what follows is live. Its ``id:`` is the cursor to reconnect with."""

    pending: int = Field(description="How many of the caller's consents wait for a decision.")
