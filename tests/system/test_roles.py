"""``consentry serve --role api`` and ``--role worker`` as real processes on one PostgreSQL: the
client talks to the API process only, the worker process executes every run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx

from tests.postgres import PostgresCluster
from tests.sse import TUTOR_ASKED, ask_for_note_edit, kinds, parse_events
from tests.system.server import serve_process


@asynccontextmanager
async def _process(database_url: str, role: str) -> AsyncIterator[str]:
    manager = serve_process(database_url, args=["--role", role])
    base_url, _ = await asyncio.to_thread(manager.__enter__)
    try:
        yield base_url
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)


async def test_one_api_and_one_worker_process_complete_a_consent_round_trip(
    postgres: PostgresCluster,
) -> None:
    database_url = postgres.new_database()
    async with AsyncExitStack() as stack:
        api, _ = await asyncio.gather(
            stack.enter_async_context(_process(database_url, "api")),
            stack.enter_async_context(_process(database_url, "worker")),
        )
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=api, timeout=30))
        note, asked = await ask_for_note_edit(http)
        consent: Any = asked[-2]
        decision = await http.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "approve"}
        )
        joined = parse_events(
            (
                await http.get(
                    f"/v1/threads/{consent.thread_id}/stream",
                    params={"last_event_id": asked[-1].seq},
                )
            ).text
        )
        versions = (await http.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]

    assert kinds(asked) == TUTOR_ASKED
    assert consent.kind == "note_edit"
    assert decision.status_code == 202, decision.text
    assert kinds(joined) == ["run_started", "step", "step", "note", "message", "final"]
    assert joined[-1].reason == "completed"  # type: ignore[union-attr]
    assert [(v["version"], v["author"]) for v in versions] == [(1, "user"), (2, "assistant")]
