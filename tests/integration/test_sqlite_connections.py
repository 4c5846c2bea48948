"""SQLite's connections (``sqlite_thread``, ``sqlite_connection``, ``Database`` on SQLite): one
write transaction at a time on the writer, reads on idle readers that never wait for it,
transactions on the loop's thread unless offloaded to the connection's own, a writer that waits
for another process's lock on its thread (the loop goes on), a failed or cancelled transaction
rolled back before its connection serves anyone else, results fetched whole, and threads that
end on ``close()``.

SQLite only, on a real file: PostgreSQL keeps SQLAlchemy's ``AsyncConnection``."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

import consentry.storage.db.database._database as database_module
from consentry.storage.db.database import Database, is_database_unavailable
from consentry.storage.db.sqlite_thread import SqliteThread

WAIT_SECONDS = 10.0
CONNECTION_THREADS = ("sqlite-writer", "sqlite-reader-")


async def _open(path: Path) -> Database:
    db = Database(f"sqlite:///{path}")
    await db.open()
    async with db.write() as conn:
        await conn.exec_driver_sql(
            "CREATE TABLE items (name TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)"
        )
    return db


@pytest_asyncio.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await _open(tmp_path / "x.db")
    try:
        yield database
    finally:
        await database.close()


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        return list((await conn.execute(text("SELECT name FROM items ORDER BY name"))).scalars())


async def _insert(db: Database, *names: str) -> None:
    """One write transaction inserting ``names`` in order."""
    async with db.write() as conn:
        for name in names:
            await conn.execute(text("INSERT INTO items (name) VALUES (:name)"), {"name": name})


async def _insert_then_fail(db: Database, name: str) -> None:
    async with db.write() as conn:
        await conn.execute(text("INSERT INTO items (name) VALUES (:name)"), {"name": name})
        raise RuntimeError("changed my mind")


def _connection_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(CONNECTION_THREADS)}


# --- Database.write() and Database.read() ---------------------------------------------------


async def test_a_committed_write_is_visible_to_a_later_read(db: Database) -> None:
    async with db.write() as conn:
        await conn.execute(text("INSERT INTO items (name, n) VALUES ('a', 1), ('b', 2)"))

    async with db.read() as conn:
        rows = (await conn.execute(text("SELECT name, n FROM items ORDER BY name"))).all()
    assert [tuple(row) for row in rows] == [("a", 1), ("b", 2)]


async def test_a_write_whose_block_raises_leaves_nothing_and_the_next_write_succeeds(
    db: Database,
) -> None:
    with pytest.raises(RuntimeError, match="changed my mind"):
        await _insert_then_fail(db, "discarded")
    assert await _names(db) == []

    await _insert(db, "kept")
    assert await _names(db) == ["kept"]


async def test_a_write_cancelled_midway_leaves_nothing_and_the_writer_is_usable_right_after(
    db: Database,
) -> None:
    inserted = asyncio.Event()

    async def write_then_hang() -> None:
        async with db.write() as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('cancelled')"))
            inserted.set()
            await asyncio.Event().wait()  # never set: the task is cancelled here

    task = asyncio.create_task(write_then_hang())
    async with asyncio.timeout(WAIT_SECONDS):
        await inserted.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await _insert(db, "next")  # no "cannot start a transaction within a transaction"
    assert await _names(db) == ["next"]


async def test_a_write_cancelled_while_its_statement_runs_is_rolled_back_before_the_next_write(
    db: Database,
) -> None:
    started, release = threading.Event(), threading.Event()

    def hold_the_thread(_connection: object) -> None:
        started.set()
        release.wait(WAIT_SECONDS)

    async def write_then_block_the_thread() -> None:
        async with db.write(offload=True) as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('cancelled')"))
            await conn.run_sync(hold_the_thread)

    task = asyncio.create_task(write_then_block_the_thread())
    assert await asyncio.to_thread(started.wait, WAIT_SECONDS)
    task.cancel()  # the caller gives up; the statement on the thread still runs to its end
    with pytest.raises(asyncio.CancelledError):
        await task

    next_write = asyncio.create_task(_insert(db, "next"))  # on the loop, after the rollback
    await asyncio.sleep(0.05)
    assert not next_write.done()
    release.set()
    async with asyncio.timeout(WAIT_SECONDS):
        await next_write
    assert await _names(db) == ["next"]


def _thread_name(_connection: object) -> str:
    return threading.current_thread().name


async def test_transactions_run_on_the_loops_thread_unless_offloaded(db: Database) -> None:
    loop_thread = threading.current_thread().name
    async with db.write() as conn:
        written_on = await conn.run_sync(_thread_name)
    async with db.read() as conn:
        read_on = await conn.run_sync(_thread_name)
    async with db.write(offload=True) as conn:
        offloaded_write_on = await conn.run_sync(_thread_name)
    async with db.read(offload=True) as conn:
        offloaded_read_on = await conn.run_sync(_thread_name)

    assert (written_on, read_on) == (loop_thread, loop_thread)
    assert offloaded_write_on == "sqlite-writer"
    assert offloaded_read_on.startswith("sqlite-reader-")


async def test_concurrent_write_transactions_never_interleave(db: Database) -> None:
    async with db.write() as conn:
        await conn.execute(text("INSERT INTO items (name, n) VALUES ('counter', 0)"))

    async def increment() -> None:
        async with db.write() as conn:
            n = await conn.scalar(text("SELECT n FROM items WHERE name = 'counter'"))
            await asyncio.sleep(0)  # give every other writer the chance to cut in
            await conn.execute(text("UPDATE items SET n = :n WHERE name = 'counter'"), {"n": n + 1})
            await asyncio.sleep(0)

    writers = 20
    async with asyncio.timeout(WAIT_SECONDS):
        await asyncio.gather(*(increment() for _ in range(writers)))

    async with db.read() as conn:
        assert await conn.scalar(text("SELECT n FROM items WHERE name = 'counter'")) == writers


async def test_a_read_keeps_its_snapshot_while_a_write_commits_in_between(db: Database) -> None:
    async with db.read() as reading:
        before = await reading.scalar(text("SELECT count(*) FROM items"))
        async with db.write() as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('committed meanwhile')"))
        during = await reading.scalar(text("SELECT count(*) FROM items"))

    async with db.read() as conn:
        after = await conn.scalar(text("SELECT count(*) FROM items"))
    assert (before, during, after) == (0, 0, 1)


async def test_a_read_does_not_wait_for_a_write_in_progress(db: Database) -> None:
    writing, finish = asyncio.Event(), asyncio.Event()

    async def write_and_hold() -> None:
        async with db.write() as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('uncommitted')"))
            writing.set()
            await finish.wait()

    task = asyncio.create_task(write_and_hold())
    try:
        async with asyncio.timeout(WAIT_SECONDS):
            await writing.wait()
            assert await _names(db) == []  # served while the write holds its transaction
    finally:
        finish.set()
        async with asyncio.timeout(WAIT_SECONDS):
            await task
    assert await _names(db) == ["uncommitted"]


async def test_results_are_fully_fetched_and_usable_after_the_transaction_ended(
    db: Database,
) -> None:
    async with db.write() as conn:
        await conn.execute(text("INSERT INTO items (name, n) VALUES ('a', 1), ('b', 2), ('c', 3)"))
        updated = await conn.execute(text("UPDATE items SET n = n + 10 WHERE n < 3"))
        returned = await conn.execute(
            text("UPDATE items SET n = n + 100 WHERE name IN ('a', 'c') RETURNING name, n")
        )
        deleted = await conn.execute(text("DELETE FROM items WHERE name = 'b'"))
        first = await conn.execute(text("SELECT name, n FROM items ORDER BY name"))
        every = await conn.execute(text("SELECT name, n FROM items ORDER BY name"))
        names = await conn.execute(text("SELECT name FROM items ORDER BY name"))
        mapped = await conn.execute(text("SELECT name, n FROM items ORDER BY name"))
        count = await conn.scalar(text("SELECT count(*) FROM items"))
        raw = await conn.exec_driver_sql("SELECT n FROM items WHERE name = ?", ("a",))

    async with db.write() as conn:  # the rows were fetched then, not now
        await conn.execute(text("DELETE FROM items"))

    assert (updated.rowcount, deleted.rowcount) == (2, 1)
    assert returned.rowcount == 2
    assert [tuple(row) for row in returned.all()] == [("a", 111), ("c", 103)]
    assert tuple(first.first() or ()) == ("a", 111)
    assert [tuple(row) for row in every.all()] == [("a", 111), ("c", 103)]
    assert names.scalars().all() == ["a", "c"]
    assert mapped.mappings().all() == [{"name": "a", "n": 111}, {"name": "c", "n": 103}]
    assert count == 2
    assert raw.scalar() == 111


async def test_an_sql_error_raises_integrity_error_and_rolls_the_transaction_back(
    db: Database,
) -> None:
    with pytest.raises(IntegrityError) as raised:
        await _insert(db, "first", "twice", "twice")

    assert "UNIQUE constraint failed" in str(raised.value)
    assert not is_database_unavailable(raised.value)  # a wrong statement, not an outage
    assert await _names(db) == []
    await _insert(db, "twice")
    assert await _names(db) == ["twice"]


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Database`` reads ``BUSY_TIMEOUT_SECONDS`` when it is built and when it connects."""
    monkeypatch.setattr(database_module, "BUSY_TIMEOUT_SECONDS", 0.05)


@pytest.fixture
def other_process_writing(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection to the same file, as another process would hold it."""
    other = sqlite3.connect(tmp_path / "x.db", isolation_level=None, check_same_thread=False)
    try:
        yield other
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


@pytest.mark.usefixtures("short_busy_timeout")
async def test_a_database_locked_past_the_busy_timeout_counts_as_unavailable(
    db: Database, other_process_writing: sqlite3.Connection
) -> None:
    other_process_writing.execute("BEGIN IMMEDIATE")

    with pytest.raises(OperationalError, match="database is locked") as raised:
        await asyncio.wait_for(_insert(db, "blocked"), WAIT_SECONDS)

    assert is_database_unavailable(raised.value)
    other_process_writing.execute("ROLLBACK")
    assert await _names(db) == []


@pytest.mark.usefixtures("short_busy_timeout")
async def test_the_writer_keeps_its_transactions_atomic_after_a_database_is_locked_error(
    db: Database, other_process_writing: sqlite3.Connection
) -> None:
    other_process_writing.execute("BEGIN IMMEDIATE")
    with pytest.raises(OperationalError, match="database is locked"):
        await asyncio.wait_for(_insert(db, "blocked"), WAIT_SECONDS)
    other_process_writing.execute("ROLLBACK")

    with pytest.raises(RuntimeError, match="changed my mind"):
        await _insert_then_fail(db, "discarded")
    assert await _names(db) == []


async def test_a_writer_finding_another_process_lock_waits_on_its_thread_not_the_loop(
    db: Database, other_process_writing: sqlite3.Connection
) -> None:
    other_process_writing.execute("BEGIN IMMEDIATE")
    writer = asyncio.create_task(_insert(db, "after the lock"))
    ticks = 0
    while ticks < 20:  # the loop keeps serving while the write waits for the lock
        await asyncio.sleep(0.01)
        ticks += 1
    assert not writer.done()
    assert await _names(db) == []  # and reads go on

    other_process_writing.execute("COMMIT")
    async with asyncio.timeout(WAIT_SECONDS):
        await writer
    assert await _names(db) == ["after the lock"]
    async with db.write() as conn:  # the next write is on the loop again, with no busy wait
        assert await conn.run_sync(_thread_name) == threading.current_thread().name


async def test_a_write_cancelled_while_waiting_for_another_process_lock_leaves_nothing(
    db: Database, other_process_writing: sqlite3.Connection
) -> None:
    other_process_writing.execute("BEGIN IMMEDIATE")
    writer = asyncio.create_task(_insert(db, "given up"))
    await asyncio.sleep(0.1)
    writer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writer
    next_write = asyncio.create_task(_insert(db, "next"))  # waits for the thread's rollback
    await asyncio.sleep(0.05)
    other_process_writing.execute("COMMIT")

    async with asyncio.timeout(WAIT_SECONDS):
        await next_write
    assert await _names(db) == ["next"]


async def test_close_ends_the_connection_threads(tmp_path: Path) -> None:
    before = _connection_threads()
    db = await _open(tmp_path / "x.db")
    started = _connection_threads() - before
    assert sorted(t.name for t in started) == [
        "sqlite-reader-0",
        "sqlite-reader-1",
        "sqlite-writer",
    ]

    await db.close()

    assert not started & set(threading.enumerate())


# --- SqliteThread ----------------------------------------------------------------------------


@pytest_asyncio.fixture
async def worker_thread() -> AsyncIterator[SqliteThread]:
    thread = SqliteThread("sqlite-test")
    thread.start()
    try:
        yield thread
    finally:
        await thread.stop()


async def test_sqlite_thread_runs_calls_in_the_order_they_were_handed_over(
    worker_thread: SqliteThread,
) -> None:
    ran: list[tuple[int, str]] = []

    def record(n: int) -> None:
        ran.append((n, threading.current_thread().name))

    for n in range(5):
        worker_thread.post(lambda n=n: record(n))
    async with asyncio.timeout(WAIT_SECONDS):
        await asyncio.gather(*(worker_thread.call(record, n) for n in range(5, 10)))

    assert ran == [(n, "sqlite-test") for n in range(10)]


async def test_sqlite_thread_hands_an_exception_to_the_caller_with_its_type(
    worker_thread: SqliteThread,
) -> None:
    def look_up() -> object:
        return {}["missing"]

    with pytest.raises(KeyError, match="missing"):
        await worker_thread.call(look_up)
    assert await worker_thread.call(lambda: "still serving") == "still serving"


async def test_sqlite_thread_still_runs_a_call_whose_caller_was_cancelled(
    worker_thread: SqliteThread,
) -> None:
    busy, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold() -> None:
        busy.set()
        release.wait(WAIT_SECONDS)

    worker_thread.post(hold)
    assert await asyncio.to_thread(busy.wait, WAIT_SECONDS)
    caller = asyncio.create_task(worker_thread.call(ran.append, "queued"))
    await asyncio.sleep(0)  # one step: the call is on the queue, behind hold()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller

    release.set()
    async with asyncio.timeout(WAIT_SECONDS):
        await worker_thread.call(lambda: None)  # runs after the cancelled caller's call
    assert ran == ["queued"]


async def test_sqlite_thread_logs_a_failed_post_and_keeps_running(
    worker_thread: SqliteThread, caplog: pytest.LogCaptureFixture
) -> None:
    def fail() -> None:
        raise ValueError("posted and failed")

    with caplog.at_level(logging.WARNING, logger="consentry.storage.db.sqlite_thread"):
        worker_thread.post(fail)
        async with asyncio.timeout(WAIT_SECONDS):
            assert await worker_thread.call(lambda: "still serving") == "still serving"

    assert [r.levelno for r in caplog.records if "posted and failed" in r.getMessage()] == [
        logging.WARNING
    ]


async def test_sqlite_thread_stop_runs_what_is_queued_then_ends_the_thread() -> None:
    thread = SqliteThread("sqlite-stopping")
    thread.start()
    ran: list[int] = []
    for n in range(3):
        thread.post(lambda n=n: ran.append(n))

    async with asyncio.timeout(WAIT_SECONDS):
        await thread.stop()

    assert ran == [0, 1, 2]
    assert "sqlite-stopping" not in {t.name for t in threading.enumerate()}


def test_sqlite_thread_outlives_a_caller_whose_event_loop_closed_before_its_call_ended() -> None:
    """Regression: handing a result back to a closed loop raised on the thread and ended it,
    so every later call waited forever."""
    worker = SqliteThread("sqlite-test-closed-loop")
    worker.start()
    release = threading.Event()

    async def abandon_a_call() -> None:
        call = asyncio.ensure_future(worker.call(release.wait, 10))
        await asyncio.sleep(0)
        call.cancel()

    asyncio.run(abandon_a_call())  # its loop is closed while the call still runs
    release.set()

    async def call_again() -> str:
        async with asyncio.timeout(10):
            answer = await worker.call(lambda: "still here")
        await worker.stop()
        return answer

    assert asyncio.run(call_again()) == "still here"


async def test_a_write_opened_inside_another_in_the_same_task_fails_instead_of_waiting_forever(
    tmp_path: Path,
) -> None:
    db = Database(f"sqlite:///{tmp_path / 'nested.db'}")
    await db.open()
    try:
        async with db.write() as outer:
            await outer.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            with pytest.raises(RuntimeError, match="inside another one"):
                async with db.write():
                    pass
        async with db.write() as conn:  # the writer is free again
            await conn.exec_driver_sql("INSERT INTO t (id) VALUES (1)")
        async with db.read() as conn:
            assert (await conn.exec_driver_sql("SELECT count(*) FROM t")).scalar() == 1
    finally:
        await db.close()


async def test_the_writers_first_transaction_is_atomic(tmp_path: Path) -> None:
    """Regression: the connection's set-up statement once left SQLAlchemy's connection in a
    transaction, so the writer's first transaction (the migrations, in the server) ran without
    its BEGIN IMMEDIATE, each statement committed on its own."""
    db = Database(f"sqlite:///{tmp_path / 'first.db'}")
    await db.open()
    try:

        async def create_then_fail() -> None:
            async with db.write() as conn:
                await conn.exec_driver_sql("CREATE TABLE items (name TEXT PRIMARY KEY)")
                raise RuntimeError("after the first statement")

        with pytest.raises(RuntimeError, match="after the first statement"):
            await create_then_fail()
        async with db.read() as conn:
            tables = await conn.scalar(
                text("SELECT count(*) FROM sqlite_master WHERE name = 'items'")
            )
        assert tables == 0
    finally:
        await db.close()


async def test_a_read_transaction_cannot_write(db: Database) -> None:
    """On PostgreSQL a read's statements run without a transaction (``postgres_connection``):
    SQLite's readers refuse writes, so a read that writes fails in every test."""
    with pytest.raises(OperationalError, match="readonly"):
        async with db.read() as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('in a read')"))
    assert await _names(db) == []
