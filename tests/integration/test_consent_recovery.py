"""Regression tests named after the bugs a review found: recorded decisions survive a failed run,
keys and timers do not get stuck, bad cursors and unserved graphs answer cleanly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from consentry.app import create_app
from consentry.runtime.clock import utc_now
from consentry.runtime.runs import RunService
from consentry.runtime.runs.execute import _graph_stream as graph_stream_module
from consentry.schemas.events import ConsentEvent
from consentry.settings import Settings
from consentry_graphs.examples.parallel_consents import OUTBOX
from tests.live_server import serve_app
from tests.sse import after_a_question, chat, parse_events

PARALLEL = "parallel=consentry_graphs.examples.parallel_consents:graph_spec"


def _fail_next_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next run fails before its graph does anything (a checkpointer or process failure)."""
    original = graph_stream_module.GraphStreamer.stream
    state = {"failed": False}

    async def failing(self: Any, *args: Any, **kwargs: Any) -> None:
        if not state["failed"]:
            state["failed"] = True
            raise RuntimeError("the checkpointer went away")
        await original(self, *args, **kwargs)

    monkeypatch.setattr(graph_stream_module.GraphStreamer, "stream", failing)


async def _until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait for a state the server reaches on its own (bounded: fails the test after 15 s)."""
    async with asyncio.timeout(15):
        while not await check():  # noqa: ASYNC110 - the state is observable over HTTP only
            await asyncio.sleep(0.05)


async def test_a_decision_whose_run_failed_is_applied_when_sent_again(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = (await client.get("/v1/projects")).json()["projects"][0]
    note = (
        await client.post(
            f"/v1/projects/{project['project_id']}/notes", json={"title": "T", "content": "c"}
        )
    ).json()
    asked = await after_a_question(
        client,
        {"message": "Add a summary of our discussion to my note", "note_id": note["note_id"]},
    )
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    resume = {"thread_id": consent.thread_id, "resume": {"approval_id": consent.approval_id}}
    resume["resume"]["decision"] = "approve"  # type: ignore[index]
    _fail_next_stream(monkeypatch)

    failed = await chat(client, resume)
    again = await chat(client, resume)

    assert [e.type for e in failed][-2:] == ["error", "final"]
    assert again[-1].reason == "completed"  # type: ignore[union-attr]
    assert "note" in [e.type for e in again]
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert len(versions) == 2


async def test_a_failed_resume_of_one_parallel_consent_leaves_the_other_decidable(
    open_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    posts, notices = len(OUTBOX.posts), len(OUTBOX.notifications)
    async with open_client(graphs=PARALLEL) as client:
        asked = await chat(client, {"graph": "parallel", "message": "2.0 is out"})
        consents = {e.kind: e for e in asked if isinstance(e, ConsentEvent)}
        thread_id = consents["publish_post"].thread_id
        _fail_next_stream(monkeypatch)
        publish = {"approval_id": consents["publish_post"].approval_id, "decision": "approve"}
        failed = await chat(client, {"thread_id": thread_id, "resume": publish})
        assert failed[-1].reason == "failed"  # type: ignore[union-attr]
        detail = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert detail["status"] == "awaiting_consent"

        notify = {"approval_id": consents["notify_team"].approval_id, "decision": "approve"}
        done = await chat(client, {"thread_id": thread_id, "resume": notify})

        assert done[-1].reason == "completed"  # type: ignore[union-attr]
    assert len(OUTBOX.posts) == posts + 1  # the recorded approval was applied with the new one
    assert len(OUTBOX.notifications) == notices + 1


async def test_an_idempotency_key_is_released_when_its_request_fails(
    open_live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = RunService.start
    calls = {"n": 0}

    async def start_failing_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(RunService, "start", start_failing_once)
    async with open_live() as (client, _):
        headers = {"Idempotency-Key": "retry-me"}
        first = await client.post("/v1/chat", json={"message": "Hi"}, headers=headers)
        second = await client.post("/v1/chat", json={"message": "Hi"}, headers=headers)

    assert first.status_code == 500
    assert second.status_code == 200
    assert parse_events(second.text)[-1].type == "final"


async def test_a_cursor_without_a_time_zone_is_invalid(client: httpx.AsyncClient) -> None:
    import base64

    cursor = base64.urlsafe_b64encode(b"2024-01-01T00:00:00|x").decode()
    response = await client.get("/v1/approvals", params={"cursor": cursor})
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_cursor")


async def test_an_unserved_graphs_thread_keeps_its_transcript_refuses_runs_and_is_not_swept(
    open_client: Any, clock: Any
) -> None:
    async with open_client(graphs=PARALLEL, consent_ttl_seconds=60) as client:
        asked = await chat(client, {"graph": "parallel", "message": "3.0"})
        thread_id = asked[0].thread_id
    clock.advance(seconds=120)
    async with open_client(consent_ttl_seconds=60) as client:
        messages = await client.get(f"/v1/threads/{thread_id}/messages")
        assert messages.status_code == 200
        assert [(m["role"], m["content"]) for m in messages.json()["messages"]] == [("user", "3.0")]
        refused = await client.post("/v1/chat", json={"thread_id": thread_id, "message": "4.0"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (422, "unknown_graph")
        assert await client.services.expiry.sweep() == 0  # type: ignore[attr-defined]
        pending = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        assert len(pending["approvals"]) == 2


async def test_the_sweeper_expires_consents_on_its_own_timer(tmp_path: Any) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'timer.db'}", consent_ttl_seconds=1)
    app = create_app(settings, clock=utc_now)
    async with serve_app(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        asked = await after_a_question(client, {"message": "Save this to a new note"})
        assert asked[-2].type == "consent"
        thread_id = asked[0].thread_id

        async def expired() -> bool:
            thread = (await client.get(f"/v1/threads/{thread_id}")).json()
            return bool(thread["last_reason"] == "expired")

        await _until(expired)  # nobody calls sweep(): the timer fires about a second later


async def test_keys_left_in_flight_by_a_dead_process_are_released_or_taken_over(
    open_client: Any, clock: Any
) -> None:
    """A key whose request never claimed a run (its process died first): on SQLite the next
    process forgets it at start-up; on PostgreSQL (other replicas may hold keys) a retry takes
    it over once it is older than a run's lease."""
    from consentry.principal import LOCAL_PRINCIPAL
    from consentry.runtime.guards import request_fingerprint
    from consentry.schemas.chat import ChatRequest
    from consentry.storage.idempotency import claim_idempotency_key

    body, headers = {"message": "Hi"}, {"Idempotency-Key": "orphan"}
    fingerprint = request_fingerprint("/v1/chat", ChatRequest(**body).model_dump(mode="json"))
    async with open_client() as client:
        services = client.services  # type: ignore[attr-defined]
        async with services.db.write() as conn:  # as if the process died mid-request
            await claim_idempotency_key(
                conn,
                LOCAL_PRINCIPAL,
                "orphan",
                request_hash=fingerprint,
                attempt="dead",
                now=services.clock(),
            )
        held = await client.post("/v1/chat", json=body, headers=headers)
        assert (held.status_code, held.json()["error"]["code"]) == (409, "request_in_progress")
    async with open_client() as client:
        fresh = await client.post("/v1/chat", json=body, headers=headers)
        if client.services.db.is_postgres:  # type: ignore[attr-defined]
            assert fresh.json()["error"]["code"] == "request_in_progress"
            clock.advance(seconds=client.services.settings.lease_seconds + 1)  # type: ignore[attr-defined]
            fresh = await client.post("/v1/chat", json=body, headers=headers)
        assert fresh.status_code == 200
        assert "Idempotent-Replayed" not in fresh.headers
        again = await client.post("/v1/chat", json=body, headers=headers)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == fresh.headers["X-Run-Id"]


async def test_another_users_audit_trail_is_not_found(open_client: Any) -> None:
    async with open_client(api_keys="ka=acme:alice,kb=acme:bob") as client:
        alice = await chat(
            client, {"message": "What is RAG?"}, headers={"Authorization": "Bearer ka"}
        )
        thread_id = alice[0].thread_id
        bob = await client.get(
            f"/v1/threads/{thread_id}/audit", headers={"Authorization": "Bearer kb"}
        )
        mine = await client.get(
            f"/v1/threads/{thread_id}/audit", headers={"Authorization": "Bearer ka"}
        )
    assert (bob.status_code, bob.json()["error"]["code"]) == (404, "thread_not_found")
    assert [r["action"] for r in mine.json()["records"]] == ["run_started", "run_ended"]
