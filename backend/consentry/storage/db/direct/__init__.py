"""The hot path's statements, run on the driver directly, past SQLAlchemy's execution.

A storage module marks a statement it builds once (``direct(audit.insert())``): a write, a
``SELECT`` or a ``RETURNING`` with no Python-side column default, run with a dict of parameters
(or a list of them, for a write). The first time it runs with a given set of parameter names on
a database it is compiled with SQLAlchemy (the SQL, its parameters' order, its types' bind
processors, the values it carries itself, its columns' result processors); from then on it costs
what the driver costs plus one tuple or dict of parameters, and its rows are what SQLAlchemy's
result would give (:class:`BufferedResult`). SQLAlchemy's execution of the same statement (an
execution context, the compiled cache's key, the result proxy, and on PostgreSQL the greenlet
bridge) cost several times the statement itself on the server's hot path. A form that needs
what SQLAlchemy's execution does (a default, an expanding ``IN``) still runs through it, so a
statement is written once for both databases.

- **SQLite**: :func:`run_direct` runs it on sqlite3, in the caller's transaction, at once.
- **PostgreSQL**, a statement whose result is read (``database.execute``):
  :func:`run_direct_on_postgres` runs it on the psycopg connection under SQLAlchemy's, in one
  message with what its transaction deferred (below).
- **PostgreSQL**: a statement whose result nobody reads (``database.execute_unread``, the
  ``pg_notify`` of ``notify_at_commit``) is deferred (:func:`defer_on_postgres`): kept with the
  transaction and sent with whatever else was deferred, bound on the client, in one message with
  the transaction's next statement or its ``COMMIT`` (:func:`install_postgres_deferral` hooks
  SQLAlchemy's engine; the checkpointer's own statements and :func:`run_direct_on_postgres` take
  what was deferred into their own message: :func:`deferred_sql_on_postgres`).
  One round trip for all of them, where each was one: on PostgreSQL a round trip through
  psycopg's async driver is the largest cost of a statement. A deferred statement that fails
  fails its transaction at that point, as the statement itself would have at commit. What was
  deferred is taken off the transaction only once its message is built (a value that cannot be
  bound fails before anything is lost).

  The transaction's ``BEGIN`` is deferred the same way: the engine's psycopg connections are in
  autocommit mode (psycopg sends no ``BEGIN`` of its own, which was a round trip of its own), and
  each SQLAlchemy transaction starts with a deferred
  ``BEGIN`` that goes with its first statement or its commit; a transaction that sent nothing
  sends nothing. A connection opened with :data:`NO_TRANSACTION` (``Database.read()``) defers no
  ``BEGIN``: each of its statements runs on its own, which under ``READ COMMITTED`` sees what a
  transaction's statement would (each statement takes its own snapshot there) for one round
  trip instead of three.

Which module holds what:

- ``_compiled_statement``: :func:`direct` (the mark), the statement compiled once per database
  and set of parameter names, and :class:`BufferedResult` (its rows as SQLAlchemy's result gives
  them).
- ``_run``: a direct statement whose result is read, run at once: :func:`run_direct` (SQLite)
  and :func:`run_direct_on_postgres` (with what its transaction deferred), or as the last
  statement of its transaction, sent with its ``COMMIT``, failing when it changes no row
  (:func:`commit_with_one_row_change_on_postgres`: a run's claim).
- ``_deferral``: what a PostgreSQL transaction deferred (its ``BEGIN`` included), the
  ``defer_*`` functions, :data:`NO_TRANSACTION`, and the mark of a transaction committed with
  its last statement.
- ``_messages``: the psycopg side of one message: values bound on the client
  (:func:`client_cursor`), :class:`AnsweringCursor`, :func:`postgres_driver`,
  :func:`returned_rows`, :func:`as_sqlalchemy_error`.
- ``_engine_hooks``: :func:`install_postgres_deferral`, SQLAlchemy's engine events that defer
  the ``BEGIN`` and send what was deferred with the next statement or the commit.
"""

from consentry.storage.db.direct._compiled_statement import BufferedResult, direct
from consentry.storage.db.direct._deferral import (
    NO_TRANSACTION,
    commit_on_postgres,
    committed_on_postgres,
    defer_on_postgres,
    defer_one_row_change_on_postgres,
    defer_sql_on_postgres,
    deferred_sql_on_postgres,
    refused_one_row_change,
)
from consentry.storage.db.direct._engine_hooks import install_postgres_deferral
from consentry.storage.db.direct._messages import (
    AnsweringCursor,
    as_sqlalchemy_error,
    client_cursor,
    postgres_driver,
    returned_rows,
)
from consentry.storage.db.direct._run import (
    commit_with_one_row_change_on_postgres,
    run_direct,
    run_direct_on_postgres,
)

__all__ = [
    "NO_TRANSACTION",
    "AnsweringCursor",
    "BufferedResult",
    "as_sqlalchemy_error",
    "client_cursor",
    "commit_on_postgres",
    "commit_with_one_row_change_on_postgres",
    "committed_on_postgres",
    "defer_on_postgres",
    "defer_one_row_change_on_postgres",
    "defer_sql_on_postgres",
    "deferred_sql_on_postgres",
    "direct",
    "install_postgres_deferral",
    "postgres_driver",
    "refused_one_row_change",
    "returned_rows",
    "run_direct",
    "run_direct_on_postgres",
]
