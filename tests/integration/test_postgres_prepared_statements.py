"""``storage.db.direct._prepared``: on PostgreSQL a statement the process runs again is prepared
once a connection and sent as ``EXECUTE``, still in one message a transaction; one PostgreSQL
cannot prepare runs as it is, even inside a transaction; and a message that may or may not have
prepared leaves its connection to prepare again, never to ``EXECUTE`` a statement it lacks.
On a throwaway PostgreSQL cluster."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from consentry.storage.db.database import Database, execute_unread
from consentry.storage.db.direct import _prepared, direct
from tests.postgres import PostgresCluster, opened_with_tables

_metadata = sa.MetaData()
_items = sa.Table("items", _metadata, sa.Column("name", sa.String, primary_key=True))
_INSERT = direct(_items.insert())
_PREPARED = "SELECT name FROM pg_prepared_statements WHERE name LIKE 'consentry%%'"


@pytest.fixture(autouse=True)
def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What this process has learned, as if it had just started."""
    monkeypatch.setattr(_prepared, "_FORMS", {})
    monkeypatch.setattr(_prepared, "_SIGHTINGS", {})
    monkeypatch.setattr(_prepared, "_NUMBERS", itertools.count(1))


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.new_database()


@pytest_asyncio.fixture
async def pg(url: str) -> AsyncIterator[Database]:
    async with opened_with_tables(url, _metadata) as database:
        yield database


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every message psycopg sends from here on, whole."""
    seen: list[str] = []
    execute = psycopg.AsyncCursor.execute

    async def executed(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        seen.append(str(query))
        return await execute(self, query, *args, **kw)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", executed)
    return seen


async def _insert(db: Database, *names: str) -> None:
    async with db.write() as conn:
        for name in names:
            await execute_unread(conn, _INSERT, {"name": name})


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        return sorted((await conn.execute(sa.select(_items.c.name))).scalars())


async def _prepared_on(db: Database) -> list[str]:
    async with db.read() as conn:
        return list((await conn.exec_driver_sql(_PREPARED)).scalars())


async def test_a_statement_run_again_is_prepared_once_and_then_executed(
    pg: Database, messages: list[str]
) -> None:
    await _insert(pg, "first")
    await _insert(pg, "second")
    await _insert(pg, "third", "fourth")

    insert = "INSERT INTO items (name) VALUES"
    assert messages[0].startswith("BEGIN;\n" + insert)  # seen once: as it is
    learned, second, third = messages[1:]
    assert learned.startswith("PREPARE consentry_1 AS " + insert)  # a round trip of its own
    assert "$1" in learned
    assert second == "BEGIN;\nEXECUTE consentry_1('second');\nCOMMIT"
    assert third == "BEGIN;\nEXECUTE consentry_1('third');\nEXECUTE consentry_1('fourth');\nCOMMIT"
    assert await _names(pg) == ["first", "fourth", "second", "third"]
    assert await _prepared_on(pg) == ["consentry_1"]  # the pool's one connection


async def test_a_connection_that_lacks_a_learned_statement_prepares_it_in_the_message(
    pg: Database, url: str, messages: list[str]
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned on pg's connection
    other = Database(url)
    await other.open()
    try:
        messages.clear()
        await _insert(other, "c", "d")
        assert messages == [
            "PREPARE consentry_1 AS INSERT INTO items (name) VALUES ($1::VARCHAR);\n"
            "BEGIN;\nEXECUTE consentry_1('c');\nEXECUTE consentry_1('d');\nCOMMIT"
        ]
        assert await _prepared_on(other) == ["consentry_1"]
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c", "d"]


async def test_a_statement_postgresql_cannot_prepare_runs_as_it_is_in_or_out_of_a_transaction(
    pg: Database, messages: list[str]
) -> None:
    # PREPARE cannot tell $1's type; psycopg's own binding sends an int's
    untyped = "SELECT %(value)s IS NULL AS missing"
    for _ in range(2):
        async with pg.read() as conn:
            assert (await conn.exec_driver_sql(untyped, {"value": 1})).scalar() is False
    async with pg.write() as conn:
        await conn.execute(_INSERT, {"name": "sent"})  # the transaction is open
        for _ in range(2):
            found = await conn.exec_driver_sql(untyped + "_2", {"value": 2})
            assert found.scalar() is False
        await execute_unread(conn, _INSERT, {"name": "after"})

    assert await _names(pg) == ["after", "sent"]  # the failed PREPARE failed nothing
    assert _prepared._FORMS[untyped] is None
    assert _prepared._FORMS[untyped + "_2"] is None
    assert any(m.startswith("SAVEPOINT consentry_prepare; PREPARE") for m in messages)
    # only the INSERT (the third learned; within the transaction, at its second run)
    assert await _prepared_on(pg) == ["consentry_3"]


async def test_a_failed_message_that_prepared_has_its_connection_prepare_again(
    pg: Database, url: str, messages: list[str]
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned
    other = Database(url)
    await other.open()
    try:
        with pytest.raises(IntegrityError):  # its PREPARE ran, its INSERT failed
            await _insert(other, "a")
        messages.clear()
        await _insert(other, "c")
        assert messages[0].startswith("DEALLOCATE ALL;\nPREPARE consentry_1 AS")
        assert await _prepared_on(other) == ["consentry_1"]
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c"]


async def test_a_message_that_was_never_sent_has_its_connection_prepare_again(
    pg: Database, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned
    other = Database(url)
    await other.open()
    execute = psycopg.AsyncCursor.execute

    async def lost(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        if str(query).startswith("PREPARE"):
            raise psycopg.OperationalError("the message was lost on its way")
        return await execute(self, query, *args, **kw)

    try:
        with monkeypatch.context() as patched:
            patched.setattr(psycopg.AsyncCursor, "execute", lost)
            with pytest.raises(Exception, match="lost on its way"):
                await _insert(other, "never")
        await _insert(other, "c")  # not an EXECUTE of a statement the connection lacks
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c"]
