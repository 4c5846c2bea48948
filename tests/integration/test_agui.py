"""AG-UI's face (``POST /v1/agui/{graph}``) over real HTTP, every frame read back through the
official Python models (``ag-ui-protocol``): text, steps, tool calls, state, a consent as an
interrupt of ``RUN_FINISHED``'s outcome and a ``resume`` as a Consentry decision (exactly once,
audited, in the inbox), refusals as ``RUN_ERROR`` with Consentry's codes. On SQLite and
PostgreSQL, for the tutor, a raw ``interrupt()`` graph and LangChain's human-in-the-loop
middleware."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import httpx
from ag_ui.core import Event, RunAgentInput
from pydantic import TypeAdapter

from tests.conftest import ManualClock
from tests.sse import ASK_FOR_SUMMARY

SERVED = (
    "city=consentry_graphs.examples.ask_city:graph,"
    "agent=consentry_graphs.examples.tool_review_agent:graph"
)
_EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def run_input(
    thread_id: str, *messages: dict[str, Any], run_id: str | None = None, **fields: Any
) -> dict[str, Any]:
    """A ``RunAgentInput`` as a client sends it (checked by the official model first)."""
    body = {
        "threadId": thread_id,
        "runId": run_id or str(uuid4()),
        "messages": list(messages),
        **fields,
    }
    RunAgentInput.model_validate(body)
    return body


def user(text: str) -> dict[str, Any]:
    return {"id": str(uuid4()), "role": "user", "content": text}


async def run(client: httpx.AsyncClient, graph: str, body: dict[str, Any]) -> list[Any]:
    """The run's events, each parsed by the official models (a frame they refuse fails)."""
    response = await client.post(f"/v1/agui/{graph}", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for frame in response.text.split("\n\n"):
        if frame.startswith("data: "):
            data = json.loads(frame.removeprefix("data: "))
            event = _EVENTS.validate_python(data)
            assert event.model_dump(mode="json", by_alias=True) == data  # round-trips
            events.append(event)
    return events


def types(events: list[Any]) -> list[str]:
    """The event types in order, a run of text contents told once."""
    told: list[str] = []
    for event in events:
        name = event.type.value
        if not (name == "TEXT_MESSAGE_CONTENT" and told and told[-1] == name):
            told.append(name)
    return told


async def test_a_question_streams_text_steps_state_and_a_successful_finish(
    open_live: Any,
) -> None:
    thread_id = str(uuid4())
    async with open_live() as (client, _):
        events = await run(client, "tutor", run_input(thread_id, user("What is retrieval?")))

    assert types(events) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    started, finished = events[0], events[-1]
    assert (started.thread_id, finished.thread_id) == (thread_id, thread_id)
    assert started.run_id == finished.run_id
    assert finished.outcome.type == "success"
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("I'm the offline model")
    snapshot = next(e for e in events if e.type.value == "STATE_SNAPSHOT").snapshot
    assert [m["type"] for m in snapshot["messages"]] == ["human", "ai"]


async def test_a_consent_is_an_interrupt_and_a_resume_decides_it_once(open_live: Any) -> None:
    thread_id = str(uuid4())
    async with open_live() as (client, _):
        asked = await run(client, "tutor", run_input(thread_id, user(ASK_FOR_SUMMARY)))
        finished = asked[-1]
        assert finished.type.value == "RUN_FINISHED"
        assert finished.outcome.type == "interrupt"
        (interrupt,) = finished.outcome.interrupts
        consent = (await client.get(f"/v1/approvals/{interrupt.id}")).json()
        kinds = (await client.get("/v1/consent-kinds")).json()["consent_kinds"]
        kind = next(k for k in kinds if (k["graph"], k["kind"]) == ("tutor", consent["kind"]))

        assert (interrupt.reason, interrupt.message) == (consent["kind"], consent["title"])
        assert interrupt.metadata == consent["proposal"]
        assert interrupt.expires_at == consent["expires_at"].replace("Z", "+00:00")
        schema = interrupt.response_schema
        assert schema["properties"]["decision"]["enum"] == kind["allowed_decisions"]
        assert schema["properties"]["edited"] == kind["edit_schema"]

        resume = [
            {"interruptId": interrupt.id, "status": "resolved", "payload": {"decision": "approve"}}
        ]
        done = await run(client, "tutor", run_input(thread_id, resume=resume))
        again = await run(client, "tutor", run_input(thread_id, resume=resume))
        approval = (await client.get(f"/v1/approvals/{interrupt.id}")).json()
        audit = (await client.get(f"/v1/threads/{thread_id}/audit")).json()
        inbox = (await client.get("/v1/approvals")).json()["approvals"]

    assert done[-1].type.value == "RUN_FINISHED"
    assert done[-1].outcome.type == "success"
    notes = [e for e in done if e.type.value == "CUSTOM" and e.name == "consentry.note"]
    assert len(notes) == 1
    assert approval["status"] == "approved"
    assert [e.type.value for e in again] == ["RUN_ERROR"]
    assert again[0].code == "already_decided"
    assert again[0].metadata["status"] == 409
    decided = [r for r in audit["records"] if r.get("approval_id") == interrupt.id]
    assert decided, audit
    assert [(a["approval_id"], a["status"]) for a in inbox] == [(interrupt.id, "approved")]


async def test_a_cancelled_resume_rejects_the_consent(open_live: Any) -> None:
    thread_id = str(uuid4())
    async with open_live() as (client, _):
        asked = await run(client, "tutor", run_input(thread_id, user(ASK_FOR_SUMMARY)))
        (interrupt,) = asked[-1].outcome.interrupts
        resume = [{"interruptId": interrupt.id, "status": "cancelled"}]
        done = await run(client, "tutor", run_input(thread_id, resume=resume))
        approval = (await client.get(f"/v1/approvals/{interrupt.id}")).json()

    assert done[-1].outcome.type == "success"
    assert not [e for e in done if e.type.value == "CUSTOM" and e.name == "consentry.note"]
    assert approval["status"] == "rejected"


async def test_a_message_while_a_consent_waits_is_a_run_error_and_nothing_runs(
    open_live: Any,
) -> None:
    thread_id = str(uuid4())
    async with open_live() as (client, _):
        asked = await run(client, "tutor", run_input(thread_id, user(ASK_FOR_SUMMARY)))
        (interrupt,) = asked[-1].outcome.interrupts
        refused = await run(client, "tutor", run_input(thread_id, user("And now?")))
        approval = (await client.get(f"/v1/approvals/{interrupt.id}")).json()

    assert [e.type.value for e in refused] == ["RUN_ERROR"]
    assert (refused[0].code, refused[0].metadata["status"]) == ("consent_pending", 409)
    assert approval["status"] == "pending"


async def test_an_expired_consent_answered_is_a_run_error_410(
    open_live: Any, clock: ManualClock
) -> None:
    thread_id = str(uuid4())
    async with open_live() as (client, _):
        asked = await run(client, "tutor", run_input(thread_id, user(ASK_FOR_SUMMARY)))
        (interrupt,) = asked[-1].outcome.interrupts
        clock.advance(days=2)
        resume = [
            {"interruptId": interrupt.id, "status": "resolved", "payload": {"decision": "approve"}}
        ]
        refused = await run(client, "tutor", run_input(thread_id, resume=resume))

    assert [e.type.value for e in refused] == ["RUN_ERROR"]
    assert (refused[0].code, refused[0].metadata["status"]) == ("consent_expired", 410)


async def test_a_raw_interrupt_takes_any_answer_as_its_payload(open_live: Any) -> None:
    thread_id = str(uuid4())
    async with open_live(graphs=SERVED) as (client, _):
        asked = await run(client, "city", run_input(thread_id, user("Plan a trip")))
        (interrupt,) = asked[-1].outcome.interrupts
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": "Lisbon"}]
        done = await run(client, "city", run_input(thread_id, resume=resume))

    assert (interrupt.reason, interrupt.metadata) == (
        "interrupt",
        {"value": {"question": "Which city?"}},
    )
    snapshot = next(e for e in done if e.type.value == "STATE_SNAPSHOT").snapshot
    assert snapshot["city"] == "Lisbon"
    assert done[-1].outcome.type == "success"


async def test_a_tool_call_review_is_one_interrupt_per_call_answered_together(
    open_live: Any,
) -> None:
    thread_id = str(uuid4())
    async with open_live(graphs=SERVED) as (client, _):
        asked = await run(client, "agent", run_input(thread_id, user("Plan a trip to Rome")))
        calls = [e for e in asked if e.type.value == "TOOL_CALL_START"]
        interrupts = asked[-1].outcome.interrupts
        answers = [{"type": "respond", "message": "Rainy."}, {"type": "approve"}]
        resume = [
            {"interruptId": i.id, "status": "resolved", "payload": answer}
            for i, answer in zip(interrupts, answers, strict=True)
        ]
        done = await run(client, "agent", run_input(thread_id, resume=resume))

    assert [c.tool_call_name for c in calls] == ["get_weather", "send_email"]
    assert [i.reason for i in interrupts] == ["tool_call", "tool_call"]
    assert [i.tool_call_id for i in interrupts] == [c.tool_call_id for c in calls]
    assert [e.type.value for e in done if e.type.value.startswith("TOOL_CALL")].count(
        "TOOL_CALL_RESULT"
    ) == 2
    snapshot = next(e for e in done if e.type.value == "STATE_SNAPSHOT").snapshot
    assert snapshot["messages"][-1]["content"] == (
        "Done. Rainy. Email to team@example.com sent: Trip to Rome."
    )


async def test_the_same_run_id_sent_again_replays_the_first_run(open_live: Any) -> None:
    thread_id = str(uuid4())
    body = run_input(thread_id, user("What is retrieval?"))
    async with open_live() as (client, _):
        first = await run(client, "tutor", body)
        second = await run(client, "tutor", body)
        messages = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]

    assert first[0].metadata["consentry_run_id"] == second[0].metadata["consentry_run_id"]
    assert types(second) == types(first)
    assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_refusals_before_the_run_are_run_errors_with_their_codes(open_live: Any) -> None:
    async with open_live() as (client, _):
        not_uuid = await run(client, "tutor", run_input("my-thread", user("Hi")))
        no_message = await run(client, "tutor", run_input(str(uuid4())))
        unknown = await client.post("/v1/agui/nope", json=run_input(str(uuid4()), user("Hi")))

    assert (not_uuid[0].code, not_uuid[0].metadata["status"]) == ("invalid_thread_id", 422)
    assert (no_message[0].code, no_message[0].metadata["status"]) == ("no_new_message", 422)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "graph_not_found"
