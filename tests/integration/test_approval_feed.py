"""``GET /v1/approvals/stream``: a caller's approvals pushed as they change (requested, decided,
expired, cancelled), ``ready`` once caught up, reconnect with ``Last-Event-ID``, nobody else's.
Over real HTTP (a uvicorn server in the test's loop): the stream never ends by itself."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.approval_feed import change_of, open_feed
from tests.sse import ask_for_note_edit

TTL = 60


async def _approval_id(client: httpx.AsyncClient) -> tuple[str, str]:
    _, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    return consent.thread_id, consent.approval_id  # type: ignore[attr-defined]


async def test_each_change_to_the_callers_approvals_is_pushed_as_it_commits(
    open_live: Any, clock: Any
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, services), open_feed(client) as feed:
        ready = await feed.next()
        assert (ready.event, ready.data) == ("ready", {"pending": 0})

        thread_id, first = await _approval_id(client)
        assert await feed.changes(1) == [("requested", first, "pending")]

        decided = await client.post(
            f"/v1/approvals/{first}/decision", json={"decision": "reject", "comment": "No."}
        )
        assert decided.status_code == 202
        [(change, approval_id, status)] = await feed.changes(1)
        assert (change, approval_id, status) == ("decided", first, "rejected")

        await services.executor.wait_for_runs()
        asked = await client.post(
            "/v1/chat",
            json={"thread_id": thread_id, "message": "Add a summary of our discussion to my note"},
        )
        second = next(
            json.loads(line.removeprefix("data: "))["approval_id"]
            for line in asked.text.splitlines()
            if line.startswith("data: ") and '"type":"consent"' in line
        )
        assert await feed.changes(1) == [("requested", second, "pending")]
        clock.advance(seconds=TTL + 1)
        # This sweep, or the sweeper's own pass that the consent rang (a race a loaded machine
        # lost once: this sweep then found nothing left to expire), expires it once.
        assert await services.expiry.sweep() in (0, 1)
        assert await feed.changes(1) == [("expired", second, "expired")]


async def test_a_client_reconnecting_with_its_last_id_gets_what_it_missed_then_ready(
    open_live: Any,
) -> None:
    async with open_live() as (client, _):
        async with open_feed(client) as feed:
            ready = await feed.next()
            _, first = await _approval_id(client)
            requested = await feed.next()
        # Gone: meanwhile the consent is decided and another one asked.
        await client.post(f"/v1/approvals/{first}/decision", json={"decision": "approve"})
        _, second = await _approval_id(client)

        async with open_feed(client, {"Last-Event-ID": str(requested.id)}) as again:
            frames = await again.until_ready()

        caught_up = frames.pop()
        assert requested.id > ready.id
        missed = [f for f in frames if f.id > requested.id]
        assert [change_of(f) for f in missed] == [
            ("decided", first, "approved"),
            ("requested", second, "pending"),
        ]
        # On PostgreSQL the changes of the last seconds are looked at again (a commit may land
        # after a later one): a reconnect may repeat one, never anything else.
        repeated = [f for f in frames if f.id <= requested.id]
        assert [f.id for f in repeated] in ([], [requested.id])
        assert caught_up.event == "ready"
        assert caught_up.data == {"pending": 1}
        assert caught_up.id == missed[-1].id


async def test_nobody_is_pushed_another_users_approvals(open_live: Any) -> None:
    keys = "ka=acme:alice,kb=acme:bob"
    async with open_live(api_keys=keys) as (client, _):
        alice, bob = {"Authorization": "Bearer ka"}, {"Authorization": "Bearer kb"}
        async with open_feed(client, bob) as bobs, open_feed(client, alice) as alices:
            await bobs.next()
            await alices.next()
            client.headers.update(alice)
            _, approval_id = await _approval_id(client)

            assert await alices.changes(1) == [("requested", approval_id, "pending")]
            client.headers.update(bob)
            _, bobs_own = await _approval_id(client)
            assert await bobs.changes(1) == [("requested", bobs_own, "pending")]


async def test_a_bad_last_event_id_is_refused_clearly(open_live: Any) -> None:
    async with open_live() as (client, _):
        response = await client.get("/v1/approvals/stream", headers={"Last-Event-ID": "x1"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_last_event_id"
