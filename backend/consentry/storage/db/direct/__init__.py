"""Statements run on the driver directly, past SQLAlchemy's execution.

A storage module marks a statement it builds once (``direct(audit.insert())``): a write, a
``SELECT`` or a ``RETURNING`` with no Python-side column default, run with a dict of parameters
(or a list of them, for a write). The first time it runs with a given set of parameter names on
a database it is compiled with SQLAlchemy (the SQL, its parameters' order, its types' bind
processors, the values it carries itself, its columns' result processors); from then on it costs
what the driver costs plus one tuple or dict of parameters, and its rows are what SQLAlchemy's
result would give (:class:`BufferedResult`). SQLAlchemy's execution of the same statement (an
execution context, the compiled cache's key, the result proxy) cost several times the statement
itself on the server's hot path.

- **SQLite**: :func:`run_direct` runs a direct statement on sqlite3, in the caller's
  transaction; a form that needs what SQLAlchemy's execution does (a default, an expanding
  ``IN``), and any statement not marked, runs through SQLAlchemy's execution.
- **PostgreSQL**: every statement runs on psycopg (``storage.db.postgres_connection``), one
  marked direct as compiled once, any other compiled through SQLAlchemy's compiled cache, with
  its values, defaults and expanding parameters as SQLAlchemy's execution would give them, for
  the one row it runs with (:func:`compiled_for_driver`). Several go in one message, their
  values bound on the client (:func:`one_message`), those this process runs often prepared
  once a connection and sent as ``EXECUTE`` (:func:`prepare_new`), and the cursor answers with
  the last one's result, or the one the caller names (:class:`AnsweringCursor`).

Which module holds what:

- ``_compiled_statement``: :func:`direct` (the mark), the statement compiled once per database
  and set of parameter names, :func:`compiled_for_driver`, and :class:`BufferedResult` (its
  rows as SQLAlchemy's result gives them).
- ``_run``: :func:`run_direct` (SQLite).
- ``_messages``: the psycopg side of one message: values bound on the client
  (:func:`client_cursor`, :func:`one_message`), :class:`AnsweringCursor` (one a connection:
  :func:`statement_cursor`), :func:`returned_rows`, :func:`as_sqlalchemy_error`.
- ``_prepared``: statements prepared once a connection (:func:`prepare_new`,
  :class:`PreparedMessage`).
"""

from consentry.storage.db.direct._compiled_statement import (
    BufferedResult,
    compiled_for_driver,
    direct,
)
from consentry.storage.db.direct._messages import (
    AnsweringCursor,
    PreparedMessage,
    as_sqlalchemy_error,
    client_cursor,
    execute_alone,
    is_prepared,
    one_message,
    preparable,
    prepare_new,
    returned_rows,
    send_message,
    statement_cursor,
)
from consentry.storage.db.direct._run import run_direct

__all__ = [
    "AnsweringCursor",
    "BufferedResult",
    "PreparedMessage",
    "as_sqlalchemy_error",
    "client_cursor",
    "compiled_for_driver",
    "direct",
    "execute_alone",
    "is_prepared",
    "one_message",
    "preparable",
    "prepare_new",
    "returned_rows",
    "run_direct",
    "send_message",
    "statement_cursor",
]
