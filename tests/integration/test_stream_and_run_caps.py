"""Caps on what one client holds at once: open event streams per principal (429
`too_many_streams`, per replica) and active runs per tenant (429 `too_many_active_runs`, counted in
the database so it holds across replicas). A tenant at its cap is refused before anything runs,
while other tenants' runs go through."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from consentry.storage.tables import threads
from consentry.storage.tenant_runs import TENANT_RUNS_LOCK_CLASS, count_active_runs
from tests.openai_stub import OpenAIStub
from tests.sse import after_a_question, chat, parse_events

KEYS = "ka=acme:alice,kc=acme:carol,kb=globex:bob"
ALICE = {"Authorization": "Bearer ka"}
CAROL = {"Authorization": "Bearer kc"}
BOB = {"Authorization": "Bearer kb"}
INTENT = '{"intent": "answer", "query": "x"}'
QUESTION = {"message": "What is x?"}


def _capped(response: httpx.Response, code: str, setting: str, maximum: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["Retry-After"] == "5"
    error = response.json()["error"]
    assert error["code"] == code
    assert error["details"] == {"limit": setting, "max": maximum}


async def _threads(client: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = (await client.get("/v1/threads", headers=headers)).json()[
        "threads"
    ]
    return listed


async def test_a_principal_at_its_stream_cap_is_refused_until_a_stream_ends(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply(INTENT)
    stub.hold("Alice's answer.")
    stub.reply(INTENT)
    stub.reply("Bob's answer.")
    async with open_client(**stub.app_settings(api_keys=KEYS, max_streams_per_principal=1)) as c:
        held = asyncio.create_task(c.post("/v1/chat", json=QUESTION, headers=ALICE))
        await asyncio.wait_for(stub.holding.wait(), 10)
        (thread,) = await _threads(c, ALICE)
        stream_url = f"/v1/threads/{thread['thread_id']}/stream"

        second = await c.post("/v1/chat", json=QUESTION, headers=ALICE)
        joined = await c.get(stream_url, headers=ALICE)
        bob = await chat(c, QUESTION, headers=BOB)
        carol = await c.get("/v1/threads", headers=CAROL)  # not a stream: never capped
        stub.release()
        first = await held
        rejoined = await c.get(stream_url, headers=ALICE)
        unknown = await c.post("/v1/chat", json={**QUESTION, "thread_id": "nope"}, headers=ALICE)
        after_refusal = await c.get(stream_url, headers=ALICE)

        _capped(second, "too_many_streams", "max_streams_per_principal", 1)
        _capped(joined, "too_many_streams", "max_streams_per_principal", 1)
        assert len(await _threads(c, ALICE)) == 1  # the refused message started nothing
        assert bob[-1].reason == "completed"
        assert carol.status_code == 200
        assert parse_events(first.text)[-1].reason == "completed"
        assert parse_events(rejoined.text)[-1].reason == "completed"
        assert unknown.status_code == 404  # a refused request gives its slot back at once
        assert after_refusal.status_code == 200
        slots = c.services.stream_slots  # type: ignore[attr-defined]
        assert len(slots) == 0
        stub.assert_calls(4)


async def test_a_tenant_at_its_active_run_cap_is_refused_while_another_tenant_completes(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply(INTENT)
    stub.hold("Alice's answer.")
    stub.reply(INTENT)
    stub.reply("Bob's answer.")
    stub.reply(INTENT)
    stub.reply("Carol's answer.")
    settings = stub.app_settings(api_keys=KEYS, max_active_runs_per_tenant=1)
    async with open_client(**settings) as client:
        held = asyncio.create_task(client.post("/v1/chat", json=QUESTION, headers=ALICE))
        await asyncio.wait_for(stub.holding.wait(), 10)

        carol = await client.post("/v1/chat", json=QUESTION, headers=CAROL)
        alice = await client.post("/v1/chat", json=QUESTION, headers=ALICE)
        bob = await chat(client, QUESTION, headers=BOB)
        stub.release()
        first = await held
        carol_later = await chat(client, QUESTION, headers=CAROL)

        for refused in (carol, alice):
            _capped(refused, "too_many_active_runs", "max_active_runs_per_tenant", 1)
        assert bob[-1].reason == "completed"
        assert parse_events(first.text)[-1].reason == "completed"
        assert carol_later[-1].reason == "completed"
        assert [len(await _threads(client, h)) for h in (ALICE, CAROL, BOB)] == [1, 1, 1]
        stub.assert_calls(6)  # the refused requests never reached the model


async def test_a_decision_is_refused_at_the_cap_and_its_consent_stays_pending(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS, max_active_runs_per_tenant=1) as client:
        projects = (await client.get("/v1/projects", headers=CAROL)).json()["projects"]
        note = (
            await client.post(
                f"/v1/projects/{projects[0]['project_id']}/notes",
                json={"title": "RAG", "content": "Retrieval first."},
                headers=CAROL,
            )
        ).json()
        asked = await after_a_question(
            client,
            {"message": "Add a summary of our discussion to my note", "note_id": note["note_id"]},
            headers=CAROL,
        )
        consent = asked[-2]
        other = (await chat(client, QUESTION, headers=ALICE))[0].thread_id
        async with client.services.db.write() as conn:  # type: ignore[attr-defined]
            # Another thread of the tenant runs (as if on another replica).
            await conn.execute(
                threads.update().where(threads.c.id == other).values(status="running")
            )

        refused = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision",
            json={"decision": "approve"},
            headers=CAROL,
        )
        by_chat = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
            headers=CAROL,
        )

        for response in (refused, by_chat):
            _capped(response, "too_many_active_runs", "max_active_runs_per_tenant", 1)
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}", headers=CAROL)).json()
        assert approval["status"] == "pending"
        answer = await chat(client, QUESTION, headers=BOB)  # another tenant: not capped
        assert answer[-1].reason == "completed"
        async with client.services.db.write() as conn:  # type: ignore[attr-defined]
            await conn.execute(threads.update().where(threads.c.id == other).values(status="idle"))


async def test_the_active_run_cap_is_counted_across_replicas(
    open_client: Callable[..., Any], stub: OpenAIStub, db_url: str
) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("one process serves a SQLite file: there are no other replicas")
    stub.reply(INTENT)
    stub.hold("Alice's answer.")
    settings = stub.app_settings(api_keys=KEYS, max_active_runs_per_tenant=1)
    async with open_client(**settings) as one, open_client(**settings) as two:
        held = asyncio.create_task(one.post("/v1/chat", json=QUESTION, headers=ALICE))
        await asyncio.wait_for(stub.holding.wait(), 10)

        elsewhere = await two.post("/v1/chat", json=QUESTION, headers=CAROL)
        stub.release()
        first = await held

        _capped(elsewhere, "too_many_active_runs", "max_active_runs_per_tenant", 1)
        assert parse_events(first.text)[-1].reason == "completed"
        stub.assert_calls(2)


async def test_run_starts_of_one_tenant_wait_for_each_other_to_count(
    open_client: Callable[..., Any], db_url: str
) -> None:
    """PostgreSQL: a second replica's count waits for the first's claim to commit, so two run
    starts racing cannot both see room under the cap."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite runs one write transaction at a time: nothing can interleave")
    async with open_client(api_keys=KEYS) as client:
        events = await chat(client, QUESTION, headers=ALICE)
        thread_id = events[0].thread_id
        db = client.services.db  # type: ignore[attr-defined]

        async def count_elsewhere() -> int:
            async with db.write() as conn:
                return await count_active_runs(conn, "acme", excluding_thread="another")

        async with db.write() as first:
            assert await count_active_runs(first, "acme", excluding_thread=thread_id) == 0
            await first.execute(
                threads.update().where(threads.c.id == thread_id).values(status="running")
            )
            second = asyncio.create_task(count_elsewhere())
            async with asyncio.timeout(10):
                while not await _waits_for_tenant_lock(db):  # noqa: ASYNC110 - no event exists
                    await asyncio.sleep(0.01)
            assert not second.done()
        assert await asyncio.wait_for(second, 10) == 1
        async with db.write() as conn:
            await conn.execute(
                threads.update().where(threads.c.id == thread_id).values(status="idle")
            )


async def _waits_for_tenant_lock(db: Any) -> bool:
    async with db.read() as conn:
        waiting = await conn.scalar(
            sa.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                f"AND classid::bigint = {TENANT_RUNS_LOCK_CLASS}"
            )
        )
    return bool(waiting)
