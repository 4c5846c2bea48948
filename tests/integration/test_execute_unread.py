"""``execute_unread``: statements whose result nobody reads (audit records, a run's start and
end, transcript rows, tenant usage).

On SQLite they wait for the transaction's next hop to the connection's thread (the next
``execute``, ``scalar``, ``exec_driver_sql``, ``run_sync`` or the commit), which runs them first,
in the order given; a failure surfaces there and the whole transaction is rolled back, and a
transaction that ends with an exception drops the ones not run yet. On PostgreSQL they simply
run at once. Either way the transaction commits all or nothing.

On both databases (a SQLite file and a fresh PostgreSQL database) unless the name says which."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from consentry.principal import Principal
from consentry.schemas.events import TokenUsage
from consentry.storage.audit import list_audit, record_audit
from consentry.storage.db.database import Database, DbConnection, execute_unread
from consentry.storage.db.sqlite_thread import SqliteThread
from consentry.storage.runs import record_run_end, run_status, start_run
from consentry.storage.threads import token_usage
from consentry.storage.transcript import TranscriptEntry, add_to_transcript, read_transcript
from tests.integration.stored_threads import add_thread
from tests.postgres import PostgresCluster

OWNER = Principal("acme", "ada")
THREAD_ID = "thread-1"
RUN_ID = "run-1"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

INSERT_ITEM = text("INSERT INTO items (name, n) VALUES (:name, :n)")
TIMES_TEN = text("UPDATE items SET n = n * 10 WHERE name = :name")
PLUS_ONE = text("UPDATE items SET n = n + 1 WHERE name = :name")
COUNT_ITEMS = "SELECT count(*) FROM items"


@asynccontextmanager
async def _opened(url: str) -> AsyncIterator[Database]:
    """A migrated database with a scratch table: ``items``, unique names, ``n`` never null."""
    db = Database(url)
    await db.open()
    try:
        await db.migrate()
        async with db.write() as conn:
            await conn.exec_driver_sql(
                "CREATE TABLE items (name VARCHAR(40) PRIMARY KEY, n INTEGER NOT NULL)"
            )
        yield db
    finally:
        await db.close()


@pytest_asyncio.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    async with _opened(db_url) as database:
        yield database


@pytest_asyncio.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    async with _opened(f"sqlite:///{tmp_path / 'unread.db'}") as database:
        yield database


@pytest_asyncio.fixture
async def postgres_db(postgres: PostgresCluster) -> AsyncIterator[Database]:
    async with _opened(postgres.new_database()) as database:
        yield database


async def _items(db: Database) -> list[tuple[str, int]]:
    async with db.read() as conn:
        rows = await conn.execute(text("SELECT name, n FROM items ORDER BY name"))
        return [(row.name, row.n) for row in rows]


async def _write_next_item_and_read_it_back(db: Database) -> list[tuple[str, int]]:
    """The writer's next transaction: one unread insert, then what it sees of the table."""
    async with db.write() as conn:
        await execute_unread(conn, INSERT_ITEM, {"name": "next", "n": 0})
        rows = await conn.execute(text("SELECT name, n FROM items ORDER BY name"))
        return [(row.name, row.n) for row in rows]


def _count_in_run_sync(connection: Connection) -> Any:
    return connection.execute(text(COUNT_ITEMS)).scalar()


async def _count_by_execute(conn: DbConnection) -> Any:
    return (await conn.execute(text(COUNT_ITEMS))).scalar()


async def _count_by_scalar(conn: DbConnection) -> Any:
    return await conn.scalar(text(COUNT_ITEMS))


async def _count_by_exec_driver_sql(conn: DbConnection) -> Any:
    return (await conn.exec_driver_sql(COUNT_ITEMS)).scalar()


async def _count_by_run_sync(conn: DbConnection) -> Any:
    return await conn.run_sync(_count_in_run_sync)


READS: dict[str, Callable[[DbConnection], Awaitable[Any]]] = {
    "execute": _count_by_execute,
    "scalar": _count_by_scalar,
    "exec_driver_sql": _count_by_exec_driver_sql,
}
"""Every way a storage module reaches the connection on both databases."""
SQLITE_READS = {**READS, "run_sync": _count_by_run_sync}
"""And on SQLite (PostgreSQL's connections have no ``run_sync``); each one is a hop there."""


# --- Order and visibility -------------------------------------------------------------------


@pytest.mark.parametrize("read", READS)
async def test_the_next_statement_of_the_transaction_sees_what_was_executed_unread(
    db: Database, read: str
) -> None:
    async with db.write() as conn:
        await execute_unread(conn, INSERT_ITEM, {"name": "a", "n": 1})
        await execute_unread(conn, INSERT_ITEM, {"name": "b", "n": 2})
        seen = await READS[read](conn)

    assert seen == 2
    assert await _items(db) == [("a", 1), ("b", 2)]


async def test_unread_statements_run_in_the_order_they_were_given(db: Database) -> None:
    async with db.write() as conn:
        await execute_unread(conn, INSERT_ITEM, {"name": "a", "n": 1})
        await execute_unread(conn, TIMES_TEN, {"name": "a"})
        await execute_unread(conn, PLUS_ONE, {"name": "a"})
        await execute_unread(conn, INSERT_ITEM, {"name": "b", "n": 5})
        await execute_unread(conn, PLUS_ONE, {"name": "b"})
        await execute_unread(conn, TIMES_TEN, {"name": "b"})

    # a: (1 * 10) + 1, b: (5 + 1) * 10; run in any other order, neither adds up
    assert await _items(db) == [("a", 11), ("b", 60)]


async def test_audit_records_are_listed_in_the_order_they_were_recorded(db: Database) -> None:
    recorded = [
        ("run_started", {"n": 0}),
        ("consent_requested", {"n": 1}),
        ("run_ended", {"n": 2}),
        ("consent_decided", {"n": 3}),
        ("run_started", {"n": 4}),
    ]
    async with db.write() as conn:
        for action, data in recorded:
            await record_audit(
                conn, OWNER, action=action, thread_id=THREAD_ID, actor="system", now=NOW, data=data
            )
        inside = [(r.action, r.data) for r in await list_audit(conn, OWNER, THREAD_ID)]

    async with db.read() as conn:
        after = [(r.action, r.data) for r in await list_audit(conn, OWNER, THREAD_ID)]
    assert inside == recorded
    assert after == recorded


async def test_unread_statements_after_the_last_read_are_committed_by_the_commit(
    db: Database,
) -> None:
    async with db.write() as conn:
        assert await _count_by_scalar(conn) == 0
        await execute_unread(conn, INSERT_ITEM, {"name": "after the read", "n": 1})
        await execute_unread(conn, PLUS_ONE, {"name": "after the read"})
    async with db.write() as conn:  # nothing but unread statements: the commit carries them all
        await execute_unread(conn, INSERT_ITEM, {"name": "alone", "n": 7})

    assert await _items(db) == [("after the read", 2), ("alone", 7)]


async def test_a_whole_run_recorded_in_one_transaction_is_stored_in_order(db: Database) -> None:
    """Every storage function that uses ``execute_unread``, as a run's end stores them."""
    async with db.write() as conn:
        await add_thread(conn, OWNER, THREAD_ID, now=NOW, title="RAG")
        await start_run(
            conn, run_id=RUN_ID, thread_id=THREAD_ID, trigger="message", inputs=[], now=NOW
        )
        await record_audit(
            conn,
            OWNER,
            action="run_started",
            thread_id=THREAD_ID,
            run_id=RUN_ID,
            actor=OWNER.display,
            now=NOW,
        )
        await add_to_transcript(
            conn,
            THREAD_ID,
            [
                TranscriptEntry("m1", "user", "What is RAG?"),
                TranscriptEntry("m2", "assistant", "Retrieval first."),
            ],
            now=NOW,
        )
        await record_run_end(
            conn,
            OWNER,
            thread_id=THREAD_ID,
            run_id=RUN_ID,
            reason="failed",
            error_code="model_error",
            now=NOW,
            usage=TokenUsage(input_tokens=3, output_tokens=4),
        )

    async with db.read() as conn:
        trail = [(r.action, r.run_id, r.data) for r in await list_audit(conn, OWNER, THREAD_ID)]
        status = await run_status(conn, RUN_ID)  # "running" if the end ran before the start
        transcript = list(await read_transcript(conn, THREAD_ID))
        usage = await token_usage(conn, THREAD_ID, OWNER.tenant)
    assert trail == [
        ("run_started", RUN_ID, {}),
        ("error", RUN_ID, {"code": "model_error"}),
        ("run_ended", RUN_ID, {"reason": "failed", "input_tokens": 3, "output_tokens": 4}),
    ]
    assert status == "ended"
    assert transcript == [
        TranscriptEntry("m1", "user", "What is RAG?"),
        TranscriptEntry("m2", "assistant", "Retrieval first."),
    ]
    assert usage == (0, 7)  # the thread's own total is added when its lease is released


# --- Failures: all or nothing ---------------------------------------------------------------


async def _write(db: Database, body: Callable[[DbConnection], Awaitable[None]]) -> None:
    """One write transaction running ``body``, committed when it returns."""
    async with db.write() as conn:
        await body(conn)


@pytest.mark.parametrize("next_hop", SQLITE_READS)
async def test_on_sqlite_a_failing_unread_statement_raises_at_the_next_hop_and_nothing_is_stored(
    sqlite_db: Database, next_hop: str
) -> None:
    progress: list[str] = []

    async def insert_a_duplicate_then_read(conn: DbConnection) -> None:
        await conn.execute(INSERT_ITEM, {"name": "executed", "n": 1})
        await execute_unread(conn, INSERT_ITEM, {"name": "unread", "n": 2})
        await execute_unread(conn, INSERT_ITEM, {"name": "executed", "n": 3})  # a duplicate
        await execute_unread(conn, INSERT_ITEM, {"name": "after the duplicate", "n": 4})
        progress.append("deferred")
        await SQLITE_READS[next_hop](conn)
        progress.append(next_hop)

    with pytest.raises(IntegrityError, match=r"UNIQUE constraint failed: items\.name"):
        await _write(sqlite_db, insert_a_duplicate_then_read)

    assert progress == ["deferred"]
    assert await _items(sqlite_db) == []
    assert await _write_next_item_and_read_it_back(sqlite_db) == [("next", 0)]
    assert await _items(sqlite_db) == [("next", 0)]


async def test_on_sqlite_a_failing_unread_statement_left_for_the_commit_fails_the_commit(
    sqlite_db: Database,
) -> None:
    progress: list[str] = []

    async def insert_a_null_last(conn: DbConnection) -> None:
        await conn.execute(INSERT_ITEM, {"name": "executed", "n": 1})
        await execute_unread(conn, INSERT_ITEM, {"name": "unread", "n": 2})
        await execute_unread(conn, INSERT_ITEM, {"name": "no number", "n": None})
        progress.append("deferred")

    with pytest.raises(IntegrityError, match=r"NOT NULL constraint failed: items\.n"):
        await _write(sqlite_db, insert_a_null_last)

    assert progress == ["deferred"]  # the body ran to its end: the commit raised
    assert await _items(sqlite_db) == []
    assert await _write_next_item_and_read_it_back(sqlite_db) == [("next", 0)]


async def test_on_postgresql_a_failing_unread_statement_raises_at_the_commit_and_nothing_is_stored(
    postgres_db: Database,
) -> None:
    """Every statement whose result is unread goes with the transaction's next round trip (here
    its commit), marked direct or not (``postgres_connection``)."""
    progress: list[str] = []

    async def insert_a_duplicate(conn: DbConnection) -> None:
        await conn.execute(INSERT_ITEM, {"name": "executed", "n": 1})
        await execute_unread(conn, INSERT_ITEM, {"name": "unread", "n": 2})
        progress.append("unread")
        await execute_unread(conn, INSERT_ITEM, {"name": "executed", "n": 3})  # a duplicate
        progress.append("duplicate")

    with pytest.raises(IntegrityError, match=r"duplicate key value violates unique constraint"):
        await _write(postgres_db, insert_a_duplicate)

    assert progress == ["unread", "duplicate"]  # the body ran to its end: the commit raised
    assert await _items(postgres_db) == []
    assert await _write_next_item_and_read_it_back(postgres_db) == [("next", 0)]


async def test_a_run_started_for_a_missing_thread_leaves_no_audit_record_behind(
    db: Database,
) -> None:
    async def start_a_run_of_no_thread(conn: DbConnection) -> None:
        await record_audit(
            conn,
            OWNER,
            action="run_started",
            thread_id="no-such-thread",
            run_id=RUN_ID,
            actor=OWNER.display,
            now=NOW,
        )
        await start_run(
            conn, run_id=RUN_ID, thread_id="no-such-thread", trigger="message", inputs=[], now=NOW
        )

    with pytest.raises(IntegrityError, match=r"(?i)foreign key"):
        await _write(db, start_a_run_of_no_thread)

    async with db.read() as conn:
        trail = await list_audit(conn, OWNER, "no-such-thread")
        status = await run_status(conn, RUN_ID)
    assert (trail, status) == ([], None)
    assert await _write_next_item_and_read_it_back(db) == [("next", 0)]


@pytest.mark.parametrize(
    "executed_first",
    [True, False],
    ids=["after-a-statement-of-its-own", "with-only-unread-statements"],
)
async def test_a_transaction_whose_code_raises_stores_none_of_its_unread_statements(
    db: Database, executed_first: bool
) -> None:
    async def defer_then_fail(conn: DbConnection) -> None:
        if executed_first:
            await conn.execute(INSERT_ITEM, {"name": "executed", "n": 1})
        await execute_unread(conn, INSERT_ITEM, {"name": "dropped", "n": 2})
        await execute_unread(conn, INSERT_ITEM, {"name": "dropped too", "n": 3})
        raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError, match="changed my mind"):
        await _write(db, defer_then_fail)

    # the writer's next transaction neither fails on them nor runs them
    assert await _write_next_item_and_read_it_back(db) == [("next", 0)]
    assert await _items(db) == [("next", 0)]


# --- Hops saved (SQLite) --------------------------------------------------------------------


@dataclass
class HopCounter:
    """Calls handed to SQLite connection threads (``SqliteThread.call``), each one a hop."""

    count: int = 0


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> HopCounter:
    counter = HopCounter()
    call = SqliteThread.call

    async def counted_call(self: SqliteThread, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counter.count += 1
        return await call(self, fn, *args, **kwargs)

    monkeypatch.setattr(SqliteThread, "call", counted_call)
    return counter


async def test_on_sqlite_unread_statements_go_with_the_next_hop_instead_of_taking_their_own(
    sqlite_db: Database, hops: HopCounter
) -> None:
    statements = 5
    names = [f"item {n}" for n in range(statements)]

    async def hops_for(transaction: Callable[[DbConnection], Awaitable[None]]) -> int:
        """Hops of an offloaded transaction (on the loop a call is no hop, but the same call)."""
        before = hops.count
        async with sqlite_db.write(offload=True) as conn:
            await transaction(conn)
        return hops.count - before

    async def executed_then_read(conn: DbConnection) -> None:
        for name in names:
            await conn.execute(INSERT_ITEM, {"name": f"executed {name}", "n": 0})
        assert await _count_by_scalar(conn) == statements

    async def unread_then_read(conn: DbConnection) -> None:
        for name in names:
            await execute_unread(conn, INSERT_ITEM, {"name": f"unread {name}", "n": 0})
        assert await _count_by_scalar(conn) == 2 * statements

    async def only_unread(conn: DbConnection) -> None:
        for name in names:
            await execute_unread(conn, INSERT_ITEM, {"name": f"alone {name}", "n": 0})

    spent = [
        await hops_for(executed_then_read),  # one per statement, the read, the commit
        await hops_for(unread_then_read),  # the read carries them, then the commit
        await hops_for(only_unread),  # the commit carries them
    ]

    assert spent == [statements + 2, 2, 1]
    assert len(await _items(sqlite_db)) == 3 * statements
