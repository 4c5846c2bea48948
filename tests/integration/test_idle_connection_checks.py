"""PostgreSQL connections are checked before use only after they sat idle in their pool
(``backend/consentry/storage/db/idle_checks.py``): psycopg's, which the app tables and the
checkpointer (``storage.checkpoints``) share.

- A connection taken again less than ``IDLE_CHECK_SECONDS`` after it was given back is used
  without a check; one that sat idle longer is checked once.
- A connection that fails its check is replaced, and the transaction runs on a new connection:
  no error reaches the caller. So a backend that died while its connection sat idle (terminated,
  or a database restart) costs nothing but the check.
- The trade-off: a backend that died and whose connection is taken again within the threshold
  fails that one transaction with a database error, and the pool drops the connection.

PostgreSQL only. Pings are counted by wrapping the empty query the check sends
(``psycopg.AsyncConnection.execute("")``); connections are told apart by their backend's pid.
Sleeping here is the behaviour under test: it lets a connection sit idle past the threshold.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
import pytest
import pytest_asyncio
from sqlalchemy import exc as sa_exc

from consentry.storage.db import idle_checks
from consentry.storage.db.database import Database, is_database_unavailable
from consentry.storage.db.idle_checks import IDLE_CHECK_SECONDS
from consentry.storage.db.postgres_pool import PoolExhaustedError
from tests.postgres import PostgresCluster, postgres_cluster

IDLE = IDLE_CHECK_SECONDS + 0.05
"""Long enough for a connection given back to its pool to count as idle."""
TERMINATE_WAIT_MS = 5000

Outcome = Literal["answered", "failed"]


@dataclass
class Checks:
    """Every check a pool made before handing a connection out: whose (its backend's pid) and
    whether the connection answered. ``fail_next`` (pings only) makes the next ping fail
    without asking the database."""

    made: list[tuple[int, Outcome]] = field(default_factory=list)
    fail_next: bool = False


async def _terminate(cluster: PostgresCluster, pid: int) -> None:
    """Terminate a backend from another connection and wait until it is gone."""
    async with await psycopg.AsyncConnection.connect(cluster.admin_url, autocommit=True) as admin:
        cursor = await admin.execute(
            "SELECT pg_terminate_backend(%s, %s)", (pid, TERMINATE_WAIT_MS)
        )
        row = await cursor.fetchone()
        assert row == (True,), f"backend {pid} did not exit"


# --- The pool (the app tables and the checkpointer) -------------------------------------------


@pytest_asyncio.fixture
async def db(postgres: PostgresCluster) -> AsyncIterator[Database]:
    database = Database(postgres.new_database())
    await database.open()
    try:
        yield database
    finally:
        await database.close()


def _count_pings(monkeypatch: pytest.MonkeyPatch) -> Checks:
    """Wrap the empty query ``idle_checks.check_if_idle`` sends to ping a connection."""
    real_execute = psycopg.AsyncConnection.execute
    checks = Checks()

    async def counting_execute(
        driver: psycopg.AsyncConnection[Any], query: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if query != "":
            return await real_execute(driver, query, *args, **kwargs)
        pid = driver.info.backend_pid
        if checks.fail_next:
            checks.fail_next = False
            checks.made.append((pid, "failed"))
            raise psycopg.OperationalError("the server went away")
        try:
            answered = await real_execute(driver, query, *args, **kwargs)
        except Exception:
            checks.made.append((pid, "failed"))
            raise
        checks.made.append((pid, "answered"))
        return answered

    monkeypatch.setattr(psycopg.AsyncConnection, "execute", counting_execute)
    return checks


async def _transaction_pid(db: Database) -> int:
    """Run one read transaction; the pid of the backend that served it."""
    async with db.read() as conn:
        pid: int = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one()
    return pid


async def test_transactions_in_quick_succession_reuse_the_connection_without_a_ping(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(monkeypatch)

    pids = [await _transaction_pid(db) for _ in range(5)]

    assert len(set(pids)) == 1  # one pooled connection, taken again each time
    assert pings.made == []  # a new connection is not pinged, nor one given back a moment ago


async def test_a_connection_idle_past_the_threshold_is_pinged_once_before_its_next_transaction(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(monkeypatch)
    pid = await _transaction_pid(db)

    await asyncio.sleep(IDLE)
    after_idle = await _transaction_pid(db)
    right_after = await _transaction_pid(db)

    assert after_idle == right_after == pid
    assert pings.made == [(pid, "answered")]


async def test_an_idle_connection_whose_ping_fails_is_replaced_and_the_transaction_succeeds(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(monkeypatch)
    old_pid = await _transaction_pid(db)

    await asyncio.sleep(IDLE)
    pings.fail_next = True
    new_pid = await _transaction_pid(db)

    assert new_pid != old_pid
    assert pings.made == [(old_pid, "failed")]  # the new connection is not pinged
    assert await _transaction_pid(db) == new_pid  # the replacement stays in the pool


async def test_an_idle_connection_whose_backend_was_terminated_is_replaced_without_an_error(
    db: Database, postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(monkeypatch)
    old_pid = await _transaction_pid(db)

    await _terminate(postgres, old_pid)
    await asyncio.sleep(IDLE)
    new_pid = await _transaction_pid(db)

    assert new_pid != old_pid
    assert pings.made == [(old_pid, "failed")]  # a real ping, on a dead connection


async def test_a_dead_connection_reused_within_the_threshold_fails_one_transaction(
    db: Database, postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However long the test waits, the connection counts as given back a moment ago.
    monkeypatch.setattr(idle_checks, "IDLE_CHECK_SECONDS", 3600.0)
    pings = _count_pings(monkeypatch)
    old_pid = await _transaction_pid(db)

    await _terminate(postgres, old_pid)
    with pytest.raises(sa_exc.OperationalError) as failed:
        await _transaction_pid(db)
    new_pid = await _transaction_pid(db)

    assert isinstance(failed.value.orig, psycopg.OperationalError)
    assert is_database_unavailable(failed.value)  # a 503 database_unavailable, not a 500
    assert new_pid != old_pid  # the pool dropped the dead connection
    assert pings.made == []


# --- A database restart -----------------------------------------------------------------------


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    """A cluster of its own, so no other test sees the restart."""
    with postgres_cluster() as running:
        yield running


@pytest.mark.postgres  # a cluster of its own, not the `postgres` fixture's
async def test_after_a_database_restart_the_first_transaction_succeeds(
    cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unlike a terminated backend, a restart is never within the threshold: it takes longer.
    (The checkpointer's statements run in these same transactions: it has no pool of its own.)"""
    url = cluster.new_database()
    db = Database(url)
    await db.open()
    pings = _count_pings(monkeypatch)
    try:
        old_db_pid = await _transaction_pid(db)

        await asyncio.to_thread(cluster.stop, "fast")
        await asyncio.to_thread(cluster.start)
        new_db_pid = await _transaction_pid(db)

        assert new_db_pid != old_db_pid
        assert pings.made == [(old_db_pid, "failed")]
    finally:
        await db.close()


@pytest.mark.postgres
async def test_a_transaction_that_waits_too_long_for_a_pooled_connection_is_an_outage(
    postgres: PostgresCluster,
) -> None:
    """An overloaded replica (every connection of its pool busy past the wait) answers 503
    ``database_unavailable`` (a retryable run error), not 500."""
    db = Database(postgres.new_database(), pool_size=1, pool_timeout=0.2)
    await db.open()
    try:
        async with db.read(), db.read(), db.read():  # three times the pool size, all busy
            with pytest.raises(PoolExhaustedError) as waited:
                async with db.read():
                    pass
        assert is_database_unavailable(waited.value)
    finally:
        await db.close()


@pytest.mark.postgres
async def test_connections_opened_under_load_are_kept_for_the_next_burst(
    postgres: PostgresCluster,
) -> None:
    """Regression: connections beyond the pool size were closed when returned and opened again
    for the next burst (3.2 new connections a conversation at 100 concurrent ones)."""
    db = Database(postgres.new_database(), pool_size=1)
    await db.open()
    try:
        for _ in range(2):  # two bursts of three concurrent reads
            async with db.read() as a, db.read() as b, db.read() as c:
                for conn in (a, b, c):
                    await conn.exec_driver_sql("SELECT 1")
        assert db._pool is not None
        assert db._pool.sizes == (3, 3)  # open, and idle: none closed, none opened again
    finally:
        await db.close()
