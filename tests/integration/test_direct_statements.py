"""Statements marked ``direct`` (``storage/db/direct/``) run on the driver past SQLAlchemy's
execution, and store exactly what SQLAlchemy's execution stores: the same SQL, the same values
(datetimes, JSON, values the statement carries), the same errors; one whose result is read
(``database.execute``: a SELECT, a RETURNING) reads the rows SQLAlchemy's result would give; a
form SQLAlchemy must run itself (a Python-side default, a missing parameter, an expanding IN)
still runs through SQLAlchemy.

On SQLite (a real file) they run on sqlite3 at once. On PostgreSQL (a throwaway cluster) the
unread ones are deferred, with the transaction's BEGIN, and sent in one message before the
transaction's next statement or with its commit: what follows sees them, a failure fails the
transaction, a rollback drops them, a transaction that wrote nothing sends nothing, and a read
runs without a transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, StatementError

from consentry.storage.checkpoints._drivers import run_on
from consentry.storage.checkpoints._operations import Operation, Query, Result
from consentry.storage.db.database import (
    Database,
    DbConnection,
    execute,
    execute_unread,
    notify_at_commit,
)
from consentry.storage.db.direct import direct
from consentry.storage.db.postgres_connection import PostgresConnection, refused_one_row_change
from consentry.storage.tables import UTCDateTime
from tests.postgres import PostgresCluster, opened_with_tables
from tests.statements_sent import postgres_round_trips, sent_by_sqlalchemy

_metadata = sa.MetaData()
_items = sa.Table(
    "items",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String, nullable=False, unique=True),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("kind", sa.String, nullable=False),
    sa.Column("flag", sa.Boolean, nullable=False, default=False),
)

_INSERT_PLAIN = _items.insert()
_INSERT_DIRECT = direct(_items.insert())
_RENAME_DIRECT = direct(
    _items.update()
    .where(_items.c.name == sa.bindparam("p_name"))
    .values(name=sa.bindparam("p_new"), kind="renamed")
)
_RETURNING_DIRECT = direct(_items.insert().returning(_items.c.id))
_SELECT_COLUMNS = (_items.c.name, _items.c.data, _items.c.at, _items.c.flag)
_SELECT_PLAIN = sa.select(*_SELECT_COLUMNS).where(_items.c.kind == sa.bindparam("p_kind"))
_SELECT_DIRECT = direct(
    sa.select(*_SELECT_COLUMNS).where(_items.c.kind == sa.bindparam("p_kind")).order_by(_items.c.id)
)
_UPDATE_RETURNING_DIRECT = direct(
    _items.update()
    .where(_items.c.name == sa.bindparam("p_name"))
    .values(flag=False)
    .returning(_items.c.name, _items.c.at)
)
_SELECT_IN_DIRECT = direct(
    sa.select(_items.c.name).where(_items.c.name.in_(sa.bindparam("p_names", expanding=True)))
)
_INSERT_UTC_DIRECT = direct(
    sa.Table(
        "items", sa.MetaData(), sa.Column("name", sa.String), sa.Column("at", UTCDateTime)
    ).insert()
)

AT = datetime(2026, 12, 1, 8, 30, 15, 123456, tzinfo=UTC)


def _row(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "data": {"a": [1, "é"]}, "at": AT, "kind": "k", "flag": True, **more}


def _opened(url: str) -> AbstractAsyncContextManager[Database]:
    """A database with the ``items`` table."""
    return opened_with_tables(url, _metadata)


@pytest_asyncio.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with _opened(f"sqlite:///{tmp_path / 'direct.db'}") as database:
        yield database


@pytest.fixture
def through_sqlalchemy(db: Database) -> Iterator[list[str]]:
    """The statements SQLAlchemy's execution ran (a direct one never reaches this hook)."""
    with sent_by_sqlalchemy(db) as seen:
        yield seen


async def _stored(db: Database) -> list[tuple[Any, ...]]:
    async with db.read() as conn:
        raw = await conn.exec_driver_sql("SELECT name, data, at, kind, flag FROM items ORDER BY id")
        return [tuple(row) for row in raw.all()]


async def test_a_direct_insert_stores_what_sqlalchemy_stores_without_its_execution(
    db: Database, through_sqlalchemy: list[str]
) -> None:
    async with db.write() as conn:
        await conn.execute(_INSERT_PLAIN, _row("by sqlalchemy"))
    assert through_sqlalchemy == ["INSERT"]

    async with db.write() as conn:
        one = await conn.execute(_INSERT_DIRECT, _row("direct"))
        many = await conn.execute(_INSERT_DIRECT, [_row("many 1"), _row("many 2")])
        await execute_unread(conn, _INSERT_DIRECT, _row("unread"))
    assert through_sqlalchemy == ["INSERT"]  # none of these went through SQLAlchemy
    assert (one.rowcount, many.rowcount) == (1, 2)

    plain, *directs = await _stored(db)
    assert [row[1:] for row in directs] == [plain[1:]] * 4  # byte for byte the same values
    assert [row[0] for row in directs] == ["direct", "many 1", "many 2", "unread"]


async def test_a_direct_update_sends_the_values_the_statement_carries(
    db: Database, through_sqlalchemy: list[str]
) -> None:
    async with db.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("old"))
        renamed = await conn.execute(_RENAME_DIRECT, {"p_name": "old", "p_new": "new"})
        missed = await conn.execute(_RENAME_DIRECT, {"p_name": "nobody", "p_new": "x"})

    assert (renamed.rowcount, missed.rowcount) == (1, 0)
    assert through_sqlalchemy == []
    assert [(row[0], row[3]) for row in await _stored(db)] == [("new", "renamed")]


async def _read_back(db: Database, statement: sa.Executable) -> list[tuple[Any, ...]]:
    async with db.read() as conn:
        return [tuple(row) for row in await execute(conn, statement, {"p_kind": "k"})]


async def test_a_direct_statement_whose_result_is_read_gives_sqlalchemys_rows(
    db: Database, through_sqlalchemy: list[str]
) -> None:
    async with db.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, [_row("one"), _row("two")])
        returned = await execute(conn, _RETURNING_DIRECT, _row("three"))
        assert returned.scalar() == 3
        updated = await execute(conn, _UPDATE_RETURNING_DIRECT, {"p_name": "two"})
        updated_rows = [tuple(row) for row in updated]
        assert updated.rowcount == 1
        nobody = await execute(conn, _UPDATE_RETURNING_DIRECT, {"p_name": "nobody"})
        assert (nobody.all(), nobody.rowcount) == ([], 0)
    direct_rows = await _read_back(db, _SELECT_DIRECT)
    assert through_sqlalchemy == []  # none of these went through SQLAlchemy

    by_sqlalchemy = await _read_back(db, _SELECT_PLAIN)
    assert through_sqlalchemy == ["SELECT"]
    assert direct_rows == by_sqlalchemy  # the JSON parsed, the dates read back, the booleans
    at = by_sqlalchemy[0][2]
    assert at == AT.replace(tzinfo=None)  # SQLite's DateTime keeps no zone (UTCDateTime does)
    assert direct_rows == [
        ("one", {"a": [1, "é"]}, at, True),
        ("two", {"a": [1, "é"]}, at, False),
        ("three", {"a": [1, "é"]}, at, True),
    ]
    assert updated_rows == [("two", at)]
    async with db.read() as conn:
        row = (await execute(conn, _SELECT_DIRECT, {"p_kind": "k"})).first()
    assert row is not None
    assert (row.name, row._mapping["flag"]) == ("one", True)


async def test_a_form_sqlalchemy_must_run_itself_still_runs_through_it(
    db: Database, through_sqlalchemy: list[str]
) -> None:
    without_flag = {key: value for key, value in _row("defaulted").items() if key != "flag"}
    async with db.write() as conn:
        await conn.execute(_INSERT_DIRECT, without_flag)  # the column's Python-side default
        found = await execute(conn, _SELECT_IN_DIRECT, {"p_names": ["defaulted", "x"]})
        assert found.scalars().all() == ["defaulted"]
    assert through_sqlalchemy == ["INSERT", "SELECT"]
    assert [(row[0], row[4]) for row in await _stored(db)] == [("defaulted", 0)]

    async def rename_without_the_new_name() -> None:
        async with db.write() as conn:
            await conn.execute(_RENAME_DIRECT, {"p_name": "defaulted"})

    with pytest.raises(StatementError, match="p_new"):  # a parameter missing: SQLAlchemy's error
        await rename_without_the_new_name()


async def test_a_direct_statement_fails_as_sqlalchemy_would_and_the_transaction_rolls_back(
    db: Database,
) -> None:
    async def insert_twice() -> None:
        async with db.write() as conn:
            await conn.execute(_INSERT_DIRECT, _row("first"))
            await execute_unread(conn, _INSERT_DIRECT, _row("first"))  # fails at the commit

    with pytest.raises(IntegrityError, match="UNIQUE constraint failed"):
        await insert_twice()

    async def insert_naive() -> None:
        async with db.write() as conn:
            await conn.execute(_INSERT_UTC_DIRECT, {"name": "naive", "at": datetime(2026, 1, 1)})

    with pytest.raises(ValueError, match="naive"):  # the UTC column's own check still runs
        await insert_naive()

    assert await _stored(db) == []


# --- PostgreSQL: deferred, then sent in one message --------------------------------------------


@pytest_asyncio.fixture
async def pg(postgres: PostgresCluster) -> AsyncIterator[Database]:
    async with _opened(postgres.new_database()) as database:
        yield database


@pytest.fixture
def round_trips(pg: Database, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every round trip psycopg makes on ``pg`` from here on."""
    return postgres_round_trips(monkeypatch)


async def test_on_postgres_unread_direct_statements_go_with_the_begin_and_commit_in_one_message(
    pg: Database, round_trips: list[list[str]]
) -> None:
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("one"))
        await execute_unread(conn, _INSERT_DIRECT, [_row("two"), _row("three")])
        await execute_unread(conn, _RENAME_DIRECT, {"p_name": "three", "p_new": "renamed"})
        await notify_at_commit(conn, "consentry_test", "told")
    assert round_trips == [["BEGIN", "INSERT", "INSERT", "INSERT", "UPDATE", "SELECT", "COMMIT"]]

    async with pg.write() as conn:
        await conn.execute(_INSERT_PLAIN, _row("by sqlalchemy"))
    assert round_trips[1:] == [["BEGIN", "INSERT"], ["COMMIT"]]  # SQLAlchemy's, with the BEGIN

    *directs, plain = await _stored(pg)
    assert [row[0] for row in directs] == ["one", "two", "renamed"]
    assert [row[1:3] + row[4:] for row in directs] == [plain[1:3] + plain[4:]] * 3
    assert [row[3] for row in directs] == ["k", "k", "renamed"]


async def test_on_postgres_a_transaction_that_wrote_nothing_sends_nothing(
    pg: Database, round_trips: list[list[str]]
) -> None:
    async with pg.write():
        pass
    assert round_trips == []


async def test_on_postgres_a_read_runs_its_statements_without_a_transaction(
    pg: Database, round_trips: list[list[str]]
) -> None:
    """Under READ COMMITTED each statement of a transaction takes its own snapshot: a read
    sees the same without BEGIN and COMMIT (one round trip a statement, not three)."""
    async with pg.read() as conn:
        first = await conn.scalar(sa.text("SELECT transaction_timestamp()"))
        second = await conn.scalar(sa.text("SELECT transaction_timestamp()"))
    assert round_trips == [["SELECT"], ["SELECT"]]
    assert first != second  # two transactions: each statement its own


async def _count(conn: DbConnection) -> int:
    return int(await conn.scalar(sa.text("SELECT count(*) FROM items")))


def _count_on_the_driver() -> Operation:
    result: Result = yield Query("SELECT count(*) FROM items")
    return result.rows[0][0]


async def test_on_postgres_what_follows_an_unread_statement_sees_it(
    pg: Database, round_trips: list[list[str]]
) -> None:
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("first"))
        by_sqlalchemy = await _count(conn)  # what was deferred is sent first
        await execute_unread(conn, _INSERT_DIRECT, _row("second"))
        on_the_driver = await run_on(conn, _count_on_the_driver())  # the checkpointer's path
    assert (by_sqlalchemy, on_the_driver) == (1, 2)
    assert round_trips == [
        ["BEGIN", "INSERT", "SELECT"],  # SQLAlchemy's statement answers with its own result
        ["INSERT", "SELECT"],  # the checkpointer's, likewise
        ["COMMIT"],
    ]


async def test_on_postgres_a_statement_sent_with_deferred_ones_returns_its_own_rows(
    pg: Database,
) -> None:
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("deferred"))
        returned = await conn.execute(_RETURNING_DIRECT, _row("returning"))
        ids = [row[0] for row in returned]
        await execute_unread(conn, _RENAME_DIRECT, {"p_name": "deferred", "p_new": "renamed"})
        renamed = await conn.execute(
            _items.update().where(_items.c.kind == "renamed").values(flag=False)
        )
        count = renamed.rowcount
    assert (len(ids), count) == (1, 1)
    assert [row[0] for row in await _stored(pg)] == ["renamed", "returning"]


async def test_on_postgres_a_statement_whose_result_is_read_goes_in_one_message(
    pg: Database, round_trips: list[list[str]]
) -> None:
    """Marked direct or not, a statement runs on psycopg (the one not marked compiled through
    SQLAlchemy's cache, never through its execution), with what its transaction deferred."""
    with sent_by_sqlalchemy(pg) as through_sqlalchemy:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT_DIRECT, [_row("one"), _row("two")])
            updated = await execute(conn, _UPDATE_RETURNING_DIRECT, {"p_name": "two"})
            updated_rows = [tuple(row) for row in updated]
            missed = await execute(conn, _UPDATE_RETURNING_DIRECT, {"p_name": "nobody"})
        async with pg.read() as conn:
            direct_rows = [
                tuple(row) for row in await execute(conn, _SELECT_DIRECT, {"p_kind": "k"})
            ]
        async with pg.read() as conn:
            plain = [tuple(row) for row in await conn.execute(_SELECT_PLAIN, {"p_kind": "k"})]
    assert through_sqlalchemy == []
    assert round_trips == [
        ["BEGIN", "INSERT", "INSERT", "UPDATE"],  # the statement answers with its own rows
        ["UPDATE"],
        ["COMMIT"],
        ["SELECT"],  # a read: no transaction
        ["SELECT"],
    ]
    assert (updated_rows, updated.rowcount) == ([("two", AT)], 1)
    assert (missed.all(), missed.rowcount) == ([], 0)
    assert (
        direct_rows
        == sorted(plain)
        == [
            ("one", {"a": [1, "é"]}, AT, True),
            ("two", {"a": [1, "é"]}, AT, False),
        ]
    )


async def test_on_postgres_a_last_one_row_change_commits_its_transaction_in_its_own_message(
    pg: Database, round_trips: list[list[str]]
) -> None:
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("one"))
        assert isinstance(conn, PostgresConnection)
        changed = await conn.commit_with_one_row_change(_UPDATE_RETURNING_DIRECT, {"p_name": "one"})
        assert [tuple(row) for row in changed] == [("one", AT)]
        assert pg.committed_with_its_last_statement(conn)
        with pytest.raises(RuntimeError, match="already committed"):
            await execute_unread(conn, _INSERT_DIRECT, _row("too late"))
    assert round_trips == [["BEGIN", "INSERT", "WITH", "COMMIT"]]  # nothing after it
    assert await _stored(pg) == [("one", {"a": [1, "é"]}, AT, "k", False)]


async def test_on_postgres_a_last_one_row_change_that_changes_none_commits_nothing(
    pg: Database,
) -> None:
    async def claim_nothing() -> None:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT_DIRECT, _row("written with it"))
            assert isinstance(conn, PostgresConnection)
            await conn.commit_with_one_row_change(_UPDATE_RETURNING_DIRECT, {"p_name": "nobody"})

    with pytest.raises(StatementError) as raised:
        await claim_nothing()
    assert refused_one_row_change(raised.value)
    assert await _stored(pg) == []  # the insert sent with it is not committed


@pytest.mark.parametrize("second", ["sqlalchemy", "direct"])
async def test_on_postgres_an_error_names_the_statement_not_the_values_sent_with_it(
    pg: Database, second: str
) -> None:
    async def insert_twice() -> None:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT_DIRECT, _row("secret text"))
            if second == "sqlalchemy":  # sent with it: fails
                await conn.execute(_INSERT_PLAIN, _row("secret text"))
            else:  # on the driver, its result read
                await execute(conn, _RETURNING_DIRECT, _row("secret text"))

    with pytest.raises(IntegrityError) as raised:
        await insert_twice()
    assert raised.value.statement is not None
    assert raised.value.statement.startswith("INSERT INTO items")
    assert "BEGIN" not in raised.value.statement
    assert "secret text" not in raised.value.statement
    assert await _stored(pg) == []


async def test_on_postgres_a_write_is_atomic_though_its_begin_was_deferred(
    pg: Database,
) -> None:
    async def write_then_fail(first: str) -> None:
        async with pg.write() as conn:
            if first == "sqlalchemy":
                await conn.execute(_INSERT_PLAIN, _row("by sqlalchemy"))
            else:
                await execute_unread(conn, _INSERT_DIRECT, _row("deferred"))
                assert await run_on(conn, _count_on_the_driver()) == 1
            raise RuntimeError("changed my mind")

    for first in ("sqlalchemy", "the driver"):
        with pytest.raises(RuntimeError, match="changed my mind"):
            await write_then_fail(first)
    assert await _stored(pg) == []


async def test_on_postgres_a_deferred_statement_that_fails_fails_the_transaction(
    pg: Database,
) -> None:
    async def insert_twice() -> None:
        async with pg.write() as conn:
            await conn.execute(_INSERT_DIRECT, _row("first"))  # not unread: sent at once
            await execute_unread(conn, _INSERT_DIRECT, _row("first"))  # fails at the commit

    with pytest.raises(IntegrityError, match="duplicate key"):
        await insert_twice()
    assert await _stored(pg) == []

    async with pg.write() as conn:  # the connection is clean for the next transaction
        await execute_unread(conn, _INSERT_DIRECT, _row("next"))
    assert [row[0] for row in await _stored(pg)] == ["next"]


async def test_on_postgres_values_bound_on_the_client_are_stored_as_the_server_binds_them(
    pg: Database,
) -> None:
    """A deferred statement's values are quoted by psycopg (``ClientCursor``): text that looks
    like SQL stays text."""
    hostile = "x'); DROP TABLE items; --"
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row(hostile, kind="%(name)s \\ ' \" ;"))
        await conn.execute(_INSERT_PLAIN, _row("plain", kind="%(name)s \\ ' \" ;"))
    stored = await _stored(pg)
    assert [row[0] for row in stored] == [hostile, "plain"]
    assert stored[0][1:] == stored[1][1:]


async def test_on_postgres_a_rolled_back_transaction_drops_what_it_deferred(
    pg: Database, round_trips: list[list[str]]
) -> None:
    async def defer_then_fail() -> None:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT_DIRECT, _row("dropped"))
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError, match="changed my mind"):
        await defer_then_fail()
    async with pg.write() as conn:  # most likely the same pooled connection
        await execute_unread(conn, _INSERT_DIRECT, _row("kept"))

    assert round_trips == [["BEGIN", "INSERT", "COMMIT"]]  # the dropped one was never sent
    assert [row[0] for row in await _stored(pg)] == ["kept"]


def _count_last() -> Operation:
    result: Result = yield Query("SELECT count(*) FROM items", last=True)
    return result.rows[0][0]


async def test_on_postgres_a_transactions_last_statement_can_carry_its_commit(
    pg: Database, round_trips: list[list[str]]
) -> None:
    """``run_on(…, commit=True)`` (a step's checkpoint): the transaction is one message, and
    nothing may run in it after that."""
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT_DIRECT, _row("with the commit"))
        assert await run_on(conn, _count_last(), commit=True) == 1
        assert pg.committed_with_its_last_statement(conn)
        with pytest.raises(RuntimeError, match="already committed"):
            await execute_unread(conn, _INSERT_DIRECT, _row("too late"))
        with pytest.raises(RuntimeError, match="already committed"):
            await conn.execute(_INSERT_PLAIN, _row("too late"))
    assert round_trips == [["BEGIN", "INSERT", "SELECT", "COMMIT"]]
    assert [row[0] for row in await _stored(pg)] == ["with the commit"]

    round_trips.clear()
    async with pg.write() as conn:  # the next transaction on the connection is a fresh one
        assert not pg.committed_with_its_last_statement(conn)
        await execute_unread(conn, _INSERT_DIRECT, _row("next"))
        assert await run_on(conn, _count_on_the_driver(), commit=True) == 2  # not its last
    assert round_trips == [["BEGIN", "INSERT", "SELECT"], ["COMMIT"]]
