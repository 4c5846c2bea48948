"""`GET /v1/threads/{id}/stream`: a client catches up with exactly what it missed, then follows
the active run live, with no gap and no duplicate."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.openai_stub import OpenAIStub
from tests.sse import assert_numbered, chat, parse_events


def _durable(events: list[Any]) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in events if e.type != "token"]


async def test_a_client_gets_exactly_the_stored_events_after_its_last_id(
    client: httpx.AsyncClient,
) -> None:
    first = await chat(client, {"message": "What is RAG?"})
    thread_id = first[0].thread_id
    second = await chat(client, {"thread_id": thread_id, "message": "And search my notes for x"})
    seen = first[-1].seq  # the client saw the first run, then lost the connection

    response = await client.get(
        f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": str(seen)}
    )

    replayed = parse_events(response.text)
    assert _durable(replayed) == _durable(second)
    assert [e.model_dump() for e in replayed] == [
        e.model_dump() for e in second if e.type != "token"
    ]
    everything = parse_events((await client.get(f"/v1/threads/{thread_id}/stream")).text)
    assert _durable(everything) == _durable(first) + _durable(second)
    by_query = await client.get(
        f"/v1/threads/{thread_id}/stream", params={"last_event_id": str(seen)}
    )
    assert _durable(parse_events(by_query.text)) == _durable(second)


async def test_a_client_joining_mid_run_catches_up_then_follows_it_live(
    open_client: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("A held answer.")
    async with open_client(**stub.app_settings()) as client:
        started = asyncio.create_task(client.post("/v1/chat", json={"message": "What is x?"}))
        await asyncio.wait_for(stub.holding.wait(), 10)
        thread_id = (await client.get("/v1/threads")).json()["threads"][0]["thread_id"]

        joined = asyncio.create_task(
            client.get(f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "1"})
        )
        stream = client.services.executor.active_stream(thread_id)  # type: ignore[attr-defined]
        async with asyncio.timeout(10):  # the joiner follows the run before it goes on
            while stream.listeners < 2:  # noqa: ASYNC110 - no event exists for this
                await asyncio.sleep(0.01)
        stub.release()
        original = parse_events((await started).text)
        caught_up = parse_events((await joined).text)

        assert _durable(caught_up) == [(s, t) for s, t in _durable(original) if s > 1]
        assert_numbered(caught_up, first=2)  # no gap, no duplicate; its tokens in their place
        assert caught_up[-1].type == "final"


async def test_bad_last_event_ids_are_refused_clearly(open_client: Any) -> None:
    async with open_client(api_keys="ka=acme:alice,kb=acme:bob") as client:
        alice = {"Authorization": "Bearer ka"}
        events = await chat(client, {"message": "What is RAG?"}, headers=alice)
        url = f"/v1/threads/{events[0].thread_id}/stream"

        for value in ("abc", "-1", "1.5", "null", "1" * 19, str(events[-1].seq + 1)):
            response = await client.get(url, headers={**alice, "Last-Event-ID": value})
            assert (response.status_code, response.json()["error"]["code"]) == (
                400,
                "invalid_last_event_id",
            ), value
        # The header wins over the query parameter, and both are checked.
        both = await client.get(
            url, headers={**alice, "Last-Event-ID": "1"}, params={"last_event_id": "abc"}
        )
        assert (both.status_code, both.json()["error"]["code"]) == (400, "invalid_last_event_id")
        foreign = await client.get(url, headers={"Authorization": "Bearer kb"})
        assert (foreign.status_code, foreign.json()["error"]["code"]) == (404, "thread_not_found")
        last = await client.get(url, headers={**alice, "Last-Event-ID": str(events[-1].seq)})
        assert parse_events(last.text) == []


async def test_replay_works_after_a_restart(open_client: Any) -> None:
    async with open_client() as client:
        events = await chat(client, {"message": "What is RAG?"})
    async with open_client() as client:
        response = await client.get(
            f"/v1/threads/{events[0].thread_id}/stream", headers={"Last-Event-ID": "2"}
        )
    assert _durable(parse_events(response.text)) == [(s, t) for s, t in _durable(events) if s > 2]


async def test_a_client_older_than_the_retention_window_gets_one_resync_never_a_gap(
    open_client: Any, clock: Any
) -> None:
    async with open_client() as client:
        old = await chat(client, {"message": "What is RAG?"})
        thread_id = old[0].thread_id
        clock.advance(hours=169)  # past the default retention of 168 hours
        services = client.services  # type: ignore[attr-defined]
        assert await services.expiry.prune_events() == len(_durable(old))
        new = await chat(client, {"thread_id": thread_id, "message": "And now?"})

        response = await client.get(
            f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "3"}
        )

        events = parse_events(response.text)
        resync = events[0]
        assert resync.type == "resync"
        assert resync.seq == old[-1].seq  # everything up to here is gone
        assert resync.first_available_seq == new[0].seq  # type: ignore[union-attr]
        assert _durable(events[1:]) == _durable(new)
        after_gap = await client.get(
            f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": str(resync.seq)}
        )
        assert _durable(parse_events(after_gap.text)) == _durable(new)
