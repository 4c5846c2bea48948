"""Per-principal rate limits: past its burst a principal's messages (runs it starts) and
decisions get 429 `rate_limited` with `Retry-After`, until tokens come back with time. Each
principal and each kind has its own bucket, so a noisy tenant never spends another's budget, and
an idempotent replay is not counted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import ManualClock
from tests.sse import ask_for_note_edit, chat, parse_events

KEYS = "ka=acme:alice,kc=acme:carol,kb=globex:bob"
ALICE = {"Authorization": "Bearer ka"}
CAROL = {"Authorization": "Bearer kc"}
BOB = {"Authorization": "Bearer kb"}
QUESTION = {"message": "What is RAG?"}


def _rate_limited(response: httpx.Response, *, setting: str, retry_after: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["Retry-After"] == str(retry_after)
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    assert error["details"]["limit"] == setting
    assert error["details"]["retry_after"] == retry_after


async def _thread_count(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    return len((await client.get("/v1/threads", headers=headers)).json()["threads"])


async def test_messages_past_the_burst_get_429_with_retry_after_until_a_token_is_back(
    open_client: Callable[..., Any], clock: ManualClock
) -> None:
    limits = {"rate_limit_messages_per_minute": 30, "rate_limit_messages_burst": 2}
    async with open_client(**limits) as client:
        first = await chat(client, QUESTION)
        await chat(client, QUESTION)

        refused = await client.post("/v1/chat", json=QUESTION)
        retry = await client.post(f"/v1/threads/{first[0].thread_id}/retry")
        clock.advance(seconds=1)
        still = await client.post("/v1/chat", json=QUESTION)
        clock.advance(seconds=1)
        again = await chat(client, QUESTION)

        _rate_limited(refused, setting="rate_limit_messages_per_minute", retry_after=2)
        assert refused.json()["error"]["details"] == {
            "limit": "rate_limit_messages_per_minute",
            "max": 30,
            "burst": 2,
            "retry_after": 2,
        }
        _rate_limited(retry, setting="rate_limit_messages_per_minute", retry_after=2)
        _rate_limited(still, setting="rate_limit_messages_per_minute", retry_after=1)
        assert again[-1].reason == "completed"
        assert await _thread_count(client, {}) == 3


async def test_decisions_have_their_own_bucket(open_client: Callable[..., Any]) -> None:
    limits = {"rate_limit_decisions_per_minute": 1, "rate_limit_decisions_burst": 1}
    async with open_client(**limits) as client:
        _, first = await ask_for_note_edit(client)
        _, second = await ask_for_note_edit(client)
        one, two = first[-2], second[-2]

        decided = await client.post(
            f"/v1/approvals/{one.approval_id}/decision", json={"decision": "reject"}
        )
        by_chat = await client.post(
            "/v1/chat",
            json={
                "thread_id": two.thread_id,
                "resume": {"approval_id": two.approval_id, "decision": "reject"},
            },
        )
        by_inbox = await client.post(
            f"/v1/approvals/{two.approval_id}/decision", json={"decision": "approve"}
        )
        message = await chat(client, QUESTION)  # messages are counted apart

        assert decided.status_code == 202, decided.text
        _rate_limited(by_chat, setting="rate_limit_decisions_per_minute", retry_after=60)
        _rate_limited(by_inbox, setting="rate_limit_decisions_per_minute", retry_after=60)
        approval = (await client.get(f"/v1/approvals/{two.approval_id}")).json()
        assert approval["status"] == "pending"
        assert message[-1].reason == "completed"


async def test_an_idempotent_replay_is_not_counted_and_a_refused_key_can_run_later(
    open_client: Callable[..., Any], clock: ManualClock
) -> None:
    limits = {"rate_limit_messages_per_minute": 60, "rate_limit_messages_burst": 1}
    async with open_client(**limits) as client:
        first = await client.post("/v1/chat", json=QUESTION, headers={"Idempotency-Key": "k1"})
        replayed = await client.post("/v1/chat", json=QUESTION, headers={"Idempotency-Key": "k1"})
        refused = await client.post("/v1/chat", json=QUESTION, headers={"Idempotency-Key": "k2"})
        clock.advance(seconds=1)
        later = await client.post("/v1/chat", json=QUESTION, headers={"Idempotency-Key": "k2"})

        assert (first.status_code, replayed.status_code) == (200, 200)
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.headers["X-Run-Id"] == first.headers["X-Run-Id"]
        _rate_limited(refused, setting="rate_limit_messages_per_minute", retry_after=1)
        assert later.status_code == 200, later.text
        assert "Idempotent-Replayed" not in later.headers  # the refusal was not stored
        assert parse_events(later.text)[-1].reason == "completed"
        assert await _thread_count(client, {}) == 2


async def test_a_noisy_principal_is_refused_while_other_principals_keep_their_budget(
    open_client: Callable[..., Any],
) -> None:
    limits = {"rate_limit_messages_per_minute": 60, "rate_limit_messages_burst": 3}
    async with open_client(api_keys=KEYS, **limits) as client:
        noisy = await asyncio.gather(
            *(client.post("/v1/chat", json=QUESTION, headers=ALICE) for _ in range(10))
        )
        bob = [await client.post("/v1/chat", json=QUESTION, headers=BOB) for _ in range(4)]
        carol = await client.post("/v1/chat", json=QUESTION, headers=CAROL)  # alice's tenant

        assert sorted(r.status_code for r in noisy) == [200] * 3 + [429] * 7
        for response in noisy:
            if response.status_code == 429:
                _rate_limited(response, setting="rate_limit_messages_per_minute", retry_after=1)
            else:
                assert parse_events(response.text)[-1].reason == "completed"
        assert [r.status_code for r in bob] == [200, 200, 200, 429]
        assert all(parse_events(r.text)[-1].reason == "completed" for r in bob[:3])
        assert carol.status_code == 200, carol.text
        counts = [await _thread_count(client, h) for h in (ALICE, BOB, CAROL)]
        assert counts == [3, 3, 1]
