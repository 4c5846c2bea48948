"""What an ``interrupt()`` asks (``runtime/consents/_asks.py``): a kit's consent, a raw
interrupt, or LangChain's human-in-the-loop reviews; their deadlines; and what the graph is
resumed with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph._internal._constants import RESUME as LANGGRAPH_RESUME
from langgraph.types import Interrupt
from pydantic import BaseModel

from consentry.errors import InvalidRequestError
from consentry.runtime.consents import ConsentDeadlines, graph_resumes, read_asks
from consentry.runtime.consents._asks import EXPIRED_REVIEW, check_answer
from consentry.runtime.runs.execute._graph_stream import RESUME
from consentry.storage.approvals import ApprovalRecord
from consentry_graphs.consent import ConsentDecision
from consentry_graphs.declared_kinds import InvalidResponseSchemaError, UndeclaredConsentKindError
from consentry_graphs.registry import BUILTIN_GRAPHS

TUTOR = BUILTIN_GRAPHS["tutor"]
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _record(ask_event: dict[str, Any], *, kind: str, approval_id: str) -> ApprovalRecord:
    return ApprovalRecord(
        id=approval_id,
        thread_id="t",
        run_id="r",
        tenant="local",
        user_id="local",
        kind=kind,
        status="pending",
        event=ask_event,
        created_at=NOW,
        expires_at=None,
        decided_at=None,
        decided_by=None,
        decision=None,
        proposal_hash="sha256:x",
        edited=None,
        comment=None,
    )


def _decided(approval_id: str, decision: str, **fields: Any) -> ConsentDecision:
    return ConsentDecision.model_validate(
        {"approval_id": approval_id, "decision": decision, "decided_by": "t/u", **fields}
    )


@pytest.mark.parametrize(
    ("value", "title"),
    [
        ({"question": "Which city?"}, "Which city?"),
        ({"title": "Pick one", "question": "Which one?"}, "Which one?"),  # a question first
        ({"description": "  Spread\nover lines "}, "Spread over lines"),
        ("Your name?", "Your name?"),
        ({"anything": 1}, "The graph asks for an answer"),
        ([1, 2], "The graph asks for an answer"),
        (None, "The graph asks for an answer"),
    ],
)
def test_a_raw_interrupt_is_an_interrupt_consent_titled_from_its_value(
    value: Any, title: str
) -> None:
    (ask,) = read_asks(TUTOR, Interrupt(value, id="i1"))

    assert (ask.kind, ask.approval_id, ask.interrupt_id) == ("interrupt", "i1", "i1")
    assert ask.title == title
    assert (ask.value, ask.proposal) == (value, {"value": value})
    assert ask.allowed_decisions == ("answer",)
    assert ask.always_ask  # no policy answers it


def test_a_long_title_is_cut_to_one_line() -> None:
    (ask,) = read_asks(TUTOR, Interrupt({"question": "x" * 500}, id="i1"))
    assert len(ask.title) == 200
    assert ask.title.endswith("…")


def test_a_value_that_is_not_json_is_published_as_json() -> None:
    class Point(BaseModel):
        x: int

    (ask,) = read_asks(TUTOR, Interrupt({"at": Point(x=3), "when": NOW}, id="i1"))
    assert ask.value == {"at": {"x": 3}, "when": "2026-12-01T12:00:00Z"}


def test_a_response_schema_given_as_a_type_is_published_as_json_schema() -> None:
    class Age(BaseModel):
        years: int

    (ask,) = read_asks(TUTOR, Interrupt("Age?", id="i1", response_schema=Age))
    assert ask.response_schema is not None
    assert ask.response_schema["properties"]["years"]["type"] == "integer"


def test_a_response_schema_that_is_not_json_schema_is_a_graph_bug() -> None:
    with pytest.raises(InvalidResponseSchemaError, match="not a JSON Schema"):
        read_asks(TUTOR, Interrupt("Age?", id="i1", response_schema={"type": "nonsense"}))


def test_a_kit_request_of_an_unregistered_kind_is_a_graph_bug() -> None:
    request = {"kind": "refund", "title": "t", "proposal": {}, "allowed_decisions": ["approve"]}
    with pytest.raises(UndeclaredConsentKindError, match="which it does not declare"):
        read_asks(TUTOR, Interrupt(request, id="i1"))


def test_a_value_that_merely_looks_like_a_kit_request_is_raw() -> None:
    (ask,) = read_asks(TUTOR, Interrupt({"kind": "mine", "proposal": "p"}, id="i1"))
    assert ask.kind == "interrupt"


def test_a_review_batch_is_one_tool_call_consent_per_call() -> None:
    value = {
        "action_requests": [
            {"name": "get_weather", "args": {"city": "Rome"}, "description": "Weather?"},
            {"name": "send_email", "args": {"to": "a@b.c"}},
        ],
        "review_configs": [
            {"action_name": "get_weather", "allowed_decisions": ["approve", "respond"]},
            {"action_name": "send_email", "allowed_decisions": ["reject", "edit", "approve"]},
        ],
    }
    weather, email = read_asks(TUTOR, Interrupt(value, id="i1"))

    assert [(a.approval_id, a.interrupt_id) for a in (weather, email)] == [
        ("i1-0", "i1"),
        ("i1-1", "i1"),
    ]
    assert weather.proposal == {
        "name": "get_weather",
        "args": {"city": "Rome"},
        "description": "Weather?",
        "index": 0,
    }
    assert weather.allowed_decisions == ("approve", "respond")
    assert email.allowed_decisions == ("approve", "edit", "reject")  # in the wire's order
    assert email.title == "Run the tool send_email?"


def test_a_batch_of_one_keeps_the_interrupt_id() -> None:
    value = {
        "action_requests": [{"name": "t", "args": {}}],
        "review_configs": [{"action_name": "t", "allowed_decisions": ["approve"]}],
    }
    (ask,) = read_asks(TUTOR, Interrupt(value, id="i1"))
    assert (ask.approval_id, ask.proposal["index"]) == ("i1", 0)


def test_deadlines_are_the_kits_default_or_none_for_raw_interrupts_unless_configured() -> None:
    (raw,) = read_asks(TUTOR, Interrupt("?", id="i1"))
    kit_ttl = timedelta(hours=1)

    assert ConsentDeadlines(kit=kit_ttl).expires_at(raw, NOW) is None
    assert ConsentDeadlines(kit=kit_ttl, raw=timedelta(minutes=5)).expires_at(raw, NOW) == (
        NOW + timedelta(minutes=5)
    )


def test_an_answer_must_fit_the_response_schema() -> None:
    event = {"response_schema": {"type": "integer", "minimum": 0}}
    check_answer(event, 3)
    check_answer({"response_schema": None}, "anything")
    with pytest.raises(InvalidRequestError) as refused:
        check_answer(event, -1)
    assert refused.value.code == "invalid_answer"
    assert refused.value.details["errors"] == [
        {"path": [], "message": "-1 is less than the minimum of 0"}
    ]


def test_the_graph_gets_a_raw_answer_as_given_and_nothing_for_an_expired_one() -> None:
    raw = _record({"kind": "interrupt"}, kind="interrupt", approval_id="i1")
    other = _record({"kind": "interrupt"}, kind="interrupt", approval_id="i2")

    resumes = graph_resumes(
        [(raw, _decided("i1", "answer", value={"a": [1]})), (other, _decided("i2", "expire"))]
    )
    assert resumes == {"i1": {"a": [1]}}


def test_a_batch_resumes_the_middleware_once_with_every_decision_in_order() -> None:
    def call(index: int, name: str, allowed: list[str]) -> ApprovalRecord:
        event = {
            "interrupt_id": "i1",
            "proposal": {"name": name, "args": {}, "index": index},
            "allowed_decisions": allowed,
        }
        return _record(event, kind="tool_call", approval_id=f"i1-{index}")

    first, second, third = call(0, "a", ["respond"]), call(1, "b", ["edit"]), call(2, "c", [])
    resumes = graph_resumes(
        [
            (third, _decided("i1-2", "reject", comment="No.")),
            (first, _decided("i1-0", "respond", comment="42")),
            (second, _decided("i1-1", "edit", edited={"x": 1})),
        ]
    )
    assert resumes == {
        "i1": {
            "decisions": [
                {"type": "respond", "message": "42"},
                {"type": "edit", "edited_action": {"name": "b", "args": {"x": 1}}},
                {"type": "reject", "message": "No."},
            ]
        }
    }


def test_an_expired_review_is_rejected_only_where_the_review_allows_it() -> None:
    def review(approval_id: str, allowed: list[str]) -> ApprovalRecord:
        event = {"proposal": {"name": "t", "args": {}}, "allowed_decisions": allowed}
        return _record(event, kind="tool_call", approval_id=approval_id)

    resumes = graph_resumes(
        [
            (review("r1", ["approve", "reject"]), _decided("r1", "expire")),
            (review("r2", ["approve"]), _decided("r2", "expire")),
        ]
    )
    assert resumes == {"r1": {"type": "reject", "message": EXPIRED_REVIEW}}


def test_the_resume_channel_is_still_langgraphs() -> None:
    assert RESUME == LANGGRAPH_RESUME
