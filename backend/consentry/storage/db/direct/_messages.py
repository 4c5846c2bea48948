"""The psycopg side of one message: statements bound on the client into one query (those run
before as ``EXECUTE`` of a statement prepared on the connection: ``_prepared``), the cursor that
answers with the caller's statement's result, and psycopg's errors as SQLAlchemy's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import Transformer
from sqlalchemy import exc as sa_exc

from consentry.storage.db.direct._prepared import (
    PreparedMessage,
    Quoting,
    is_prepared,
    kept_on,
    preparable,
    prepare_new,
    prepared_message,
)

__all__ = [
    "AnsweringCursor",
    "PreparedMessage",
    "as_sqlalchemy_error",
    "client_cursor",
    "execute_alone",
    "is_prepared",
    "one_message",
    "preparable",
    "prepare_new",
    "returned_rows",
    "send_message",
    "statement_cursor",
]

Statements = Sequence[tuple[str, Any]]
"""Statements with their parameters (None: none), as psycopg takes them (``%(name)s``)."""


_ROWS = (psycopg.pq.ExecStatus.TUPLES_OK, psycopg.pq.ExecStatus.SINGLE_TUPLE)


def returned_rows(cursor: psycopg.AsyncCursor[Any]) -> bool:
    """Whether the statement ``cursor`` ran returned rows (``cursor.description`` says so too,
    after building an object per column: 2–3% of a conversation's CPU on PostgreSQL)."""
    result = cursor.pgresult
    return result is not None and result.status in _ROWS


_CLIENT_CURSOR = "_consentry_client_cursor"


def client_cursor(driver: psycopg.AsyncConnection[Any]) -> psycopg.AsyncClientCursor[Any]:
    """A cursor that binds values on the client (``mogrify``), one a connection, kept on it
    (a cache keyed by the connection would keep it alive: the cursor refers to it): a new
    cursor a statement, with its adapters, cost half as much again (15 against 10 µs)."""
    return kept_on(driver, _CLIENT_CURSOR, lambda: psycopg.AsyncClientCursor(driver))


_QUOTING = "_consentry_quoting"


def _quoting(driver: psycopg.AsyncConnection[Any]) -> Quoting:
    """psycopg's quoting of one value for ``driver`` (``Transformer.as_literal``: what
    ``mogrify`` writes for it, in the connection's encoding), kept on the connection like its
    cursor: a prepared statement's ``EXECUTE`` binds its values with it, without ``mogrify``
    reading the statement again (2.9 against 0.3 µs for one value, 13 against 7 µs for ten)."""
    return kept_on(
        driver,
        _QUOTING,
        lambda: Quoting(Transformer.from_context(driver).as_literal, driver.info.encoding),
    )


def one_message(driver: psycopg.AsyncConnection[Any], statements: Statements) -> PreparedMessage:
    """The statements as one query: their parameters bound by psycopg on the client
    (``ClientCursor.mogrify``, psycopg's own quoting), those prepared as ``EXECUTE``
    (``_prepared``), so that the simple query protocol sends them in one message, answered in
    one round trip (a pipeline did the same with a message, a flush and a wait per statement,
    which cost more than the round trips it saved). Call :func:`prepare_new` before it."""
    return prepared_message(driver, statements, client_cursor(driver).mogrify, _quoting(driver))


async def send_message(
    cursor: AnsweringCursor, message: PreparedMessage, *, answer: int | None = None
) -> None:
    """Run ``message`` on ``cursor``, which then stands on the result of the statement at
    ``answer`` (counted among the message's statements, after what prepares them; None: the
    last). When it fails or is cancelled, its connection prepares again if it must
    (:meth:`PreparedMessage.failed`)."""
    cursor.answer = -1 if answer is None else message.offset + answer
    try:
        await cursor.execute(message.text)
    except BaseException as exc:
        message.failed(cursor.connection, exc)
        raise


async def execute_alone(cursor: AnsweringCursor, sql: str, parameters: Any) -> None:
    """Run one statement of the caller's on its own, bound by psycopg on the server: the cursor
    stands on its last result, whatever message the connection sent before (its cursor is
    shared: :func:`statement_cursor`)."""
    cursor.answer = -1
    await cursor.execute(sql, parameters)


def as_sqlalchemy_error(exc: psycopg.Error, sql: str) -> sa_exc.StatementError:
    """A psycopg error as SQLAlchemy raises it (``IntegrityError``, ``OperationalError``…),
    naming the statement's SQL (never its parameters)."""
    return sa_exc.DBAPIError.instance(sql, None, exc, psycopg.Error, hide_parameters=True)


class AnsweringCursor(psycopg.AsyncCursor[Any]):
    """After a message of several statements (what a transaction deferred, the statement its
    caller runs, maybe a ``COMMIT``), the cursor stands on the result of the statement at
    ``answer`` (default: the last, the caller's)."""

    answer: int = -1

    def _set_results(self, results: list[Any]) -> None:
        # psycopg's own (3.3) selects the first result, and ``nextset()`` each of the others in
        # turn, every one at the cost of its loaders and row maker: a few per cent of a
        # conversation's CPU on PostgreSQL. Straight to the answer instead.
        if self._execmany_returning is None and len(results) > 1:
            self._results[:] = results
            self._select_current_result(self.answer % len(results))
        else:
            super()._set_results(results)


_STATEMENT_CURSOR = "_consentry_statement_cursor"


def statement_cursor(driver: psycopg.AsyncConnection[Any]) -> AnsweringCursor:
    """The cursor that runs the connection's messages, one a connection, kept on it like its
    client cursor: a new cursor a statement cost its adapters' and transformer's making (5–8 µs).
    One transaction uses a connection at a time, and a result is read before the next message
    (``send_message`` sets its answer every time, :func:`execute_alone` too). It holds its last
    result until the next message: one a pooled connection at most."""
    return kept_on(driver, _STATEMENT_CURSOR, lambda: AnsweringCursor(driver))
