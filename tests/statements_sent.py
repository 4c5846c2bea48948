"""What a database is sent, for tests of how statements run: those SQLAlchemy's execution sends
(a statement marked ``direct``, ``storage/db/direct/``, runs on the driver and never reaches that
hook), and psycopg's round trips on PostgreSQL (several statements in one message are one).

On PostgreSQL a statement the process has run before goes as ``EXECUTE`` of one prepared on the
connection (``storage/db/direct/_prepared.py``): here it reads as the statement it runs, and what
prepares it (its ``PREPARE``, a ``DEALLOCATE ALL``, the first time's round trip of its own) is left
out: which statements are prepared depends on what the process ran before the test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, event

from consentry.storage.db import sqlite_connection
from consentry.storage.db.database import Database
from consentry.storage.db.direct import _prepared

__all__ = [
    "every_statement_sent",
    "postgres_round_trips",
    "sent_by_sqlalchemy",
    "statement_words",
    "statements_of",
]

_PREPARING = (
    "PREPARE ",
    "DEALLOCATE ",
    "SAVEPOINT consentry_prepare",
    "RELEASE SAVEPOINT consentry_prepare",
    "ROLLBACK TO SAVEPOINT consentry_prepare",
)
_EXECUTE = re.compile(r"EXECUTE (consentry_\d+)(.*)", re.DOTALL)


def _prepared_sql(name: str) -> str:
    return next(
        sql for (sql, _), form in _prepared._FORMS.items() if form is not None and form.name == name
    )


def statements_of(message: str) -> list[str]:
    """The statements of one message psycopg sends, as written: an ``EXECUTE`` as the SQL of
    the statement it runs (its arguments in a comment after it), what prepares one left out."""
    statements = []
    for statement in re.split(r";\n|; (?=PREPARE )", message):
        text = statement.strip()
        if not text or text.startswith(_PREPARING):
            continue
        executed = _EXECUTE.fullmatch(text)
        if executed:
            text = f"{_prepared_sql(executed[1])} /* {executed[2]} */"
        statements.append(text)
    return statements


def statement_words(message: str) -> list[str]:
    """The first word of each statement of a message (:func:`statements_of`)."""
    return [statement.split()[0].upper() for statement in statements_of(message)]


@contextmanager
def sent_by_sqlalchemy(db: Database) -> Iterator[list[str]]:
    """The first word of each statement SQLAlchemy's execution sends, on SQLite on ``db``'s
    engine; on PostgreSQL on any (none runs a statement of ``db``'s: its connections run every
    one on psycopg, ``storage/db/postgres_connection.py``)."""
    engine: Any = Engine if db.is_postgres else db._sqlite_writer._engine  # type: ignore[union-attr]
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement.split()[0])

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def postgres_round_trips(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every round trip psycopg makes from here on, as the first word of each statement it
    sends (a message of several statements is one round trip)."""
    seen: list[list[str]] = []
    execute = psycopg.AsyncCursor.execute
    commit, rollback = psycopg.AsyncConnection.commit, psycopg.AsyncConnection.rollback

    async def executed(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        words = statement_words(str(query))
        if words:  # not a statement's first preparing
            seen.append(words)
        return await execute(self, query, *args, **kw)

    def ended(word: str, end: Any) -> Any:
        async def ending(self: psycopg.AsyncConnection[Any]) -> None:
            if self.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                seen.append([word])  # psycopg sends nothing when no transaction is open
            await end(self)

        return ending

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", executed)
    monkeypatch.setattr(psycopg.AsyncConnection, "commit", ended("COMMIT", commit))
    monkeypatch.setattr(psycopg.AsyncConnection, "rollback", ended("ROLLBACK", rollback))
    return seen


@contextmanager
def every_statement_sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The text of every statement sent from here on, on either database: through SQLAlchemy's
    execution (any engine: SQLite's statements not marked ``direct``), on sqlite3 directly
    (those marked ``direct``) and by psycopg (every PostgreSQL message, whole)."""
    seen: list[str] = []
    execute = psycopg.AsyncCursor.execute
    run_direct = sqlite_connection.run_direct

    def ran_direct(connection: Any, statement: Any, parameters: Any) -> Any:
        result = run_direct(connection, statement, parameters)
        if result is not None:
            seen.append(str(statement.compile(dialect=connection.dialect)))
        return result

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    async def executed(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        statements = statements_of(str(query))
        if statements:
            seen.append(";\n".join(statements))
        return await execute(self, query, *args, **kw)

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.AsyncCursor, "execute", executed)
        patched.setattr(sqlite_connection, "run_direct", ran_direct)
        event.listen(Engine, "before_cursor_execute", record)
        try:
            yield seen
        finally:
            event.remove(Engine, "before_cursor_execute", record)
