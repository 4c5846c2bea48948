"""A full disk is told apart from other database errors (``is_storage_full``): SQLite's
``SQLITE_FULL`` and PostgreSQL's ``disk_full``, however the driver's error is wrapped; it is a
kind of unavailability (the same write succeeds later), and nothing else counts as it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import exc as sa_exc

from consentry.storage.db.database import is_database_unavailable, is_storage_full, is_write_refused


def _sqlite_full(tmp_path: Path) -> sqlite3.Error:
    """The error a real SQLite raises when its file cannot grow (``max_page_count`` reached)."""
    connection = sqlite3.connect(tmp_path / "full.db", isolation_level=None)
    connection.execute("CREATE TABLE t (x)")
    connection.execute("PRAGMA max_page_count = 2")
    try:
        connection.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    except sqlite3.Error as exc:
        return exc
    finally:
        connection.close()
    raise AssertionError("SQLite stored a row larger than its file may grow")


def _wrapped(orig: BaseException) -> sa_exc.OperationalError:
    return sa_exc.OperationalError("INSERT …", None, orig)


def test_sqlite_full_is_storage_full_wrapped_or_not(tmp_path: Path) -> None:
    full = _sqlite_full(tmp_path)
    assert full.sqlite_errorname == "SQLITE_FULL"

    assert is_storage_full(full)
    assert is_storage_full(_wrapped(full))
    assert is_database_unavailable(_wrapped(full))


def test_postgres_disk_full_is_storage_full() -> None:
    disk_full = psycopg.errors.DiskFull("could not extend file: No space left on device")
    assert disk_full.sqlstate == "53100"

    assert is_storage_full(_wrapped(disk_full))
    assert is_database_unavailable(_wrapped(disk_full))


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(sqlite3.OperationalError("database is locked")),
        _wrapped(psycopg.errors.AdminShutdown("terminating connection")),
        _wrapped(psycopg.errors.OutOfMemory("out of memory")),
        sa_exc.IntegrityError("INSERT …", None, sqlite3.IntegrityError("UNIQUE constraint failed")),
        RuntimeError("no space left on device"),
    ],
)
def test_other_errors_are_not_storage_full(error: BaseException) -> None:
    assert not is_storage_full(error)


def _sqlite_error(tmp_path: Path, make: str) -> sqlite3.Error:
    """A real error of SQLite's: ``locked`` (another connection holds the write lock) or
    ``wrong`` (a statement that is wrong, which SQLite also reports as an operational error)."""
    path = tmp_path / f"{make}.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        if make == "locked":
            holder.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO t VALUES (1)")
        else:
            other.execute("INSERT INTO no_such_table VALUES (1)")
    except sqlite3.Error as exc:
        return exc
    finally:
        other.close()
        holder.close()
    raise AssertionError(f"SQLite raised nothing for {make!r}")


def test_sqlite_refusing_a_write_for_now_is_told_from_a_wrong_statement(tmp_path: Path) -> None:
    """``is_write_refused``: a run that meets it stops and is continued once SQLite takes writes
    again; a wrong statement would fail the same way every time, so it fails the run."""
    locked = _sqlite_error(tmp_path, "locked")
    wrong = _sqlite_error(tmp_path, "wrong")
    assert isinstance(wrong, sqlite3.OperationalError)

    assert is_write_refused(_wrapped(locked))
    assert is_write_refused(_wrapped(_sqlite_full(tmp_path)))
    assert not is_write_refused(_wrapped(wrong))
    assert not is_write_refused(_wrapped(psycopg.errors.DiskFull("no space left on device")))
