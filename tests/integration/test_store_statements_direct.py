"""The Store's common calls run past SQLAlchemy's execution, on the driver (``direct``,
``storage/db/direct/``): a get, a put, a delete, a search by prefix with a limit and up to
``MOST_DIRECT_CONDITIONS`` filter conditions, the refresh of a time to live, a namespace listing.
Before, each built its statement anew and ran it through SQLAlchemy, which cost several times
the statement (``docs/performance.md``, "memory_flow"). A search with more conditions is built
per call and still runs through SQLAlchemy, which shows that this test sees SQLAlchemy's
statements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio
from langgraph.store.base import BaseStore

from consentry.runtime.store import ItemStore
from consentry.storage.db.database import Database
from consentry.storage.store import MOST_DIRECT_CONDITIONS
from tests.conftest import ManualClock
from tests.postgres import PostgresCluster
from tests.statements_sent import postgres_round_trips, sent_by_sqlalchemy

PERSON = ("memory_flow", "decisions", "alice")


@asynccontextmanager
async def _opened(url: str) -> AsyncIterator[Database]:
    db = Database(url)
    await db.open()
    try:
        await db.migrate()
        yield db
    finally:
        await db.close()


@pytest_asyncio.fixture
async def database(db_url: str) -> AsyncIterator[Database]:
    async with _opened(db_url) as db:
        yield db


def _keys(found: list[Any]) -> list[str]:
    return [item.key for item in found]


async def test_the_stores_common_calls_run_past_sqlalchemy(
    database: Database, clock: ManualClock
) -> None:
    store: BaseStore = ItemStore(db=database, clock=clock, index=None).for_tenant("acme")
    with sent_by_sqlalchemy(database) as through_sqlalchemy:
        await store.aput(PERSON, "tone", {"text": "brief", "n": 1, "kept": True, "w": 0.5})
        clock.advance(seconds=1)
        await store.aput(PERSON, "pace", {"text": "slow", "n": 2}, ttl=10)
        await store.aput(("memory_flow", "other"), "gone", {"text": "x"})
        await store.adelete(("memory_flow", "other"), "gone")

        recent = await store.asearch(PERSON, limit=5)  # refreshes pace's time to live
        paged = await store.asearch(("memory_flow",), limit=1, offset=1)
        everyone = await store.asearch((), limit=5, refresh_ttl=False)
        filtered = await store.asearch(
            PERSON, filter={"kept": True, "n": 1, "w": 0.5}, limit=5, refresh_ttl=False
        )
        item = await store.aget(PERSON, "pace")
        missing = await store.aget(("memory_flow", "other"), "gone")
        spaces = await store.alist_namespaces(prefix=("memory_flow",))
        assert through_sqlalchemy == []

        conditions = {f"k{n}": n for n in range(MOST_DIRECT_CONDITIONS + 1)}
        assert await store.asearch(PERSON, filter=conditions, limit=5) == []
        # Built for this call: SQLAlchemy runs it on SQLite (the hook sees it); on PostgreSQL
        # every statement runs on psycopg, this one compiled through SQLAlchemy's cache.
        assert through_sqlalchemy == ([] if database.is_postgres else ["SELECT"])

    assert (_keys(recent), _keys(paged), _keys(everyone)) == (
        ["pace", "tone"],
        ["tone"],
        ["pace", "tone"],
    )
    assert _keys(filtered) == ["tone"]
    assert item is not None
    assert item.value == {"text": "slow", "n": 2}
    assert missing is None
    assert spaces == [PERSON]


async def test_on_postgres_a_put_is_one_round_trip_and_a_read_one_statement(
    postgres: PostgresCluster, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The put goes with its transaction's BEGIN and COMMIT (it was two round trips); a read
    runs without a transaction (``Database.read``)."""
    async with _opened(postgres.new_database(migrated=True)) as db:
        store = ItemStore(db=db, clock=clock, index=None).for_tenant("acme")
        await store.aput(PERSON, "tone", {"text": "brief"})  # the pool's connection, opened
        round_trips = postgres_round_trips(monkeypatch)
        await store.aput(PERSON, "tone", {"text": "briefer"})
        found = await store.asearch(PERSON, limit=5)
        item = await store.aget(PERSON, "tone")
    assert round_trips == [["BEGIN", "INSERT", "COMMIT"], ["SELECT"], ["SELECT"]]
    assert [hit.value for hit in found] == [{"text": "briefer"}]
    assert item is not None
