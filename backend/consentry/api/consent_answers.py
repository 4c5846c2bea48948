"""An answer to one pending consent, as a protocol face receives it, made a Consentry decision
(checked afterwards by the same consent gate as every other decision: one winner, expiry, the
kind's rules). Shared by the LangGraph SDK's ``command.resume`` and AG-UI's ``resume``:

- a raw ``interrupt()`` (kind ``interrupt``): any JSON, the answer as given;
- a consent kit's kind: the kit's decision, ``{"decision": "approve" | "edit" | "reject",
  "edited"?, "comment"?}``, or LangChain's human-in-the-loop decision on the request's reviewed
  action (``consentry_graphs.review_shape``): ``approve``; ``edit`` with ``edited_action.args``
  (the edit, named as the kind's edit model names it); ``reject`` with ``message``;
- one tool call of a review (kind ``tool_call``, LangChain's human-in-the-loop middleware): the
  middleware's decision for it (``approve``; ``edit`` with ``edited_action.args``; ``reject`` and
  ``respond`` with ``message``), or the kit's decision shape.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from consentry.errors import InvalidRequestError
from consentry.schemas.approvals import RAW_INTERRUPT
from consentry.schemas.chat import ResumeDecision
from consentry.schemas.events import ConsentEvent

__all__ = ["decision_on", "invalid_answer"]


def decision_on(consent: ConsentEvent, answer: Any) -> ResumeDecision:
    """The decision ``answer`` makes on ``consent`` (422 ``invalid_resume`` when it is none)."""
    try:
        if consent.kind == RAW_INTERRUPT:
            return ResumeDecision(approval_id=consent.approval_id, decision="answer", value=answer)
        if isinstance(answer, dict) and "type" in answer and "decision" not in answer:
            return _middleware_decision(consent, answer)
        if not isinstance(answer, dict):
            raise InvalidRequestError(
                f"Consent {consent.approval_id} ({consent.kind}) takes a decision: "
                '{"decision": "approve" | "edit" | "reject", "edited"?, "comment"?}.',
                code="invalid_resume",
                details={"approval_id": consent.approval_id, "kind": consent.kind},
            )
        return ResumeDecision.model_validate({**answer, "approval_id": consent.approval_id})
    except ValidationError as exc:
        raise invalid_answer(consent, exc) from None


def invalid_answer(consent: ConsentEvent, exc: ValidationError) -> InvalidRequestError:
    return InvalidRequestError(
        "The resume value is not a decision this interrupt takes.",
        code="invalid_resume",
        details={
            "approval_id": consent.approval_id,
            "errors": exc.errors(include_url=False, include_context=False),
        },
    )


def _middleware_decision(consent: ConsentEvent, choice: dict[str, Any]) -> ResumeDecision:
    kind = choice.get("type")
    fields: dict[str, Any] = {"approval_id": consent.approval_id, "decision": kind}
    if kind == "edit":
        action = choice.get("edited_action")
        fields["edited"] = action.get("args") if isinstance(action, dict) else None
    elif kind in ("reject", "respond") and choice.get("message") is not None:
        fields["comment"] = choice["message"]
    return ResumeDecision.model_validate(fields)
