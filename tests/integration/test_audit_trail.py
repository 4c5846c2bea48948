"""The audit trail: one thread walked through every path, and the whole trail checked in order."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from consentry.schemas.events import ConsentEvent
from consentry.storage.runs import _lifecycle as runs_repo  # where record_run_end calls end_run
from tests.conftest import ManualClock
from tests.sse import parse_events

TTL = 600
ASK = "Add a summary of our discussion to my note"


async def _chat(client: httpx.AsyncClient, body: dict[str, Any]) -> list[Any]:
    response = await client.post("/v1/chat", json=body)
    assert response.status_code == 200, response.text
    return parse_events(response.text)


async def test_every_transition_of_a_thread_is_audited_in_order(
    open_live: Any, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_live(consent_ttl_seconds=TTL) as (client, services):
        project = (await client.get("/v1/projects")).json()["projects"][0]
        note = (
            await client.post(
                f"/v1/projects/{project['project_id']}/notes",
                json={"title": "RAG", "content": "Retrieval first."},
            )
        ).json()
        note_id = note["note_id"]
        thread_id = (await _chat(client, {"message": "What is RAG?", "note_id": note_id}))[
            0
        ].thread_id

        async def ask() -> ConsentEvent:
            events = await _chat(
                client, {"thread_id": thread_id, "message": ASK, "note_id": note_id}
            )
            consent = events[-2]
            assert isinstance(consent, ConsentEvent)
            return consent

        async def decide(consent: ConsentEvent, **decision: Any) -> None:
            resume = {"approval_id": consent.approval_id, **decision}
            await _chat(client, {"thread_id": thread_id, "resume": resume})

        approved = await ask()
        await decide(approved, decision="approve")
        # The note has that summary now: something new to summarize before the next one.
        await _chat(client, {"thread_id": thread_id, "message": "What is retrieval?"})
        edited = await ask()
        await decide(edited, decision="edit", edited={"content": "Mine."}, comment="short")
        rejected = await ask()
        await decide(rejected, decision="reject")
        expired = await ask()
        clock.advance(seconds=TTL)
        await services.expiry.sweep()
        await services.executor.wait_for_runs()
        failing = runs_repo.end_run
        calls = {"n": 0}

        async def end_run_failing_once(*args: Any, **kwargs: Any) -> None:
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("disk full")
            await failing(*args, **kwargs)

        monkeypatch.setattr(runs_repo, "end_run", end_run_failing_once)
        await _chat(client, {"thread_id": thread_id, "message": "What is RAG?"})

        records = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]

    trail = [(r["action"], r["actor"], r["approval_id"]) for r in records]
    me = "local/local"
    assert trail == [
        ("run_started", me, None),
        ("run_ended", "system", None),
        # approve
        ("run_started", me, None),
        ("consent_requested", "system", approved.approval_id),
        ("run_ended", "system", None),
        ("consent_decided", me, approved.approval_id),
        ("run_started", me, None),
        ("effect_applied", "system", approved.approval_id),
        ("run_ended", "system", None),
        # another question
        ("run_started", me, None),
        ("run_ended", "system", None),
        # edit
        ("run_started", me, None),
        ("consent_requested", "system", edited.approval_id),
        ("run_ended", "system", None),
        ("consent_decided", me, edited.approval_id),
        ("run_started", me, None),
        ("effect_applied", "system", edited.approval_id),
        ("run_ended", "system", None),
        # reject
        ("run_started", me, None),
        ("consent_requested", "system", rejected.approval_id),
        ("run_ended", "system", None),
        ("consent_decided", me, rejected.approval_id),
        ("run_started", me, None),
        ("run_ended", "system", None),
        # expire
        ("run_started", me, None),
        ("consent_requested", "system", expired.approval_id),
        ("run_ended", "system", None),
        ("consent_expired", "system", expired.approval_id),
        ("run_started", "system", None),
        ("run_ended", "system", None),
        # a run whose end could not be stored: recorded as failed by the fallback
        ("run_started", me, None),
        ("error", "system", None),
        ("run_ended", "system", None),
    ]
    by_action = {(r["action"], r["approval_id"]): r["data"] for r in records}
    assert by_action[("consent_requested", approved.approval_id)]["proposal_hash"].startswith(
        "sha256:"
    )
    assert by_action[("consent_decided", edited.approval_id)]["edited"] == {"content": "Mine."}
    assert by_action[("consent_decided", edited.approval_id)]["comment"] == "short"
    assert by_action[("effect_applied", approved.approval_id)]["version"] == 2
    assert by_action[("effect_applied", edited.approval_id)]["version"] == 3
    ended = [r["data"]["reason"] for r in records if r["action"] == "run_ended"]
    assert ended == [
        "completed",
        "interrupted",
        "completed",
        "completed",
        "interrupted",
        "completed",
        "interrupted",
        "completed",
        "interrupted",
        "expired",
        "failed",
    ]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
