"""``storage.db.postgres_pool``: a PostgreSQL transaction on Consentry's pool is committed
when its block ends, rolled back when the block raises, and its connection always back in the
pool, even when the caller is cancelled while the commit is in flight (the commit completes, or
fails, then the cancellation is raised).
On a throwaway PostgreSQL cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from consentry.storage.db import idle_checks
from consentry.storage.db.database import (
    Database,
    execute_unread,
    is_connection_lost,
    is_database_unavailable,
    libpq_url,
)
from consentry.storage.db.direct import direct
from consentry.storage.db.postgres_connection import PostgresConnection
from consentry.storage.db.postgres_pool import PoolClosedError
from tests.postgres import PostgresCluster, opened_with_tables

WAIT_SECONDS = 10.0
_metadata = sa.MetaData()
_items = sa.Table("items", _metadata, sa.Column("name", sa.String, primary_key=True))
_INSERT = direct(_items.insert())


class _BlockFailedError(Exception):
    pass


@pytest_asyncio.fixture
async def pg(postgres: PostgresCluster) -> AsyncIterator[Database]:
    async with opened_with_tables(postgres.new_database(), _metadata) as database:
        yield database


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        return list((await conn.execute(sa.select(_items.c.name))).scalars())


def _checked_out(db: Database) -> int:
    assert db._pool is not None
    opened, idle = db._pool.sizes
    return opened - idle


async def test_a_block_that_ends_commits_and_one_that_raises_rolls_back(pg: Database) -> None:
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT, {"name": "kept"})

    async def write_then_fail() -> None:
        async with pg.write() as conn:
            await conn.execute(_INSERT, {"name": "dropped"})  # sent: the rollback undoes it
            raise _BlockFailedError

    with pytest.raises(_BlockFailedError):
        await write_then_fail()
    assert await _names(pg) == ["kept"]
    assert _checked_out(pg) == 0


async def test_a_caller_cancelled_in_its_block_rolls_back(pg: Database) -> None:
    inside, never = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with pg.write() as conn:
            await conn.execute(_INSERT, {"name": "dropped"})
            inside.set()
            await never.wait()

    writer = asyncio.create_task(write())
    async with asyncio.timeout(WAIT_SECONDS):
        await inside.wait()
        writer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writer
    assert await _names(pg) == []
    assert _checked_out(pg) == 0


@pytest.mark.parametrize("commit", ["succeeds", "fails"])
async def test_a_caller_cancelled_during_the_commit_returns_once_it_completed(
    pg: Database, monkeypatch: pytest.MonkeyPatch, commit: str
) -> None:
    """The commit completes (or fails) in the pool's connection, which then goes back to the
    pool; the caller gets its cancellation either way (a failed commit is its cause)."""
    if commit == "fails":
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT, {"name": "committed"})
    sending, go_on = asyncio.Event(), asyncio.Event()
    commit_it = PostgresConnection.commit

    async def held_commit(conn: PostgresConnection) -> None:
        sending.set()
        await go_on.wait()
        await commit_it(conn)

    monkeypatch.setattr(PostgresConnection, "commit", held_commit)

    async def write() -> None:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT, {"name": "committed"})  # sent with the COMMIT

    writer = asyncio.create_task(write())
    async with asyncio.timeout(WAIT_SECONDS):
        await sending.wait()
        writer.cancel()
        await asyncio.sleep(0.05)
        assert not writer.done()  # the commit is still on its way: the caller waits for it
        go_on.set()
        with pytest.raises(asyncio.CancelledError) as raised:
            await writer
    monkeypatch.undo()
    if commit == "fails":
        assert isinstance(raised.value.__cause__, IntegrityError)
    assert await _names(pg) == ["committed"]
    assert _checked_out(pg) == 0


async def test_a_caller_cancelled_while_its_idle_connection_is_checked_loses_no_connection(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await _names(pg) == []  # one connection, now idle
    checking, never = asyncio.Event(), asyncio.Event()

    async def hung_check(_driver: Any) -> None:
        checking.set()
        await never.wait()

    monkeypatch.setattr(idle_checks, "IDLE_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(idle_checks, "check", hung_check)
    reader = asyncio.create_task(_names(pg))
    async with asyncio.timeout(WAIT_SECONDS):
        await checking.wait()
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
    monkeypatch.undo()
    assert pg._pool is not None
    assert pg._pool.sizes == (0, 0)  # the connection being checked was closed, not lost
    assert await _names(pg) == []  # a new one serves


async def test_a_statement_that_cannot_be_sent_loses_nothing_deferred_before_it(
    pg: Database,
) -> None:
    """What was deferred goes with the next statement's message, built before anything is taken:
    a value psycopg cannot send fails that statement alone, before anything is sent."""
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT, {"name": "deferred"})
        with pytest.raises(Exception, match="cannot adapt"):
            await conn.execute(_INSERT, {"name": object()})
        await execute_unread(conn, _INSERT, {"name": "after"})
    assert sorted(await _names(pg)) == ["after", "deferred"]
    assert _checked_out(pg) == 0


async def test_a_transaction_whose_statement_failed_cannot_commit(pg: Database) -> None:
    """PostgreSQL answers the COMMIT of a failed transaction with a rollback: a caller that
    carries on after the failure gets an error, not a silent loss."""

    async def carry_on_after_a_failure() -> None:
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT, {"name": "twice"})
            with pytest.raises(IntegrityError):
                await conn.execute(_INSERT, {"name": "twice"})

    with pytest.raises(RuntimeError, match="cannot commit"):
        await carry_on_after_a_failure()
    assert await _names(pg) == []
    assert _checked_out(pg) == 0


async def test_a_transaction_asked_for_once_the_database_is_closed_is_an_outage(
    pg: Database,
) -> None:
    await pg.close()
    with pytest.raises(PoolClosedError) as refused:
        async with pg.read():
            pass
    assert is_database_unavailable(refused.value)  # a 503, not a 500


async def test_a_connection_given_back_goes_to_the_transaction_that_waited_longest(
    postgres: PostgresCluster,
) -> None:
    db = Database(postgres.new_database(), pool_size=1)  # three connections at most
    await db.open()
    served: list[str] = []
    release = asyncio.Event()

    async def hold() -> None:
        async with db.read():
            await release.wait()

    async def wait_then_read(name: str) -> None:
        async with db.read():
            served.append(name)

    try:
        holders = [asyncio.create_task(hold()) for _ in range(3)]
        await asyncio.sleep(0.2)  # every connection taken
        first = asyncio.create_task(wait_then_read("first"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(wait_then_read("second"))
        await asyncio.sleep(0.05)
        release.set()
        async with asyncio.timeout(WAIT_SECONDS):
            await asyncio.gather(*holders, first, second)
        assert served == ["first", "second"]
    finally:
        await db.close()


async def test_an_end_that_sends_nothing_runs_in_the_caller_s_task(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read, an untouched write and a transaction committed with its last statement end in
    the caller's task (nothing to wait for, so nothing a cancellation could cut); a transaction
    with statements still to send commits in a task of its own (it runs to completion)."""
    ended_in: list[bool] = []
    end = type(pg._pool)._end  # type: ignore[union-attr]

    async def recorded_end(pool: Any, conn: PostgresConnection, *, commit: bool) -> None:
        ended_in.append(asyncio.current_task() is caller)
        await end(pool, conn, commit=commit)

    monkeypatch.setattr(type(pg._pool), "_end", recorded_end)
    caller = asyncio.current_task()
    await _names(pg)  # a read
    async with pg.write():
        pass  # nothing sent
    async with pg.write() as conn:
        await conn.exec_driver_sql("SELECT 1")  # its BEGIN sent with it: the end commits
    async with pg.write() as conn:
        await execute_unread(conn, _INSERT, {"name": "sent at the end"})
    assert isinstance(conn, PostgresConnection)
    async with pg.write() as committed:
        await committed.commit_with_one_row_change(
            _items.update()
            .where(_items.c.name == "sent at the end")
            .values(name="renamed")
            .returning(_items.c.name),
            {},
        )
    assert ended_in == [True, True, False, False, True]
    assert await _names(pg) == ["renamed"]


async def test_a_failed_transaction_that_sent_nothing_still_cannot_commit(pg: Database) -> None:
    """Ended in the caller's task (nothing to send), a transaction one of whose statements
    failed still refuses to commit, and its connection still goes back to the pool."""

    async def failed_write() -> None:
        async with pg.write() as conn:
            assert isinstance(conn, PostgresConnection)
            conn.mark_failed()  # a statement of the checkpointer's failed before it was sent
            assert conn.ends_unsent

    with pytest.raises(RuntimeError, match="cannot commit"):
        await failed_write()
    assert _checked_out(pg) == 0
    assert await _names(pg) == []  # the pool serves on


async def test_a_transaction_that_ends_after_the_pool_closed_closes_its_connection(
    pg: Database,
) -> None:
    """A read whose block ends once the server has closed the pool (its end runs in the
    caller's task) closes its connection rather than keeping it."""
    assert pg._pool is not None
    async with pg.read() as conn:
        assert isinstance(conn, PostgresConnection)
        await conn.exec_driver_sql("SELECT 1")
        await pg._pool.close()
    assert conn.driver.closed
    assert pg._pool.sizes == (0, 0)


async def _failed_statement(url: str, *, terminated: bool) -> BaseException:
    """What a statement raises on a connection of its own whose server process another
    connection ended (``terminated``: as a restart or a failover does), or that ran past its
    ``statement_timeout``."""
    db = Database(url, pool_size=1)
    await db.open()
    try:
        async with db.read() as conn:
            if terminated:
                pid = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
                async with await psycopg.AsyncConnection.connect(
                    libpq_url(url), autocommit=True
                ) as admin:
                    await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            else:
                await conn.exec_driver_sql("SET statement_timeout = 1")
            await conn.exec_driver_sql("SELECT pg_sleep(1)")
    except sa.exc.DBAPIError as exc:
        return exc
    finally:
        await db.close()
    raise AssertionError("the statement did not fail")


async def test_a_connection_cut_mid_transaction_is_told_from_a_statement_that_timed_out(
    postgres: PostgresCluster,
) -> None:
    """``is_connection_lost``: the connection broke, so what the database holds of the
    transaction is unknown; not a statement that timed out, which ``is_database_unavailable``
    also answers with a 503 (the database is there, only slow)."""
    url = postgres.new_database()
    timed_out = await _failed_statement(url, terminated=False)
    cut = await _failed_statement(url, terminated=True)

    assert is_database_unavailable(timed_out)
    assert not is_connection_lost(timed_out)
    assert is_database_unavailable(cut)
    assert is_connection_lost(cut)
