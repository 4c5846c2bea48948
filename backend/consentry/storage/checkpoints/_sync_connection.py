"""The connection of ``ConsentrySaver``'s synchronous methods (for code that runs a graph with
``invoke``): one of their own, outside the app's ``Database``, each operation its own
transaction. The saver opens it on first use, holds it under a lock and closes it
(``close_sync``)."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from consentry.storage.checkpoints._drivers import run_on_psycopg, run_on_sqlite3
from consentry.storage.checkpoints._operations import Operation
from consentry.storage.db.database import BUSY_TIMEOUT_SECONDS, libpq_url

__all__ = ["SyncConnection", "connect_sync", "run_in_transaction"]

SyncConnection = sqlite3.Connection | psycopg.Connection[Any]


def run_in_transaction(conn: SyncConnection, operation: Operation) -> Any:
    """Run ``operation`` on ``conn`` in a transaction of its own (on SQLite, ``IMMEDIATE``)."""
    if isinstance(conn, sqlite3.Connection):
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = run_on_sqlite3(conn, operation)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
        return result
    with conn.transaction():
        return run_on_psycopg(conn, operation)


def connect_sync(dialect: str, database_url: str) -> SyncConnection:
    if dialect == "sqlite":
        conn = sqlite3.connect(
            database_url.removeprefix("sqlite:///"),
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute("PRAGMA journal_mode=WAL")
        return conn
    return psycopg.connect(libpq_url(database_url), autocommit=True)
