"""Several ``consentry serve`` replicas on one PostgreSQL database (``tests/system/replicas.py``):
a thread goes on through whichever replica a client reaches, a stream joined on one replica
follows a run executing on another (woken by LISTEN/NOTIFY), decisions racing on two replicas
have one winner and one effect, and the run of a replica killed mid-way is taken over by a live
one once its lease expired.

Consents come from the offline model (no stub); runs that must stay mid-way use the scripted
OpenAI-compatible stub (``hold`` + ``holding``), served by the test's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from consentry.runtime.replicas._log_follower import FOLLOW_RECHECK_SECONDS
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    NoteEvent,
    RunStartedEvent,
)
from tests.approval_feed import change_of, open_feed
from tests.openai_stub import OpenAIStub
from tests.postgres import PostgresCluster
from tests.sse import (
    ASK_FOR_SUMMARY,
    QUESTION,
    TUTOR_ASKED,
    after_a_question,
    assert_numbered,
    chat,
    kinds,
    next_event,
    parse_events,
)
from tests.system.kill_points import KillPoints, interrupt_stored
from tests.system.kill_points_graph import BESIDE_THE_CONSENT, KILL_POINTS_DIR
from tests.system.replicas import Replica, start_replicas

WAIT_SECONDS = 20.0
FOLLOW_PROMPTLY_SECONDS = 3.0
"""How soon a follower on another replica must deliver what the run stored: far under
``FOLLOW_RECHECK_SECONDS``, so only a notification can have woken it."""
LEASE_SECONDS = 3
SHORT_LEASE = {"CONSENTRY_LEASE_SECONDS": str(LEASE_SECONDS)}
ASIDE_GRAPH = "aside=tests.system.kill_points_graph:aside_graph_spec"

NOTE_CONTENT = "Retrieval-augmented generation uses documents."
APPLIED = ["run_started", "step", "step", "note", "message", "final"]
REJECTED = ["run_started", "step", "step", "message", "final"]

CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
HELD_MID_ANSWER = ["run_started", "step", "step"]
DEAD_RUN_CLOSED = ["error", "final"]
RECOVERED_IN_THE_ANSWER = ["run_started", "step", "message", "final"]

Channel = Literal["chat", "inbox"]
Decision = Literal["approve", "reject"]
RACES: list[tuple[tuple[Decision, Channel], tuple[Decision, Channel]]] = [
    (("approve", "chat"), ("reject", "inbox")),
    (("reject", "chat"), ("approve", "inbox")),
    (("approve", "inbox"), ("reject", "chat")),
    (("approve", "inbox"), ("approve", "inbox")),
    (("reject", "chat"), ("reject", "chat")),
    (("approve", "chat"), ("approve", "chat")),
]
"""Pairs of decisions on one consent: the first sent to replica 1, the second to replica 2."""


async def _within(awaitable: Awaitable[Any], seconds: float = WAIT_SECONDS) -> Any:
    async with asyncio.timeout(seconds):
        return await awaitable


async def _read_events(lines: AsyncIterator[str], count: int) -> list[Event]:
    async with asyncio.timeout(WAIT_SECONDS):
        return [await next_event(lines) for _ in range(count)]


async def _read_to_end(lines: AsyncIterator[str]) -> list[Event]:
    """Every event up to the end of the stream (the caller bounds how long that may take)."""
    return parse_events("\n".join([line async for line in lines]) + "\n\n")


async def _open_note(http: httpx.AsyncClient) -> dict[str, Any]:
    project = (await http.get("/v1/projects")).json()["projects"][0]
    response = await http.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "RAG", "content": NOTE_CONTENT},
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


async def _ask(http: httpx.AsyncClient, note_id: str) -> tuple[list[Event], ConsentEvent]:
    """A new thread asked ``QUESTION`` and then for a summary of that discussion, which makes the
    tutor ask a ``note_edit`` consent (offline model): the summary run's events and its consent."""
    asked = await after_a_question(http, {"message": ASK_FOR_SUMMARY, "note_id": note_id})
    assert kinds(asked) == TUTOR_ASKED
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    assert _reason(asked[-1]) == "interrupted"
    return asked, consent


async def _join(http: httpx.AsyncClient, thread_id: str, *, after: int) -> list[Event]:
    """The thread's stream from ``after`` on, read until the server ends it."""
    response = await _within(
        http.get(f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": str(after)})
    )
    assert response.status_code == 200, response.text
    return parse_events(response.text)


async def _versions(http: httpx.AsyncClient, note_id: str) -> list[tuple[int, str, str | None]]:
    versions = (await http.get(f"/v1/notes/{note_id}/versions")).json()["versions"]
    return sorted((v["version"], v["author"], v["approval_id"]) for v in versions)


async def _audit(http: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/threads/{thread_id}/audit")
    assert response.status_code == 200, response.text
    records: list[dict[str, Any]] = response.json()["records"]
    return records


async def _thread_state(http: httpx.AsyncClient, thread_id: str) -> tuple[str, str, list[Any]]:
    thread = (await http.get(f"/v1/threads/{thread_id}")).json()
    return thread["status"], thread["last_reason"], thread["pending_consents"]


def _reason(event: Event) -> str:
    assert isinstance(event, FinalEvent), event
    return event.reason


def _only(events: list[Event], event_type: type[Event]) -> Any:
    matching = [e for e in events if isinstance(e, event_type)]
    assert len(matching) == 1, matching
    return matching[0]


def _durable(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type != "token"]


async def test_a_consent_asked_on_one_replica_is_approved_through_another_and_applied_once(
    postgres: PostgresCluster,
) -> None:
    async with start_replicas(postgres.new_database(), count=2) as (first, second):
        note = await _open_note(first.http)
        asked, consent = await _ask(first.http, note["note_id"])
        thread_id = consent.thread_id

        # The second replica sees the thread waiting, with the consent exactly as it was sent.
        status, _, pending = await _thread_state(second.http, thread_id)
        assert status == "awaiting_consent"
        assert [ConsentEvent.model_validate(c) for c in pending] == [consent]

        resumed = await chat(
            second.http,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )

        assert kinds(resumed) == APPLIED
        assert _only(resumed, RunStartedEvent).trigger == "resume"
        assert resumed[0].seq == asked[-1].seq + 1
        written = _only(resumed, NoteEvent)
        assert (written.version, written.content) == (2, consent.proposal["proposed_content"])
        assert _reason(resumed[-1]) == "completed"
        # Both replicas read the same outcome.
        for replica in (first, second):
            assert await _versions(replica.http, note["note_id"]) == [
                (1, "user", None),
                (2, "assistant", consent.approval_id),
            ], replica.name
            assert await _thread_state(replica.http, thread_id) == ("idle", "completed", [])
        audit = await _audit(first.http, thread_id)
        assert [r["data"]["decision"] for r in audit if r["action"] == "consent_decided"] == [
            "approve"
        ]
        assert [r["approval_id"] for r in audit if r["action"] == "effect_applied"] == [
            consent.approval_id
        ]
        assert [r["data"]["trigger"] for r in audit if r["action"] == "run_started"] == [
            "message",  # the question
            "message",  # the request for a summary
            "resume",
        ]


async def test_a_stream_joined_on_another_replica_follows_the_run_live_woken_by_notifications(
    postgres: PostgresCluster, stub: OpenAIStub
) -> None:
    assert FOLLOW_PROMPTLY_SECONDS < FOLLOW_RECHECK_SECONDS / 2
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with (
        start_replicas(postgres.new_database(), count=2, env=stub.server_env()) as replicas,
        replicas[0].http.stream("POST", "/v1/chat", json={"message": QUESTION}) as origin,
    ):
        _, following = replicas
        assert origin.status_code == 200
        origin_lines = origin.aiter_lines()
        seen = await _read_events(origin_lines, len(HELD_MID_ANSWER))
        await _within(stub.holding.wait())
        assert kinds(seen) == HELD_MID_ANSWER
        thread_id = seen[0].thread_id
        join_url = f"/v1/threads/{thread_id}/stream"

        async with (
            following.http.stream(
                "GET", join_url, headers={"Last-Event-ID": str(seen[-1].seq)}
            ) as joined,
            # A second follower, joined from the first event: receiving the replay proves its
            # generator is already watching for notifications before the run goes on.
            following.http.stream("GET", join_url, params={"last_event_id": seen[0].seq}) as early,
        ):
            assert (joined.status_code, early.status_code) == (200, 200)
            early_lines = early.aiter_lines()
            replayed = await _read_events(early_lines, len(seen) - 1)
            assert replayed == seen[1:]

            stub.release()
            async with asyncio.timeout(FOLLOW_PROMPTLY_SECONDS):
                followed = await _read_to_end(joined.aiter_lines())
                followed_early = await _read_to_end(early_lines)
        rest = await _within(_read_to_end(origin_lines))

    # The executing replica streamed tokens; followers get only the stored events, the same ones.
    assert "token" in kinds(rest, tokens=True)
    assert kinds(followed, tokens=True) == ["message", "final"]
    assert followed == _durable(rest)
    assert followed_early == followed
    assert _only(followed, MessageEvent).content == ANSWER
    assert _reason(followed[-1]) == "completed"
    assert {e.run_id for e in followed} == {seen[0].run_id}


async def _decide(
    replica: Replica, consent: ConsentEvent, decision: Decision, channel: Channel
) -> httpx.Response:
    if channel == "chat":
        resume = {"approval_id": consent.approval_id, "decision": decision}
        body = {"thread_id": consent.thread_id, "resume": resume}
        return await replica.http.post("/v1/chat", json=body)
    url = f"/v1/approvals/{consent.approval_id}/decision"
    return await replica.http.post(url, json={"decision": decision})


async def _race(
    replicas: list[Replica],
    consent: ConsentEvent,
    race: tuple[tuple[Decision, Channel], tuple[Decision, Channel]],
) -> list[tuple[Decision, Channel, httpx.Response]]:
    responses = await asyncio.gather(
        *(
            _decide(replica, consent, decision, channel)
            for replica, (decision, channel) in zip(replicas, race, strict=True)
        )
    )
    return [(d, c, r) for (d, c), r in zip(race, responses, strict=True)]


async def test_decisions_racing_on_two_replicas_have_one_winner_and_one_effect(
    postgres: PostgresCluster,
) -> None:
    async with start_replicas(postgres.new_database(), count=2) as replicas:
        notes = [await _open_note(replicas[i % 2].http) for i in range(len(RACES))]
        asks = await asyncio.gather(
            *(_ask(replicas[i % 2].http, note["note_id"]) for i, note in enumerate(notes))
        )

        # Every pair at once: one decision to each replica.
        consents = [consent for _, consent in asks]
        results = await _within(
            asyncio.gather(
                *(_race(replicas, c, race) for c, race in zip(consents, RACES, strict=True))
            )
        )

        for note, (asked, consent), raced in zip(notes, asks, results, strict=True):
            context = [(d, c, r.status_code, r.text[:300]) for d, c, r in raced]
            winners = [(d, c, r) for d, c, r in raced if r.status_code in (200, 202)]
            assert len(winners) == 1, context
            won, channel, response = winners[0]
            (loser,) = [r for _, _, r in raced if r is not response]
            assert loser.status_code == 409, context
            error = loser.json()["error"]
            assert error["code"] == "already_decided", context
            assert error["details"]["decided"]["decision"] == won, context

            # The winner's run: its chat stream, or (inbox) the thread followed from the other
            # replica until that run's final.
            if channel == "chat":
                assert response.status_code == 200, context
                resumed = parse_events(response.text)
            else:
                assert response.status_code == 202, context
                resumed = _durable(
                    await _join(replicas[1].http, consent.thread_id, after=asked[-1].seq)
                )
            assert kinds(resumed) == (APPLIED if won == "approve" else REJECTED), context
            assert _reason(resumed[-1]) == "completed"

            expected_versions: list[tuple[int, str, str | None]] = [(1, "user", None)]
            if won == "approve":
                expected_versions.append((2, "assistant", consent.approval_id))
            assert await _versions(replicas[0].http, note["note_id"]) == expected_versions
            approval = (await replicas[1].http.get(f"/v1/approvals/{consent.approval_id}")).json()
            assert approval["decided"]["decision"] == won
            audit = await _audit(replicas[0].http, consent.thread_id)
            decided = [r["data"]["decision"] for r in audit if r["action"] == "consent_decided"]
            assert decided == [won], context
            applied = [r for r in audit if r["action"] == "effect_applied"]
            assert len(applied) == (1 if won == "approve" else 0), context
            triggers = [r["data"]["trigger"] for r in audit if r["action"] == "run_started"]
            assert triggers == ["message", "message", "resume"], context


async def test_a_run_of_a_killed_replica_is_taken_over_by_a_live_one_within_two_leases(
    postgres: PostgresCluster, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold("An answer the killed replica never gets.")
    env = {**stub.server_env(), **SHORT_LEASE}
    async with start_replicas(postgres.new_database(), count=3, env=env) as replicas:
        doomed, survivor, _ = replicas
        async with doomed.http.stream("POST", "/v1/chat", json={"message": QUESTION}) as origin:
            assert origin.status_code == 200
            origin_lines = origin.aiter_lines()
            seen = await _read_events(origin_lines, len(HELD_MID_ANSWER))
            await _within(stub.holding.wait())
            stub.reply(ANSWER)  # the recovery's model call
            killed_at = datetime.now(UTC)
            await doomed.kill()
            # The stream breaks off without a final event.
            with pytest.raises(httpx.TransportError):
                await _within(next_event(origin_lines))
        assert kinds(seen) == HELD_MID_ANSWER
        thread_id, dead_run = seen[0].thread_id, seen[0].run_id
        assert len(stub.requests) == 2

        joined = _durable(await _join(survivor.http, thread_id, after=seen[-1].seq))

        assert kinds(joined) == DEAD_RUN_CLOSED + RECOVERED_IN_THE_ANSWER, joined
        assert _only(joined, ErrorEvent).code == "server_restarted"
        assert _reason(joined[1]) == "failed"
        assert {e.run_id for e in joined[:2]} == {dead_run}
        recovered = joined[2:]
        started = _only(recovered, RunStartedEvent)
        assert started.trigger == "recovery"
        assert started.run_id != dead_run
        assert started.ts - killed_at < timedelta(seconds=2 * LEASE_SECONDS)
        assert [e.node for e in recovered if e.type == "step"] == ["answer_question"]
        assert _only(recovered, MessageEvent).content == ANSWER
        assert _reason(recovered[-1]) == "completed"
        assert min(e.seq for e in joined) > seen[-1].seq
        # The classifier's step was checkpointed: the recovery made only the answer's call.
        assert (len(stub.requests), stub.unscripted) == (3, 0)

        transcript = (await survivor.http.get(f"/v1/threads/{thread_id}/messages")).json()
        assert [(m["role"], m["content"]) for m in transcript["messages"]] == [
            ("user", QUESTION),
            ("assistant", ANSWER),
        ]
        assert await _thread_state(survivor.http, thread_id) == ("idle", "completed", [])
        audit = await _audit(survivor.http, thread_id)
        # Two live replicas raced for the run: one took it over.
        assert [r["data"]["trigger"] for r in audit if r["action"] == "run_started"] == [
            "message",
            "recovery",
        ]


async def test_a_consent_asked_on_a_replica_killed_before_recording_it_is_asked_again_by_another(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """The replica that owns the run dies after its graph asked and before its run's closing
    transaction, which stores the interrupt with the consent that asks it: nothing of the ask is
    stored. The replica that takes the run over closes it (``server_restarted``) and its recovery
    runs the step again, which asks again; the client's keyed retry there replays both runs, and
    the decision applies the edit once."""
    points = KillPoints.in_folder(tmp_path)
    database = postgres.new_database()
    env = {**SHORT_LEASE, "CONSENTRY_GRAPHS": ASIDE_GRAPH, KILL_POINTS_DIR: str(points.folder)}
    key = {"Idempotency-Key": "ask-on-the-doomed-replica"}
    async with start_replicas(database, count=2, env=env) as (doomed, survivor):
        note = await _open_note(doomed.http)
        body = {
            "graph": "aside",
            "message": "Katakana has 46 basic characters too.",
            "note_id": note["note_id"],
        }
        points.stop_at(BESIDE_THE_CONSENT)
        async with doomed.http.stream("POST", "/v1/chat", json=body, headers=key) as origin:
            assert origin.status_code == 200
            run_id, thread_id = origin.headers["X-Run-Id"], origin.headers["X-Thread-Id"]
            await points.reached(BESIDE_THE_CONSENT)
            seen = await _read_events(origin.aiter_lines(), 4)  # run_started and three steps
            killed_at = datetime.now(UTC)
            await doomed.kill()
        assert not interrupt_stored(database, thread_id)
        points.go_on()

        joined = _durable(await _join(survivor.http, thread_id, after=0))

        dead, recovery = joined[:6], joined[6:]
        assert kinds(dead) == ["run_started", "step", "step", "step", "error", "final"]
        assert dead[:4] == seen
        assert {e.run_id for e in dead} == {run_id}
        assert _only(dead, ErrorEvent).code == "server_restarted"
        assert kinds(recovery) == ["run_started", "step", "step", "consent", "final"]
        assert _only(recovery, RunStartedEvent).trigger == "recovery"
        consent = _only(recovery, ConsentEvent)
        assert _reason(recovery[-1]) == "interrupted"
        assert recovery[-1].ts - killed_at < timedelta(seconds=2 * LEASE_SECONDS)
        assert_numbered(joined, first=1)
        status, reason, pending = await _thread_state(survivor.http, thread_id)
        assert (status, reason) == ("awaiting_consent", "interrupted")
        assert [c["approval_id"] for c in pending] == [consent.approval_id]

        again = await survivor.http.post("/v1/chat", json=body, headers=key)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == run_id
        assert parse_events(again.text) == joined
        threads = (await survivor.http.get("/v1/threads")).json()["threads"]
        assert [t["thread_id"] for t in threads] == [thread_id]

        resumed = await chat(
            survivor.http,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
        assert kinds(resumed)[-3:] == ["note", "message", "final"]
        versions = await _versions(survivor.http, note["note_id"])
        assert [v[2] for v in versions].count(consent.approval_id) == 1


async def test_the_approvals_feed_on_one_replica_is_pushed_changes_made_on_another(
    postgres: PostgresCluster,
) -> None:
    async with (
        start_replicas(postgres.new_database(), count=2) as (watched, other),
        open_feed(watched.http) as feed,
    ):
        assert (await feed.next()).event == "ready"
        note = await _open_note(other.http)

        _, consent = await _ask(other.http, note["note_id"])
        requested = await _within(feed.next(), FOLLOW_PROMPTLY_SECONDS)
        decided = await other.http.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
        )
        assert decided.status_code == 202
        approved = await _within(feed.next(), FOLLOW_PROMPTLY_SECONDS)

        assert change_of(requested) == ("requested", consent.approval_id, "pending")
        assert change_of(approved) == ("decided", consent.approval_id, "approved")
        assert approved.id > requested.id
