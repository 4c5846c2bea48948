"""A run's webhook post outlives a SIGKILL of the server: the run's closing transaction queued
the post in the outbox, the server was killed after that commit and before the receiver
acknowledged the post (it holds it unanswered), and the next server, once the killed attempt's
lease has expired, posts it again under the same delivery id: acknowledged exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import httpx

from tests.system.server import serve
from tests.webhook_receiver import serve_receiver

WAIT_SECONDS = 30.0
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}
ENV = {
    "CONSENTRY_GRAPHS": "city=consentry_graphs.examples.ask_city:graph",
    # An attempt's lease: this, and 5 s (the next server waits that long for it).
    "CONSENTRY_WEBHOOK_TIMEOUT_SECONDS": "2",
}


def _deliveries(database: Path) -> list[tuple[str, str, int, bool]]:
    """Each delivery's id, status, attempts, and whether an attempt holds it (its lease)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT id, status, attempts, lease_owner IS NOT NULL FROM webhook_deliveries"
        ).fetchall()
    return [(str(i), str(status), int(attempts), bool(held)) for i, status, attempts, held in rows]


async def test_a_post_cut_by_a_kill_after_the_runs_end_is_delivered_once_by_the_next_server(
    tmp_path: Path,
) -> None:
    database = tmp_path / "consentry.db"
    async with serve_receiver() as receiver:
        receiver.held = 1
        with serve(database, env=ENV) as url:
            async with httpx.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as http:
                started = await http.post(
                    "/runs/wait",
                    json={"assistant_id": "city", "input": PLAN, "webhook": receiver.url},
                )
            (held,) = await receiver.wait_for(1)  # the run's end is committed, the post cut
            in_flight = await asyncio.to_thread(_deliveries, database)
        # SIGKILLed mid-post: the receiver never acknowledged it.
        cut = _deliveries(database)
        with serve(database, env=ENV):
            _, again = await receiver.wait_for(2)

            async def delivered() -> bool:
                rows = await asyncio.to_thread(_deliveries, database)
                return rows[0][1] == "delivered"

            async with asyncio.timeout(WAIT_SECONDS):
                while not await delivered():  # noqa: ASYNC110 - another process's table
                    await asyncio.sleep(0.05)
            rows = _deliveries(database)

    assert started.status_code == 200, started.text
    ((delivery_id, status, attempts, leased),) = cut
    assert in_flight == cut  # the attempt was under way when the server was killed
    assert (status, attempts, leased) == ("pending", 1, True)  # taken, never recorded
    assert rows == [(delivery_id, "delivered", 2, False)]
    assert [post.status for post in receiver.posts] == [0, 200]  # acknowledged once
    assert held.headers["x-consentry-delivery"] == again.headers["x-consentry-delivery"]
    assert held.headers["x-consentry-delivery"] == delivery_id
    assert {k: v for k, v in held.json.items() if k != "webhook_sent_at"} == {
        k: v for k, v in again.json.items() if k != "webhook_sent_at"
    }
    assert (again.json["status"], again.json["reason"]) == ("interrupted", "interrupted")
