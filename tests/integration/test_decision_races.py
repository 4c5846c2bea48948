"""Exactly once, whatever the clients do: many decisions on one consent, at once, over real HTTP
(a uvicorn server in the test's loop), through the chat stream and the approvals inbox."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from consentry.runtime.runs.execute import _executor as executor_module
from consentry.schemas.events import ConsentEvent
from tests.sse import ask_for_note_edit, chat
from tests.system.kill_points_graph import DECISION_RECORDED, KILL_POINTS_DIR

POINTS_GRAPH = "tests.system.kill_points_graph:graph_spec"

DECISIONS: list[dict[str, Any]] = [
    {"decision": "approve"},
    {"decision": "reject", "comment": "no"},
    {"decision": "edit", "edited": {"content": "Mine.\n"}},
]


async def _ask(client: httpx.AsyncClient) -> tuple[str, ConsentEvent]:
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    return note["note_id"], consent


async def _decide(
    client: httpx.AsyncClient, consent: ConsentEvent, i: int
) -> tuple[dict[str, Any], httpx.Response]:
    decision = DECISIONS[i % len(DECISIONS)]
    if i % 2 == 0:
        body = {"thread_id": consent.thread_id, "resume": {"approval_id": consent.approval_id}}
        body["resume"].update(decision)  # type: ignore[attr-defined]
        return decision, await client.post("/v1/chat", json=body)
    url = f"/v1/approvals/{consent.approval_id}/decision"
    return decision, await client.post(url, json=decision)


@pytest.mark.parametrize("racers", [2, 10, 50])
async def test_racing_decisions_have_one_winner_and_one_effect(open_live: Any, racers: int) -> None:
    async with open_live() as (client, services):
        note_id, consent = await _ask(client)

        results = await asyncio.gather(*(_decide(client, consent, i) for i in range(racers)))
        await services.executor.wait_for_runs()

        winners = [(d, r) for d, r in results if r.status_code in (200, 202)]
        losers = [r for _, r in results if r.status_code not in (200, 202)]
        assert len(winners) == 1, [r.text for _, r in results]
        won, _ = winners[0]
        assert len(losers) == racers - 1
        for loser in losers:
            assert loser.status_code == 409, loser.text
            error = loser.json()["error"]
            assert error["code"] == "already_decided"
            assert error["details"]["decided"]["decision"] == won["decision"]

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["decided"]["decision"] == won["decision"]
        versions = (await client.get(f"/v1/notes/{note_id}/versions")).json()["versions"]
        assert len(versions) == (1 if won["decision"] == "reject" else 2)
        audit = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
        decided = [r for r in audit if r["action"] == "consent_decided"]
        assert [r["data"]["decision"] for r in decided] == [won["decision"]]
        applied = [r for r in audit if r["action"] == "effect_applied"]
        assert len(applied) == (0 if won["decision"] == "reject" else 1)


async def test_a_decision_sent_again_after_it_was_applied_never_resumes_again(
    open_live: Any,
) -> None:
    async with open_live() as (client, services):
        note_id, consent = await _ask(client)
        first = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
        )
        assert first.status_code == 202
        await services.executor.wait_for_runs()
        runs_before = [
            r
            for r in (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
            if r["action"] == "run_started"
        ]

        again = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
        )

        assert again.status_code == 409
        assert again.json()["error"]["code"] == "already_decided"
        audit = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
        assert [r for r in audit if r["action"] == "run_started"] == runs_before
        versions = (await client.get(f"/v1/notes/{note_id}/versions")).json()["versions"]
        assert len(versions) == 2


@pytest.mark.parametrize("winner", DECISIONS, ids=lambda d: d["decision"])
async def test_a_decision_that_loses_while_the_winners_run_goes_on_is_told_who_won(
    open_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, winner: dict[str, Any]
) -> None:
    """The winner's run stands in its consent node (a kill point holds it) while the losers
    arrive: each is told the winning decision, whichever it was (an edit too), not merely that
    a run is going."""
    points = tmp_path / "kill-points"
    points.mkdir()
    monkeypatch.setenv(KILL_POINTS_DIR, str(points))
    monkeypatch.setattr(executor_module, "SHUTDOWN_GRACE_SECONDS", 0.1)  # the held run
    async with open_client(graphs={"points": POINTS_GRAPH}) as client:
        project = (await client.get("/v1/projects")).json()["projects"][0]
        note = (
            await client.post(
                f"/v1/projects/{project['project_id']}/notes",
                json={"title": "Kana", "content": "Hiragana."},
            )
        ).json()
        asked = await chat(
            client, {"graph": "points", "message": "Katakana.", "note_id": note["note_id"]}
        )
        consent = asked[-2]
        assert isinstance(consent, ConsentEvent)
        (points / "stop-at").write_text(DECISION_RECORDED)

        won = await client.post(f"/v1/approvals/{consent.approval_id}/decision", json=winner)
        assert won.status_code == 202, won.text
        async with asyncio.timeout(10):  # the winner's run goes on (another thread writes it)
            while not (points / f"reached-{DECISION_RECORDED}").exists():  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        losers = [
            await client.post(
                "/v1/chat",
                json={
                    "thread_id": consent.thread_id,
                    "resume": {"approval_id": consent.approval_id, "decision": "reject"},
                },
            ),
            await client.post(
                f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
            ),
        ]

        for loser in losers:
            assert loser.status_code == 409, loser.text
            error = loser.json()["error"]
            assert error["code"] == "already_decided"
            assert error["details"]["decided"]["decision"] == winner["decision"]
