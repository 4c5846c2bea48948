"""Any LangGraph graph's raw ``interrupt()`` is a consent: a ``consent`` event of kind
``interrupt`` carrying the value, answered with any JSON (``{"approval_id", "value"}``) that the
graph receives exactly, with every guarantee of the kit's consents (one winner, the inbox, the
audit trail, no policy answering it, a restart resuming it), a ``response_schema`` checked before
the answer is recorded, no invented value on expiry, and an answer the graph refuses left
pending again. The graphs served here import nothing from Consentry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent, FinalEvent, MessageEvent
from tests.conftest import ManualClock
from tests.sse import chat, kinds, parse_events

CITY = "city=consentry_graphs.examples.ask_city:graph"
AGE = "age=consentry_graphs.examples.validate_age:builder"
TRIP = "trip=consentry_graphs.examples.trip_subgraph:graph"
COUNT = "count=tests.integration.raw_interrupt_graphs:counting"


def _consents(events: list[Any]) -> list[ConsentEvent]:
    return [e for e in events if isinstance(e, ConsentEvent)]


def _said(events: list[Any]) -> list[str]:
    return [e.content for e in events if isinstance(e, MessageEvent)]


def _reason(events: list[Any]) -> str:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final.reason


async def _answer(client: httpx.AsyncClient, consent: ConsentEvent, value: Any) -> httpx.Response:
    return await client.post(
        "/v1/chat",
        json={
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "value": value},
        },
    )


async def test_a_raw_interrupt_is_a_consent_and_the_graph_receives_the_answer_as_given(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=CITY) as client:
        asked = await chat(client, {"graph": "city", "message": "Plan a trip"})

        assert kinds(asked) == ["run_started", "step", "consent", "final"]
        (consent,) = _consents(asked)
        assert (consent.kind, consent.title, consent.value) == (
            "interrupt",
            "Which city?",
            {"question": "Which city?"},
        )
        assert consent.proposal == {"value": {"question": "Which city?"}}
        assert consent.allowed_decisions == ["answer"]
        assert consent.expires_at is None  # no deadline unless one is configured
        assert consent.response_schema is None
        assert _reason(asked) == "interrupted"
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
        inbox = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        assert [a["approval_id"] for a in inbox["approvals"]] == [consent.approval_id]
        assert inbox["approvals"][0]["value"] == {"question": "Which city?"}

        response = await _answer(client, consent, "Lisbon")
        assert response.status_code == 200, response.text

        answered = parse_events(response.text)
        assert kinds(answered) == ["run_started", "step", "step", "message", "final"]
        assert _said(answered) == ["Booked a trip to Lisbon."]
        assert _reason(answered) == "completed"

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "answered"
        assert approval["decided"]["decision"] == "answer"
        assert approval["decided"]["value"] == "Lisbon"
        records = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
        decided = [r for r in records if r["action"] == "consent_decided"]
        assert [(r["approval_id"], r["data"]["value"]) for r in decided] == [
            (consent.approval_id, "Lisbon")
        ]
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_an_answer_can_be_any_json_and_a_second_answer_loses(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=CITY) as client:
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan a trip"}))
        value = {"name": "Porto", "tags": ["coast", None, 3.5], "ok": True}

        first = await _answer(client, consent, value)
        second = await _answer(client, consent, "Faro")

        assert first.status_code == 200, first.text
        assert "Booked a trip to {'name': 'Porto'" in first.text
        assert second.status_code == 409
        error = second.json()["error"]
        assert error["code"] == "already_decided"
        assert error["details"]["decided"]["value"] == value


async def test_a_raw_interrupt_takes_no_approve_or_reject_and_no_policy_answers_it(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=CITY) as client:
        asked = await chat(
            client, {"graph": "city", "message": "Plan", "consent_policy": "auto_approve"}
        )
        (consent,) = _consents(asked)  # the policy did not answer it
        assert _reason(asked) == "interrupted"

        approve = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
        assert approve.status_code == 422
        assert approve.json()["error"]["code"] == "decision_not_allowed"

        message = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "message": "never mind",
                "on_pending_consent": "reject",
            },
        )
        assert message.status_code == 409
        assert message.json()["error"]["code"] == "consent_pending"
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "pending"


async def test_an_answer_must_fit_the_response_schema_and_a_misfit_stays_pending(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=AGE) as client:
        (consent,) = _consents(await chat(client, {"graph": "age", "message": "Hi"}))
        assert consent.response_schema == {"type": "integer", "minimum": 0, "maximum": 150}
        assert consent.title == "What is your age?"

        for wrong in ("thirty", 200, None):
            refused = await _answer(client, consent, wrong)
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert error["code"] == "invalid_answer"
            assert error["details"]["errors"][0]["path"] == []
            approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
            assert approval["status"] == "pending"

        answered = await _answer(client, consent, 30)
        assert answered.status_code == 200, answered.text
        assert "You are 30 years old." in answered.text


async def test_the_inbox_answers_a_raw_interrupt_too(open_client: Callable[..., Any]) -> None:
    async with open_client(graphs=CITY) as client:
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan"}))

        response = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"value": "Porto"}
        )
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "answered"
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]

        messages = (await client.get(f"/v1/threads/{consent.thread_id}/messages")).json()
        assert messages["messages"][-1]["content"] == "Booked a trip to Porto."


async def test_interrupts_in_a_subgraph_and_parallel_branches_are_answered_one_by_one(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=TRIP) as client:
        asked = await chat(client, {"graph": "trip", "message": "Trip"})
        consents = {c.title: c for c in _consents(asked)}
        assert set(consents) == {"Where from?", "Where to?"}
        thread_id = asked[0].thread_id

        one = await _answer(client, consents["Where to?"], "Rome")
        assert one.status_code == 200
        assert one.text.count("event: consent") == 0  # the other one is still pending
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert [c["title"] for c in thread["pending_consents"]] == ["Where from?"]

        two = await _answer(client, consents["Where from?"], "Oslo")
        assert two.status_code == 200

        events = parse_events(two.text)
        assert _said(events) == ["From Oslo to Rome."]
        (confirm,) = _consents(events)
        assert confirm.value == {"question": "Book it?", "options": ["yes", "no"]}

        done = parse_events((await _answer(client, confirm, "yes")).text)
        assert _said(done) == ["Booked."]


async def test_several_answers_in_one_request_resume_the_graph_once(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=TRIP) as client:
        asked = await chat(client, {"graph": "trip", "message": "Trip"})
        consents = {c.title: c for c in _consents(asked)}

        both = await chat(
            client,
            {
                "thread_id": asked[0].thread_id,
                "resume": [
                    {"approval_id": consents["Where from?"].approval_id, "value": "Oslo"},
                    {"approval_id": consents["Where to?"].approval_id, "value": "Rome"},
                ],
            },
        )
        assert _said(both) == ["From Oslo to Rome."]
        assert [c.title for c in _consents(both)] == ["Book it?"]


async def test_an_answer_the_graph_raises_on_fails_the_run_and_the_consent_is_pending_again(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=COUNT) as client:
        (consent,) = _consents(await chat(client, {"graph": "count", "message": "Count"}))

        refused = await _answer(client, consent, "many")
        assert refused.status_code == 200

        events = parse_events(refused.text)
        assert kinds(events)[-2:] == ["error", "final"]
        assert _reason(events) == "failed"
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert (approval["status"], approval["decided"]) == ("pending", None)
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
        records = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
        reopened = [r for r in records if r["data"].get("reopened")]
        assert [r["data"]["refused"] for r in reopened] == ["many"]

        accepted = parse_events((await _answer(client, consent, 3)).text)
        assert _said(accepted) == ["Counted 3."]
        assert _reason(accepted) == "completed"


async def test_an_expired_raw_interrupt_is_never_answered_and_the_next_message_starts_fresh(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=CITY, interrupt_ttl_seconds=60) as (client, services):
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan"}))
        assert consent.expires_at is not None
        assert abs((consent.expires_at - consent.ts).total_seconds() - 60) < 0.001

        clock.advance(seconds=61)
        # (the sweeper may already be sweeping, woken when the consent was asked: either sweep
        # expires it, once)
        await services.expiry.sweep()
        await services.executor.wait_for_runs()

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert (approval["status"], approval["decided"]["decision"]) == ("expired", "expire")
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["pending_consents"]) == ("idle", [])
        history = (await client.get(f"/v1/threads/{consent.thread_id}/stream")).text
        assert history.count("event: run_started") == 1  # the graph was not resumed
        late = await _answer(client, consent, "Lisbon")
        assert late.status_code == 410
        assert late.json()["error"]["code"] == "consent_expired"
        assert await services.expiry.sweep() == 0

        again = await chat(client, {"thread_id": consent.thread_id, "message": "Plan again"})
        (fresh,) = _consents(again)
        assert fresh.approval_id != consent.approval_id
        assert fresh.title == "Which city?"


async def test_without_a_ttl_a_raw_interrupt_never_expires(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=CITY) as (client, services):
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan"}))

        clock.advance(days=400)
        assert await services.expiry.sweep() == 0

        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        answered = await _answer(client, consent, "Lisbon")
        assert answered.status_code == 200
        assert "Booked a trip to Lisbon." in answered.text


async def test_a_raw_interrupt_survives_a_restart_and_another_process_resumes_it(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=CITY) as client:
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan"}))

    async with open_client(graphs=CITY) as client:
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        answered = await _answer(client, consent, "Lisbon")
        assert answered.status_code == 200
        assert "Booked a trip to Lisbon." in answered.text


REVIEW = "review=consentry_graphs.examples.review_tool_calls:graph"


async def test_langgraphs_review_tool_calls_pattern_runs_unchanged(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=REVIEW) as client:
        asked = await chat(client, {"graph": "review", "message": "Weather?"})
        (consent,) = _consents(asked)
        assert consent.title == "Is this correct?"
        assert consent.value["tool_call"]["args"] == {"city": "San Francisco"}  # type: ignore[index,call-overload]

        feedback = parse_events(
            (await _answer(client, consent, {"action": "feedback", "data": "city: Oslo"})).text
        )
        (again,) = _consents(feedback)
        assert again.value["tool_call"]["args"] == {"city": "Oslo"}  # type: ignore[index,call-overload]

        updated = parse_events(
            (await _answer(client, again, {"action": "update", "data": {"city": "Bergen"}})).text
        )
        assert _said(updated) == ["The weather: Sunny in Bergen!"]

        asked = await chat(client, {"thread_id": consent.thread_id, "message": "And now?"})
        (third,) = _consents(asked)
        done = parse_events((await _answer(client, third, {"action": "continue"})).text)
        assert _said(done) == ["The weather: Sunny in San Francisco!"]


async def test_an_answer_sent_again_with_its_idempotency_key_replays_and_resumes_once(
    open_live: Any,
) -> None:
    async with open_live(graphs=CITY) as (client, _):
        (consent,) = _consents(await chat(client, {"graph": "city", "message": "Plan"}))
        body = {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "value": "Lisbon"},
        }
        headers = {"Idempotency-Key": "answer-1"}

        first = await client.post("/v1/chat", json=body, headers=headers)
        again = await client.post("/v1/chat", json=body, headers=headers)

        assert again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == first.headers["X-Run-Id"]
        assert _said(parse_events(again.text)) == ["Booked a trip to Lisbon."]
        history = (await client.get(f"/v1/threads/{consent.thread_id}/stream")).text
        assert history.count("event: run_started") == 2  # the message's and the answer's
