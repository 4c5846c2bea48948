"""An approved effect on Consentry's own tables (the tutor's note edit) commits only while its
run holds the thread's lease (issue 38). A replica that stalled past its lease and wakes in the
middle of the effect commits nothing of it and stops; the replica that took the run over applies
it, once. A chaos freeze trial found the stale replica's effect committed after the takeover
while the new owner applied it too: the second attempt met the note's version moved on and its
run was recorded failed.

PostgreSQL only: on SQLite one process serves the file, and nobody else can take a lease.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from consentry.settings import Settings
from consentry.storage import note_effects
from consentry.storage.tables import effects, threads
from tests.conftest import ManualClock
from tests.postgres import PostgresCluster
from tests.sse import ask_for_note_edit, kinds, parse_events

LEASE_SECONDS = Settings().lease_seconds


@pytest.fixture
def db_url(postgres: PostgresCluster) -> str:
    return postgres.new_database(migrated=True)


async def _ledger(client: httpx.AsyncClient, approval_id: str) -> int:
    db = client.services.db  # type: ignore[attr-defined]
    async with db.read() as conn:
        query = sa.select(sa.func.count()).where(effects.c.approval_id == approval_id)
        return int(await conn.scalar(query) or 0)


async def test_an_effect_whose_lease_moved_on_before_its_commit_stores_nothing_the_taker_does(
    client: httpx.AsyncClient, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    services: Any = client.services  # type: ignore[attr-defined]
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    apply_note_edit = note_effects.apply_note_edit

    async def taken_over_before_the_commit(conn: Any, owner: Any, **effect: Any) -> Any:
        applied = await apply_note_edit(conn, owner, **effect)
        # Another replica takes the thread over while this one is stalled, before its commit.
        async with services.db.write() as other:
            await other.execute(
                threads.update()
                .where(threads.c.id == effect["thread_id"])
                .values(fencing_token=threads.c.fencing_token + 1, lease_owner="another-replica")
            )
        return applied

    monkeypatch.setattr(note_effects, "apply_note_edit", taken_over_before_the_commit)
    resume = {"approval_id": consent.approval_id, "decision": "approve"}
    response = await client.post(
        "/v1/chat", json={"thread_id": consent.thread_id, "resume": resume}
    )
    await services.executor.wait_for_runs()
    monkeypatch.setattr(note_effects, "apply_note_edit", apply_note_edit)

    assert response.status_code == 200, response.text
    assert "final" not in kinds(parse_events(response.text))  # it stopped, storing nothing more
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json() == note
    assert await _ledger(client, consent.approval_id) == 0

    clock.advance(seconds=LEASE_SECONDS)
    assert await services.runs.take_over_dead_runs(lease_expired_by=clock()) == 1
    await services.executor.wait_for_runs()

    edited = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert (edited["version"], edited["content"]) == (2, consent.proposal["proposed_content"])
    assert await _ledger(client, consent.approval_id) == 1
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
