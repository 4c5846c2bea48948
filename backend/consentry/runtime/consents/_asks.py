"""What an ``interrupt()`` asks: a consent of the graph's kit, or a raw interrupt.

A value that is a ``ConsentRequest`` (``ConsentKind.ask``) is a consent of that kind: its
proposal, allowed decisions and deadline come from the request. Any other value is a raw
``interrupt(value)`` (LangGraph's own API, in any graph): a consent of kind ``interrupt`` whose
only decision is ``answer`` with a JSON value, the value given verbatim to the graph; a title is
taken from the value when it has an obvious one; its ``response_schema`` (LangGraph 1.2's
``interrupt(value, response_schema=...)``) is published with it and checked before any answer is
recorded. A policy never answers a raw interrupt, and an expired one is never answered for the
graph (the graph would receive an invented value).

LangChain's ``HumanInTheLoopMiddleware`` interrupts are read natively: a batch (``HITLRequest``)
is one ``tool_call`` consent per tool call (ids ``<interrupt id>-<n>`` when there are several;
they are decided together, and the middleware is resumed with ``{"decisions": [...]}`` in their
order), a ``per_call`` review (``ToolApprovalRequest``) one whose edit is checked against the
tool's args schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import jsonschema_rs
from langgraph.types import Interrupt
from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from consentry.errors import InvalidRequestError
from consentry.schemas.approvals import RAW_INTERRUPT, TOOL_CALL
from consentry.storage.approvals import ApprovalRecord
from consentry_graphs.consent import ConsentDecision, ConsentRequest
from consentry_graphs.declared_kinds import InvalidResponseSchemaError, UndeclaredConsentKindError
from consentry_graphs.registry import GraphSpec
from consentry_graphs.wire_types import Decision

__all__ = [
    "EXPIRED_REVIEW",
    "ConsentAsk",
    "ConsentDeadlines",
    "check_answer",
    "check_edited_args",
    "graph_resumes",
    "interrupt_of",
    "read_asks",
]

_TITLE_KEYS = ("question", "title", "description", "message", "prompt")
_TITLE_CHARS = 200
RAW_TITLE = "The graph asks for an answer"
_RAW_DECISIONS: tuple[Decision, ...] = ("answer",)
_TOOL_DECISIONS: tuple[Decision, ...] = ("approve", "edit", "reject", "respond")
EXPIRED_REVIEW = "Nobody reviewed this tool call in time; it was not run."


@dataclass(frozen=True, slots=True)
class ConsentAsk:
    """One consent as an ``interrupt()`` asked it, whichever way it was written."""

    approval_id: str
    interrupt_id: str
    kind: str
    title: str
    proposal: dict[str, Any]
    allowed_decisions: tuple[Decision, ...]
    ttl_seconds: int | None
    """The request's own deadline, if it names one."""
    always_ask: bool
    value: Any = None
    """A raw interrupt's value, as JSON."""
    response_schema: dict[str, Any] | None = None
    """What an answer (``interrupt``) or an edit's args (``tool_call``) must fit."""

    @property
    def raw(self) -> bool:
        return self.kind == RAW_INTERRUPT


@dataclass(frozen=True, slots=True)
class ConsentDeadlines:
    """How long consents wait: the kit's default (a kind may name its own) and raw interrupts'
    and tool-call reviews' (None: until answered)."""

    kit: timedelta
    raw: timedelta | None = None

    def expires_at(self, ask: ConsentAsk, now: datetime) -> datetime | None:
        if ask.ttl_seconds:
            return now + timedelta(seconds=ask.ttl_seconds)
        ttl = self.kit if ask.kind not in (RAW_INTERRUPT, TOOL_CALL) else self.raw
        return None if ttl is None else now + ttl


def read_asks(spec: GraphSpec, interrupt: Interrupt) -> list[ConsentAsk]:
    """The consents an interrupt asks: one, or one per tool call of a human-in-the-loop batch.
    A ``ConsentRequest`` of a kind the graph did not register, or a ``response_schema`` that is
    not a JSON Schema, is a graph bug (a ``GraphDefinitionError``: the run fails with its code
    and message)."""
    value = interrupt.value
    if isinstance(value, dict):
        kit_like = "kind" in value and "proposal" in value
        if kit_like:
            kit = _kit_ask(spec, interrupt)
            if kit is not None:
                return [kit]
        if _is_review_batch(value) and not kit_like:  # (a kit's request carries one too)
            return _batch_asks(interrupt.id, value)
        if value.get("type") == "tool_approval" and isinstance(value.get("args"), dict):
            return [_call_ask(spec.name, interrupt)]
    as_json = to_jsonable_python(value, fallback=repr)
    return [
        ConsentAsk(
            approval_id=interrupt.id,
            interrupt_id=interrupt.id,
            kind=RAW_INTERRUPT,
            title=_title_of(as_json),
            proposal={"value": as_json},
            allowed_decisions=_RAW_DECISIONS,
            ttl_seconds=None,
            always_ask=True,
            value=as_json,
            response_schema=_json_schema(spec.name, interrupt.response_schema),
        )
    ]


def _kit_ask(spec: GraphSpec, interrupt: Interrupt) -> ConsentAsk | None:
    try:
        request = ConsentRequest.model_validate(interrupt.value)
    except ValidationError:
        return None  # a raw value that merely looks like one
    if request.kind not in spec.consent_kinds:
        # Unregistered kinds cannot have their decisions checked before the graph resumes.
        raise UndeclaredConsentKindError(spec.name, request.kind)
    return ConsentAsk(
        approval_id=interrupt.id,
        interrupt_id=interrupt.id,
        kind=request.kind,
        title=request.title,
        proposal=request.proposal,
        allowed_decisions=tuple(request.allowed_decisions),
        ttl_seconds=request.ttl_seconds,
        always_ask=request.always_ask,
    )


def _is_review_batch(value: dict[str, Any]) -> bool:
    """LangChain's ``HITLRequest``: ``{"action_requests": [...], "review_configs": [...]}``."""
    actions, configs = value.get("action_requests"), value.get("review_configs")
    return (
        isinstance(actions, list)
        and isinstance(configs, list)
        and all(isinstance(a, dict) and isinstance(a.get("args"), dict) for a in actions)
        and all(isinstance(c, dict) for c in configs)
    )


def _batch_asks(interrupt_id: str, value: dict[str, Any]) -> list[ConsentAsk]:
    allowed_by_tool = {
        config.get("action_name"): config.get("allowed_decisions") or []
        for config in value["review_configs"]
    }
    actions: list[dict[str, Any]] = value["action_requests"]
    return [
        _tool_ask(
            approval_id=interrupt_id if len(actions) == 1 else f"{interrupt_id}-{index}",
            interrupt_id=interrupt_id,
            action=action,
            allowed=allowed_by_tool.get(action.get("name"), _TOOL_DECISIONS),
            index=index,
            args_schema=None,
        )
        for index, action in enumerate(actions)
    ]


def _call_ask(graph: str, interrupt: Interrupt) -> ConsentAsk:
    """``per_call`` mode's ``ToolApprovalRequest``: its ``response_schema`` names the decisions
    and the tool's args schema."""
    schema = _json_schema(graph, interrupt.response_schema) or {}
    return _tool_ask(
        approval_id=interrupt.id,
        interrupt_id=interrupt.id,
        action=interrupt.value,
        allowed=_decision_types(schema) or _TOOL_DECISIONS,
        index=None,
        args_schema=_edit_args_schema(schema),
    )


def _tool_ask(
    *,
    approval_id: str,
    interrupt_id: str,
    action: dict[str, Any],
    allowed: Iterable[Any],
    index: int | None,
    args_schema: dict[str, Any] | None,
) -> ConsentAsk:
    name = str(action.get("name", "tool"))
    description = str(action.get("description") or "")
    proposal: dict[str, Any] = {
        "name": name,
        "args": to_jsonable_python(action.get("args", {}), fallback=repr),
        "description": description,
    }
    if index is not None:
        proposal["index"] = index
    decisions = tuple(d for d in _TOOL_DECISIONS if d in set(allowed))
    return ConsentAsk(
        approval_id=approval_id,
        interrupt_id=interrupt_id,
        kind=TOOL_CALL,
        title=f"Run the tool {name}?",
        proposal=proposal,
        allowed_decisions=decisions or ("approve", "reject"),
        ttl_seconds=None,
        always_ask=True,
        response_schema=args_schema,
    )


def _decision_types(schema: dict[str, Any]) -> set[str]:
    """The decision ``type`` constants of a per-call review's response schema."""
    found: set[str] = set()
    for candidate in (schema, *schema.get("$defs", {}).values()):
        const = candidate.get("properties", {}).get("type", {}).get("const")
        if const in _TOOL_DECISIONS:
            found.add(const)
    return found


def _edit_args_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's args schema, from the edit branch of a per-call review's response schema."""
    defs: dict[str, Any] = schema.get("$defs", {})
    edited = defs.get("EditedAction", {}).get("properties", {}).get("args")
    if not isinstance(edited, dict):
        return None
    return {**edited, "$defs": defs} if defs else edited


def graph_resumes(decided: Iterable[tuple[ApprovalRecord, ConsentDecision]]) -> dict[str, Any]:
    """What the graph is resumed with, by interrupt id, for these decided consents: a kit's
    decision; a raw interrupt's answer as given (an expired one: nothing, never an invented
    value); LangChain's human-in-the-loop decisions (a batch's as ``{"decisions": [...]}`` in
    the order of its tool calls; an expired review is rejected, or not resumed when it cannot
    be)."""
    resumes: dict[str, Any] = {}
    batches: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for row, decision in decided:
        interrupt_id = interrupt_of(row)
        if row.kind == RAW_INTERRUPT:
            if decision.decision != "expire":
                resumes[interrupt_id] = decision.value
        elif row.kind == TOOL_CALL:
            answer = _review_decision(row, decision)
            index = row.event.get("proposal", {}).get("index")
            if answer is None:
                continue
            if isinstance(index, int):
                batches.setdefault(interrupt_id, []).append((index, answer))
            else:
                resumes[interrupt_id] = answer
        else:
            resumes[interrupt_id] = decision.model_dump(mode="json")
    for interrupt_id, answers in batches.items():
        resumes[interrupt_id] = {"decisions": [answer for _, answer in sorted(answers)]}
    return resumes


def interrupt_of(row: ApprovalRecord) -> str:
    """The LangGraph interrupt an approval answers."""
    return str(row.event.get("interrupt_id") or row.id)


def _review_decision(row: ApprovalRecord, decision: ConsentDecision) -> dict[str, Any] | None:
    proposal = row.event.get("proposal", {})
    if decision.decision == "approve":
        return {"type": "approve"}
    if decision.decision == "edit":
        return {
            "type": "edit",
            "edited_action": {"name": proposal.get("name"), "args": decision.edited or {}},
        }
    if decision.decision == "respond":
        return {"type": "respond", "message": decision.comment or ""}
    if decision.decision == "expire":
        if "reject" not in row.event.get("allowed_decisions", []):
            return None
        return {"type": "reject", "message": EXPIRED_REVIEW}
    rejected: dict[str, Any] = {"type": "reject"}
    if decision.comment:
        rejected["message"] = decision.comment
    return rejected


def check_answer(event: dict[str, Any], value: Any) -> None:
    """422 ``invalid_answer`` (the consent stays pending) when an answer does not fit the raw
    interrupt's ``response_schema``."""
    errors = _misfits(event.get("response_schema"), value)
    if errors:
        raise InvalidRequestError(
            "The answer does not fit the schema the graph asked for; the consent is still pending.",
            code="invalid_answer",
            details={"errors": errors, "response_schema": event.get("response_schema")},
        )


def check_edited_args(event: dict[str, Any], edited: Any) -> None:
    """422 ``invalid_edit`` (still pending) when a tool call's edited args do not fit the
    tool's args schema (known in ``per_call`` reviews)."""
    errors = _misfits(event.get("response_schema"), edited)
    if errors:
        raise InvalidRequestError(
            "The edited arguments do not fit the tool's schema; the consent is still pending.",
            code="invalid_edit",
            details={"errors": errors},
        )


def _misfits(schema: dict[str, Any] | None, value: Any) -> list[dict[str, Any]]:
    if schema is None:
        return []
    return [
        {"path": list(error.instance_path), "message": error.message}
        for error in jsonschema_rs.validator_for(schema).iter_errors(value)
    ]


def _title_of(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return _line(value)
    if isinstance(value, dict):
        for key in _TITLE_KEYS:
            found = value.get(key)
            if isinstance(found, str) and found.strip():
                return _line(found)
    return RAW_TITLE


def _line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


def _json_schema(graph: str, schema: type | dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    as_dict = schema if isinstance(schema, dict) else TypeAdapter(schema).json_schema()
    try:
        jsonschema_rs.validator_for(as_dict)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        raise InvalidResponseSchemaError(graph, str(exc)) from exc
    return as_dict
