"""Three replicas booting at once against an empty PostgreSQL database all come up healthy: the
migrations (the checkpointer's tables among them) run once, under an advisory lock, without a
deadlock, and the one-time copy of LangGraph's old checkpoint tables finds none to copy."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

import httpx
import psycopg

from consentry.storage.db.database import head_revision
from tests.postgres import PostgresCluster
from tests.system.server import serve_process


def _boot(stack: ExitStack, database_url: str) -> str:
    base_url, _ = stack.enter_context(serve_process(database_url))
    return base_url


async def test_three_replicas_booting_at_once_on_an_empty_database_all_come_up(
    postgres: PostgresCluster,
) -> None:
    database_url = postgres.new_database()
    with ExitStack() as stack:
        replicas = await asyncio.gather(
            *(asyncio.to_thread(_boot, stack, database_url) for _ in range(3))
        )
        async with httpx.AsyncClient(timeout=10) as http:
            health = [(await http.get(f"{url}/healthz")).json() for url in replicas]
            # Each answers for the same data: a project made through one is seen by the others.
            made = (await http.post(f"{replicas[0]}/v1/projects", json={"name": "Shared"})).json()
            seen = [
                [p["project_id"] for p in (await http.get(f"{url}/v1/projects")).json()["projects"]]
                for url in replicas
            ]

    assert health == [{"status": "ok", "model": "offline"}] * 3
    assert all(made["project_id"] in ids for ids in seen)
    with psycopg.connect(database_url) as conn:
        version = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        langgraphs = conn.execute("SELECT to_regclass('checkpoint_migrations')").fetchone()
    assert version == [(head_revision(),)]  # migrated once, to one head
    # The checkpointer's tables are among the migrations': LangGraph's saver made none.
    assert langgraphs == (None,)
