"""A LangGraph ``command.resume`` as Consentry decisions on the thread's pending consents.

``resume`` answers the interrupt the thread waits for, or is ``{interrupt_id: answer}`` for
several. Each answer becomes the decision of its consent, checked by the same gate as every
other decision (one winner, expiry, the kind's rules):

- a raw ``interrupt()`` (kind ``interrupt``): any JSON, the answer as given;
- a consent kit's kind: the kit's decision, ``{"decision": "approve" | "edit" | "reject",
  "edited"?, "comment"?}``, or the human-in-the-loop middleware's answer to the request's one
  reviewed action, ``{"decisions": [{"type": ...}]}`` (as Agent Chat UI sends it);
- a reviewed batch of tool calls (kind ``tool_call``): the middleware's ``{"decisions": [...]}``,
  one per call in order (``approve``; ``edit`` with ``edited_action.args``; ``reject`` and
  ``respond`` with ``message``), or one such decision for a ``per_call`` review.
"""

from __future__ import annotations

from typing import Any

from consentry.api.consent_answers import decision_on
from consentry.errors import ConflictError, InvalidRequestError
from consentry.schemas.approvals import RAW_INTERRUPT, TOOL_CALL
from consentry.schemas.chat import ResumeDecision
from consentry.schemas.events import ConsentEvent

__all__ = ["decisions_for"]


def decisions_for(resume: Any, pending: list[ConsentEvent]) -> list[ResumeDecision]:
    """The decisions ``resume`` makes on ``pending`` (a thread's pending consents)."""
    waiting: dict[str, list[ConsentEvent]] = {}
    for consent in pending:
        waiting.setdefault(consent.interrupt_id or consent.approval_id, []).append(consent)
    if not waiting:
        raise ConflictError(
            "This thread waits for no interrupt to resume.", code="no_pending_consent"
        )
    if isinstance(resume, dict) and resume and set(resume) <= set(waiting):
        answers = resume
    elif len(waiting) == 1:
        answers = {next(iter(waiting)): resume}
    else:
        raise InvalidRequestError(
            "The thread waits for several interrupts: resume with {interrupt_id: answer}.",
            code="resume_ambiguous",
            details={"interrupt_ids": sorted(waiting)},
        )
    decisions: list[ResumeDecision] = []
    for interrupt_id, answer in answers.items():
        decisions += _decide(waiting[interrupt_id], answer)
    return decisions


def _decide(consents: list[ConsentEvent], answer: Any) -> list[ResumeDecision]:
    first = consents[0]
    if first.kind == TOOL_CALL:
        return _reviewed(consents, answer)
    if isinstance(answer, dict) and set(answer) == {"decisions"} and first.kind != RAW_INTERRUPT:
        given = answer["decisions"]
        if not isinstance(given, list) or len(given) != 1:
            raise InvalidRequestError(
                'This consent is one reviewed action: {"decisions": [one decision]}.',
                code="invalid_resume",
                details={"approval_id": first.approval_id},
            )
        answer = given[0] if isinstance(given[0], dict) and "type" in given[0] else {"type": None}
    return [decision_on(first, answer)]


def _reviewed(consents: list[ConsentEvent], answer: Any) -> list[ResumeDecision]:
    batch = "index" in consents[0].proposal
    given = answer.get("decisions") if batch and isinstance(answer, dict) else [answer]
    ordered = sorted(consents, key=lambda c: int(c.proposal.get("index", 0)))
    if not isinstance(given, list) or len(given) != len(ordered):
        raise InvalidRequestError(
            f'This review of {len(ordered)} tool call(s) takes {{"decisions": [...]}}, one '
            "per call, in order.",
            code="invalid_resume",
            details={"approval_ids": [c.approval_id for c in ordered]},
        )
    return [_tool_decision(consent, choice) for consent, choice in zip(ordered, given, strict=True)]


def _tool_decision(consent: ConsentEvent, choice: Any) -> ResumeDecision:
    """The middleware's decision on one call (only its shape: ``{"type": ...}``)."""
    if not isinstance(choice, dict) or "type" not in choice:
        choice = {"type": None}  # refused by the decision's own check, as before
    return decision_on(consent, choice)
