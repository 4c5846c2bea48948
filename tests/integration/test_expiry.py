"""Consents expire: a late decision is refused, and the sweeper takes the graph down its expired
path exactly once, also for consents that expired while no server ran. Time is the injected
clock, never a sleep."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent, StepEvent
from tests.conftest import ManualClock
from tests.sse import ASK_FOR_SUMMARY, after_a_question, parse_events

TTL = 60


async def _ask(client: httpx.AsyncClient) -> ConsentEvent:
    events = await after_a_question(client, {"message": ASK_FOR_SUMMARY})
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def _audit_actions(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str, str]]:
    records = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    return [(r["action"], r["actor"]) for r in records]


async def test_a_consent_expires_at_its_deadline_not_before(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, services):
        consent = await _ask(client)
        assert abs((consent.expires_at - consent.ts).total_seconds() - TTL) < 0.001
        # The sweeps below count what they expire: the asking run's task, which ends after its
        # `final` is sent, has ended first (under CI's load a sweep at the deadline found
        # nothing to expire).
        await services.executor.wait_for_runs()

        clock.advance(seconds=TTL - 1)
        assert await services.expiry.sweep() == 0
        clock.advance(seconds=1)
        assert await services.expiry.sweep() == 1
        await services.executor.wait_for_runs()

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "expired"
        assert approval["decided"]["decided_by"] == "system"
        assert approval["decided"]["decision"] == "expire"
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
            "idle",
            "expired",
            [],
        )
        transcript = (await client.get(f"/v1/threads/{consent.thread_id}/messages")).json()
        assert "expired" in transcript["messages"][-1]["content"]
        assert await _audit_actions(client, consent.thread_id) == [
            ("run_started", "local/local"),  # the question
            ("run_ended", "system"),
            ("run_started", "local/local"),
            ("consent_requested", "system"),
            ("run_ended", "system"),
            ("consent_expired", "system"),
            ("run_started", "system"),
            ("run_ended", "system"),
        ]
        assert await services.expiry.sweep() == 0  # exactly once
        history = parse_events((await client.get(f"/v1/threads/{consent.thread_id}/stream")).text)
        expired_run = [e for e in history if e.seq > consent.seq and e.run_id != consent.run_id]
        assert next((e.node, e.label) for e in expired_run if isinstance(e, StepEvent)) == (
            "request_note_create_consent",
            "Nobody decided in time",
        )


async def test_a_decision_after_the_deadline_gets_410_and_nothing_is_applied(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, _):
        consent = await _ask(client)
        clock.advance(seconds=TTL)

        late = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
        )

        assert late.status_code == 410
        assert late.json()["error"]["code"] == "consent_expired"
        notes = (await client.get(f"/v1/projects/{consent.proposal['project_id']}/notes")).json()
        assert notes["notes"] == []
        actions = [a for a, _ in await _audit_actions(client, consent.thread_id)]
        assert "consent_decided" not in actions


async def test_consents_that_expired_while_no_server_ran_are_swept_at_start(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, _):
        consent = await _ask(client)
    clock.advance(hours=5)
    async with open_live(consent_ttl_seconds=TTL) as (client, services):
        await services.expiry.sweep()  # the start-up sweep may have done it already
        await services.executor.wait_for_runs()

        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("idle", "expired")
        actions = [a for a, _ in await _audit_actions(client, consent.thread_id)]
        assert actions.count("consent_expired") == 1


async def test_a_decision_racing_the_sweeper_at_the_deadline_has_one_outcome(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, services):
        outcomes = []
        for _ in range(5):
            consent = await _ask(client)
            # A few clock readings from the deadline: each request reads the clock a few times,
            # so either side may see the consent live or overdue.
            clock.now = consent.expires_at - timedelta(microseconds=3)

            decision, _ = await asyncio.gather(
                client.post(
                    f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
                ),
                services.expiry.sweep(),
            )
            await services.expiry.sweep()  # a late decision leaves the expiry to the sweeper
            await services.executor.wait_for_runs()

            approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
            assert approval["status"] in ("approved", "expired")
            assert (decision.status_code == 202) == (approval["status"] == "approved")
            # The background sweeper (woken by the new consent) may be the one that expired it.
            actions = [a for a, _ in await _audit_actions(client, consent.thread_id)]
            assert actions.count("consent_decided") + actions.count("consent_expired") == 1
            assert actions.count("effect_applied") == (approval["status"] == "approved")
            outcomes.append(approval["status"])
        assert set(outcomes) <= {"approved", "expired"}
