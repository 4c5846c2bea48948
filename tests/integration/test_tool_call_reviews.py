"""LangChain's ``HumanInTheLoopMiddleware`` served natively: a ``create_agent`` agent (no
Consentry import) whose reviewed tool calls become ``tool_call`` consents, one per call, decided
with the middleware's own decisions: approve, edit the args, reject with a message, respond in
the tool's place. A batch (every call of one model turn) is decided together and resumes the
middleware once, in order; ``per_call`` reviews one call at a time and checks an edit against the
tool's args schema. Records, races and the inbox hold as for every consent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from consentry.schemas.events import (
    ConsentEvent,
    FinalEvent,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from tests.conftest import ManualClock
from tests.sse import chat, kinds, parse_events

BATCHED = "agent=consentry_graphs.examples.tool_review_agent:graph"
PER_CALL = "agent=consentry_graphs.examples.tool_review_agent:per_call_graph"
EMAIL_ARGS = {"to": "team@example.com", "subject": "Trip to Rome", "body": "Let's go to Rome."}


def _consents(events: list[Any]) -> dict[str, ConsentEvent]:
    return {e.proposal["name"]: e for e in events if isinstance(e, ConsentEvent)}


def _results(events: list[Any]) -> dict[str, str]:
    return {e.name: e.content for e in events if isinstance(e, ToolResultEvent)}


def _said(events: list[Any]) -> list[str]:
    return [e.content for e in events if isinstance(e, MessageEvent)]


async def _ask(client: httpx.AsyncClient) -> dict[str, ConsentEvent]:
    asked = await chat(client, {"graph": "agent", "message": "Plan a trip to Rome"})
    final = asked[-1]
    assert isinstance(final, FinalEvent)
    assert final.reason == "interrupted"
    return _consents(asked)


async def _decide(
    client: httpx.AsyncClient, consents: dict[str, ConsentEvent], decisions: dict[str, Any]
) -> httpx.Response:
    thread_id = next(iter(consents.values())).thread_id
    resume = [{"approval_id": consents[name].approval_id, **d} for name, d in decisions.items()]
    return await client.post("/v1/chat", json={"thread_id": thread_id, "resume": resume})


async def test_a_batch_of_tool_calls_is_one_consent_each_with_the_middlewares_decisions(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)

        weather, email = consents["get_weather"], consents["send_email"]
        assert (weather.kind, email.kind) == ("tool_call", "tool_call")
        assert weather.interrupt_id == email.interrupt_id
        assert {weather.approval_id, email.approval_id} == {
            f"{weather.interrupt_id}-0",
            f"{weather.interrupt_id}-1",
        }
        assert weather.proposal["args"] == {"city": "Rome"}
        assert email.proposal["args"] == EMAIL_ARGS
        assert weather.title == "Run the tool get_weather?"
        assert weather.allowed_decisions == ["approve", "reject", "respond"]
        assert email.allowed_decisions == ["approve", "edit", "reject", "respond"]
        inbox = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        assert {a["kind"] for a in inbox["approvals"]} == {"tool_call"}

        alone = await _decide(client, consents, {"send_email": {"decision": "approve"}})
        assert alone.status_code == 422
        error = alone.json()["error"]
        assert error["code"] == "decide_together"
        assert error["details"]["approval_ids"] == sorted([weather.approval_id, email.approval_id])

        edited = {**EMAIL_ARGS, "to": "me@example.com"}
        response = await _decide(
            client,
            consents,
            {
                "get_weather": {"decision": "respond", "comment": "Rainy, 12°C."},
                "send_email": {"decision": "edit", "edited": edited},
            },
        )
        assert response.status_code == 200, response.text
        events = parse_events(response.text)

    results = _results(events)
    assert results["get_weather"] == "Rainy, 12°C."  # the tool did not run
    # the edited call ran, and the middleware told the model a person replaced it
    assert results["send_email"].endswith("Email to me@example.com sent: Trip to Rome.")
    assert results["send_email"].startswith("Note: a human reviewer replaced this tool call")
    assert _said(events) == [f"Done. Rainy, 12°C. {results['send_email']}"]


async def test_a_rejected_tool_call_does_not_run_and_the_model_is_told_why(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)
        response = await _decide(
            client,
            consents,
            {
                "get_weather": {"decision": "approve"},
                "send_email": {"decision": "reject", "comment": "Not now."},
            },
        )
        events = parse_events(response.text)
        approvals = {
            name: (await client.get(f"/v1/approvals/{c.approval_id}")).json()
            for name, c in consents.items()
        }

    results = _results(events)
    assert results["get_weather"] == "Sunny in Rome, 21°C."
    assert "Not now." in results["send_email"]
    assert "Email to" not in results["send_email"]
    assert (approvals["get_weather"]["status"], approvals["send_email"]["status"]) == (
        "approved",
        "rejected",
    )
    assert approvals["send_email"]["decided"]["comment"] == "Not now."


async def test_a_decision_the_review_does_not_allow_is_refused_and_nothing_resumes(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)
        refused = await _decide(
            client,
            consents,
            {
                "get_weather": {"decision": "edit", "edited": {"city": "Oslo"}},
                "send_email": {"decision": "approve"},
            },
        )
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "decision_not_allowed"
        respond = await _decide(
            client,
            consents,
            {"get_weather": {"decision": "respond"}, "send_email": {"decision": "approve"}},
        )
        assert respond.status_code == 422  # respond needs the tool's result as `comment`
        statuses = {
            (await client.get(f"/v1/approvals/{c.approval_id}")).json()["status"]
            for c in consents.values()
        }
        assert statuses == {"pending"}


async def test_per_call_reviews_are_decided_one_at_a_time_and_edits_fit_the_tools_schema(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=PER_CALL) as client:
        consents = await _ask(client)
        weather, email = consents["get_weather"], consents["send_email"]
        assert weather.interrupt_id == weather.approval_id
        assert email.response_schema is not None  # the tool's args schema

        wrong = await _decide(
            client, {"send_email": email}, {"send_email": {"decision": "edit", "edited": {}}}
        )
        assert wrong.status_code == 422
        assert wrong.json()["error"]["code"] == "invalid_edit"

        first = await _decide(
            client, {"get_weather": weather}, {"get_weather": {"decision": "approve"}}
        )
        assert first.status_code == 200, first.text
        assert ConsentEvent not in {type(e) for e in parse_events(first.text)}

        second = await _decide(
            client,
            {"send_email": email},
            {"send_email": {"decision": "edit", "edited": {**EMAIL_ARGS, "subject": "Rome!"}}},
        )
        events = parse_events(second.text)

    results = _results(events)
    assert results["get_weather"] == "Sunny in Rome, 21°C."
    assert results["send_email"].endswith("Email to team@example.com sent: Rome!.")


async def test_a_second_review_of_the_same_batch_loses(open_client: Callable[..., Any]) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)
        both = {"get_weather": {"decision": "approve"}, "send_email": {"decision": "approve"}}
        first = await _decide(client, consents, both)
        second = await _decide(client, consents, both)

    assert first.status_code == 200
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "already_decided"


async def test_an_expired_review_is_rejected_for_the_middleware_and_nothing_runs(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=BATCHED, interrupt_ttl_seconds=60) as (client, services):
        consents = await _ask(client)
        clock.advance(seconds=61)
        # (the sweeper may already be sweeping, woken when the review was asked: either sweep
        # expires the batch, once)
        await services.expiry.sweep()
        await services.executor.wait_for_runs()

        thread_id = consents["send_email"].thread_id
        history = parse_events((await client.get(f"/v1/threads/{thread_id}/stream")).text)
        statuses = {
            (await client.get(f"/v1/approvals/{c.approval_id}")).json()["status"]
            for c in consents.values()
        }

    assert statuses == {"expired"}
    results = _results(history)
    assert set(results) == {"get_weather", "send_email"}
    assert all("Nobody reviewed this tool call in time" in r for r in results.values())


async def test_a_review_waits_across_a_restart_and_the_next_process_resumes_the_agent(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)

    async with open_client(graphs=BATCHED) as client:
        thread_id = consents["send_email"].thread_id
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        assert {c["kind"] for c in thread["pending_consents"]} == {"tool_call"}
        both = {"get_weather": {"decision": "approve"}, "send_email": {"decision": "approve"}}
        events = parse_events((await _decide(client, consents, both)).text)
        calls = (await client.get(f"/v1/threads/{thread_id}/tool-calls")).json()

    assert _results(events) == {
        "get_weather": "Sunny in Rome, 21°C.",
        "send_email": "Email to team@example.com sent: Trip to Rome.",
    }
    assert [c["name"] for c in calls["tool_calls"]] == ["get_weather", "send_email"]


async def test_the_resumed_run_does_not_tell_the_reviewed_calls_again(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=BATCHED) as client:
        consents = await _ask(client)
        edited = {**EMAIL_ARGS, "subject": "Rome!"}
        response = await _decide(
            client,
            consents,
            {
                "get_weather": {"decision": "approve"},
                "send_email": {"decision": "edit", "edited": edited},
            },
        )
        events = parse_events(response.text)
        thread_id = consents["send_email"].thread_id
        calls = (await client.get(f"/v1/threads/{thread_id}/tool-calls")).json()["tool_calls"]

    # The middleware hands the model's message on unchanged (an edit is kept apart, and its
    # result says so): the calls the asking run told are not told again.
    assert kinds(events) == [
        "run_started",
        "step",
        "step",
        "step",
        "tool_result",
        "tool_result",
        "step",
        "message",
        "step",
        "final",
    ]
    assert not [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c["name"], c["status"]) for c in calls] == [
        ("get_weather", "success"),
        ("send_email", "success"),
    ]
    assert _results(events)["send_email"].endswith("sent: Rome!.")
