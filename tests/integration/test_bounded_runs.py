"""Bounded runs: a step limit and a wall-clock timeout end a run with their own terminal reason,
and a client can cancel the active run; the thread stays usable after each."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from consentry.schemas.events import FinalEvent
from tests.openai_stub import OpenAIStub
from tests.sse import chat, kinds, parse_events


async def _audit_reasons(client: httpx.AsyncClient, thread_id: str) -> list[str]:
    records = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    return [r["data"]["reason"] for r in records if r["action"] == "run_ended"]


async def test_a_run_past_its_step_limit_ends_with_step_limit(open_client: Any) -> None:
    async with open_client(max_steps_per_run=1) as client:
        events = await chat(client, {"message": "What is RAG?"})

        assert kinds(events) == ["run_started", "step", "final"]
        final = events[-1]
        assert isinstance(final, FinalEvent)
        assert final.reason == "step_limit"
        thread = (await client.get(f"/v1/threads/{final.thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("idle", "step_limit")
        assert await _audit_reasons(client, final.thread_id) == ["step_limit"]


async def test_a_run_past_its_time_ends_with_timeout_and_the_thread_goes_on(
    open_client: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("too late")
    # The second run must finish inside the same limit: 2 s leaves room on a loaded CI machine.
    async with open_client(run_timeout_seconds=2.0, **stub.app_settings()) as client:
        events = await chat(client, {"message": "What is x?"})
        stub.release()

        assert events[-1].reason == "timeout"  # type: ignore[union-attr]
        thread_id = events[0].thread_id
        stub.reply('{"intent": "answer", "query": "x"}')
        stub.reply("In time.")
        again = await chat(client, {"thread_id": thread_id, "message": "What is x?"})
        assert again[-1].reason == "completed"  # type: ignore[union-attr]
        assert await _audit_reasons(client, thread_id) == ["timeout", "completed"]


async def test_cancel_stops_the_active_run_at_the_next_step(
    open_client: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("An answer nobody waits for.")
    async with open_client(**stub.app_settings()) as client:
        running = asyncio.create_task(client.post("/v1/chat", json={"message": "What is x?"}))
        await asyncio.wait_for(stub.holding.wait(), 10)
        thread_id = (await client.get("/v1/threads")).json()["threads"][0]["thread_id"]

        accepted = await client.post(f"/v1/threads/{thread_id}/cancel")
        stub.release()
        events = parse_events((await running).text)

        assert accepted.status_code == 202
        assert accepted.json()["status"] == "cancelling"
        assert accepted.json()["run_id"] == events[0].run_id
        assert events[-1].reason == "cancelled"  # type: ignore[union-attr]
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("idle", "cancelled")
        again = await client.post(f"/v1/threads/{thread_id}/cancel")
        assert (again.status_code, again.json()["error"]["code"]) == (409, "no_active_run")


async def test_a_cancel_cuts_a_slow_step_short_and_the_thread_goes_on(
    open_client: Any, stub: OpenAIStub
) -> None:
    """The model never answers: the cancel does not wait for it (the node's task is cancelled
    after ``CANCEL_GRACE_SECONDS``), the run ends ``cancelled`` with nothing of the cut step
    said, and the next message runs from the last step the thread kept."""
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("Never said.")
    async with open_client(**stub.app_settings()) as client:
        running = asyncio.create_task(client.post("/v1/chat", json={"message": "What is x?"}))
        await asyncio.wait_for(stub.holding.wait(), 10)
        thread_id = (await client.get("/v1/threads")).json()["threads"][0]["thread_id"]
        await client.post(f"/v1/threads/{thread_id}/cancel")
        # Far less than forever: the held answer is released only after the run has ended.
        events = parse_events((await asyncio.wait_for(running, 10)).text)
        stub.release()
        stub.reply('{"intent": "answer", "query": "y"}')
        stub.reply("Said this time.")
        again = await chat(client, {"thread_id": thread_id, "message": "What is y?"})
        messages = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]

    assert events[-1].reason == "cancelled"  # type: ignore[union-attr]
    assert "Never said." not in [e.content for e in events if e.type == "message"]
    assert again[-1].reason == "completed"  # type: ignore[union-attr]
    assert [m["content"] for m in messages] == ["What is x?", "What is y?", "Said this time."]


async def test_cancelling_someone_elses_thread_is_not_found(open_client: Any) -> None:
    async with open_client(api_keys="ka=acme:alice,kb=acme:bob") as client:
        events = await chat(
            client, {"message": "What is RAG?"}, headers={"Authorization": "Bearer ka"}
        )
        response = await client.post(
            f"/v1/threads/{events[0].thread_id}/cancel", headers={"Authorization": "Bearer kb"}
        )
    assert (response.status_code, response.json()["error"]["code"]) == (404, "thread_not_found")


async def test_a_thread_token_budget_stops_a_run_before_the_call_that_would_exceed_it(
    open_client: Any,
) -> None:
    async with open_client(thread_token_budget=1) as client:
        first = await chat(client, {"message": "What is RAG?"})
        thread_id = first[0].thread_id
        # The classifier's call was allowed (nothing used yet); it used the budget, so the
        # answer's call is refused before it is made.
        assert [e.node for e in first if e.type == "step"] == ["analyze_message", "answer_question"]
        assert "message" not in kinds(first)
        assert first[-1].reason == "budget_exhausted"  # type: ignore[union-attr]

        second = await chat(client, {"thread_id": thread_id, "message": "And now?"})

        assert second[-1].reason == "budget_exhausted"  # type: ignore[union-attr]
        assert [e.node for e in second if e.type == "step"] == ["analyze_message"]
        assert await _audit_reasons(client, thread_id) == ["budget_exhausted", "budget_exhausted"]
        other = await chat(client, {"message": "A new thread has its own budget"})
        assert [e.node for e in other if e.type == "step"][:2] == [
            "analyze_message",
            "answer_question",
        ]


async def test_a_tenant_token_budget_spans_the_tenants_threads(open_client: Any) -> None:
    async with open_client(tenant_token_budget=1) as client:
        await chat(client, {"message": "What is RAG?"})

        other = await chat(client, {"message": "A different thread"})

        assert other[-1].reason == "budget_exhausted"  # type: ignore[union-attr]
        assert [e.node for e in other if e.type == "step"] == ["analyze_message"]
