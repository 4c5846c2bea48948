"""``Idempotency-Key`` on decisions and on ``POST /v1/chat`` (Stripe and IETF-draft semantics)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent
from tests.openai_stub import OpenAIStub
from tests.sse import ASK_FOR_SUMMARY, after_a_question, parse_events

KEYS = "ka=acme:alice,kb=acme:bob"


async def _ask(client: httpx.AsyncClient) -> ConsentEvent:
    consent = (await after_a_question(client, {"message": ASK_FOR_SUMMARY}))[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def _runs_started(client: httpx.AsyncClient, thread_id: str) -> int:
    records = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    return sum(1 for r in records if r["action"] == "run_started")


async def test_the_same_decision_with_the_same_key_returns_the_first_response(
    open_live: Any,
) -> None:
    async with open_live() as (client, services):
        consent = await _ask(client)
        url = f"/v1/approvals/{consent.approval_id}/decision"
        headers = {"Idempotency-Key": "decide-1"}

        first = await client.post(url, json={"decision": "approve"}, headers=headers)
        await services.executor.wait_for_runs()
        again = await client.post(url, json={"decision": "approve"}, headers=headers)

        assert (first.status_code, again.status_code) == (202, 202)
        assert again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in first.headers
        assert await _runs_started(client, consent.thread_id) == 3  # question, ask, one resume


async def test_the_same_key_with_another_body_is_refused(open_live: Any) -> None:
    async with open_live() as (client, services):
        consent = await _ask(client)
        url = f"/v1/approvals/{consent.approval_id}/decision"
        headers = {"Idempotency-Key": "decide-2"}
        await client.post(url, json={"decision": "reject"}, headers=headers)
        await services.executor.wait_for_runs()

        other = await client.post(url, json={"decision": "approve"}, headers=headers)

        assert other.status_code == 422
        assert other.json()["error"]["code"] == "idempotency_key_reused"
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "rejected"


async def test_a_refused_request_is_not_stored_so_a_retry_runs_again(open_live: Any) -> None:
    async with open_live() as (client, _):
        consent = await _ask(client)
        url = f"/v1/approvals/{consent.approval_id}/decision"
        headers = {"Idempotency-Key": "decide-3"}
        invalid = {"decision": "edit", "edited": {"content": " "}}
        assert (await client.post(url, json=invalid, headers=headers)).status_code == 422

        retried = await client.post(url, json=invalid, headers=headers)

        assert retried.json()["error"]["code"] == "invalid_edit"  # run again, not replayed


async def test_a_chat_request_sent_again_replays_its_stored_events(open_live: Any) -> None:
    async with open_live() as (client, _):
        body = {"message": "Add a summary of our discussion to my note"}
        headers = {"Idempotency-Key": "chat-1"}

        first = await client.post("/v1/chat", json=body, headers=headers)
        again = await client.post("/v1/chat", json=body, headers=headers)

        original = [e for e in parse_events(first.text) if e.type != "token"]
        replayed = parse_events(again.text)
        assert [e.model_dump() for e in replayed] == [e.model_dump() for e in original]
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == first.headers["X-Run-Id"]
        threads = (await client.get("/v1/threads")).json()["threads"]
        assert len(threads) == 1
        assert await _runs_started(client, threads[0]["thread_id"]) == 1


async def test_the_same_key_while_the_first_run_goes_on_follows_that_run(
    open_client: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("An answer.")
    async with open_client(**stub.app_settings()) as client:
        body = {"message": "What is x?"}
        headers = {"Idempotency-Key": "chat-2"}
        first = asyncio.create_task(client.post("/v1/chat", json=body, headers=headers))
        await asyncio.wait_for(stub.holding.wait(), 10)
        thread_id = (await client.get("/v1/threads")).json()["threads"][0]["thread_id"]

        during = asyncio.create_task(client.post("/v1/chat", json=body, headers=headers))
        stream = client.services.executor.active_stream(thread_id)  # type: ignore[attr-defined]
        async with asyncio.timeout(10):  # the retry follows the run before it goes on
            while stream.listeners < 2:  # noqa: ASYNC110 - no event exists for this
                await asyncio.sleep(0.01)
        stub.release()
        done, again = await first, await during

        assert again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == done.headers["X-Run-Id"]
        original = [e for e in parse_events(done.text) if e.type != "token"]
        followed = [e for e in parse_events(again.text) if e.type != "token"]
        assert [e.model_dump() for e in followed] == [e.model_dump() for e in original]
        assert followed[-1].type == "final"
        threads = (await client.get("/v1/threads")).json()["threads"]
        assert len(threads) == 1


async def test_keys_belong_to_one_owner(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        body = {"message": "What is RAG?"}
        alice = await client.post(
            "/v1/chat", json=body, headers={"Authorization": "Bearer ka", "Idempotency-Key": "k"}
        )
        bob = await client.post(
            "/v1/chat", json=body, headers={"Authorization": "Bearer kb", "Idempotency-Key": "k"}
        )

        assert "Idempotent-Replayed" not in bob.headers
        assert bob.headers["X-Thread-Id"] != alice.headers["X-Thread-Id"]


async def test_keys_are_kept_a_day_then_forgotten(open_live: Any, clock: Any) -> None:
    async with open_live() as (client, services):
        headers = {"Idempotency-Key": "daily"}
        await client.post("/v1/chat", json={"message": "What is RAG?"}, headers=headers)

        clock.advance(hours=23)
        assert await services.expiry.prune_idempotency_keys() == 0
        reused = await client.post("/v1/chat", json={"message": "Other"}, headers=headers)
        assert reused.json()["error"]["code"] == "idempotency_key_reused"

        clock.advance(hours=2)
        assert await services.expiry.prune_idempotency_keys() == 1
        fresh = await client.post("/v1/chat", json={"message": "Other"}, headers=headers)
        assert fresh.status_code == 200
        assert "Idempotent-Replayed" not in fresh.headers
