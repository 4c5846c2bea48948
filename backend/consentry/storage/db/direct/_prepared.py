"""Statements prepared once a connection, and run as ``EXECUTE`` in one message.

A transaction's statements go in one message of the simple query protocol, their values bound
on the client (``_messages``). PostgreSQL then parses, analyses and plans every one of them at
every run, and that was most of the time it spent on a conversation: 6.5 ms of its statements'
durations against the naive server's 1.3 on the same conversations (``log_min_duration_statement``,
``consentry_flow`` at C=1), the naive server's statements being prepared (psycopg's, through
LangGraph's ``AsyncPostgresSaver``). Here a statement this process has run before is prepared on
each connection once (``PREPARE consentry_3 AS … $1 …``, the first time in the message that
first runs it there) and then sent as ``EXECUTE consentry_3('…', 42)``: still one message a
transaction, its values still bound on the client, and PostgreSQL plans it once a connection.
In a loop of a two-statement transaction (an event and a checkpoint), that took a transaction
from 370 to 220 µs and the client's CPU from 125 to 116 µs; psycopg's pipeline with prepared
statements took it to 230 µs for 185 µs of the client's CPU.

- **Which statements.** One seen :data:`SIGHTINGS_BEFORE_PREPARED` times by this process (the
  SQL as psycopg takes it, ``%(name)s`` or ``%s``) that starts as a query PostgreSQL can prepare
  does: the statements a conversation runs, not a migration's. At most
  :data:`MOST_STATEMENTS` a process.
- **Learning it can be.** The first time, it is prepared in a round trip of its own (in a
  transaction, within a savepoint): a statement whose parameters' types PostgreSQL cannot tell
  (``SELECT $1``) fails there, harming nothing, and is never prepared again. A statement that
  prepared once prepares on any connection, so from then on its ``PREPARE`` goes in the
  message that first runs it on a connection, in front of its ``EXECUTE``.
- **What a connection holds.** The names prepared on it are kept on the connection. A
  ``PREPARE`` is not undone by a rollback, but a message that fails (or is not sent) may or may
  not have run the ``PREPARE`` it held: the connection's next message then starts with
  ``DEALLOCATE ALL`` and prepares again. psycopg prepares nothing on these connections
  (``prepare_threshold=None``, ``postgres_pool``), so nothing of its own is lost.
- **Plans.** PostgreSQL plans a prepared statement for its values the first five runs, then keeps
  a generic plan if it costs no more (``plan_cache_mode``): every statement prepared here finds
  its rows by key.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

__all__ = [
    "MOST_STATEMENTS",
    "SIGHTINGS_BEFORE_PREPARED",
    "PreparedMessage",
    "is_prepared",
    "prepare_new",
    "prepared_message",
]

SIGHTINGS_BEFORE_PREPARED = 2
"""Runs of a statement by this process before it is prepared: a one-off is not."""
MOST_STATEMENTS = 300
"""Statements prepared by a process at most (each connection holds those it ran)."""

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")
_PREPARABLE = re.compile(r"\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|VALUES)\b", re.IGNORECASE)
_SESSION = "_consentry_prepared"
_SAVEPOINT = "consentry_prepare"
_LEARNING_STATES = (psycopg.pq.TransactionStatus.IDLE, psycopg.pq.TransactionStatus.INTRANS)
_NUMBERS = itertools.count(1)
_CANNOT_PREPARE = ("42", "0A")
"""SQLSTATE classes of a ``PREPARE`` refused for the statement itself (a parameter whose type
PostgreSQL cannot tell, a statement it cannot prepare); any other error is the connection's."""


@dataclass(frozen=True, slots=True)
class _Form:
    name: str
    prepare: str
    """``PREPARE name AS …``, its placeholders numbered (``$1``)."""
    execute: str
    """``EXECUTE name(…)`` with the statement's placeholders, as psycopg binds them."""


@dataclass(slots=True)
class _Session:
    """What one connection has prepared."""

    names: set[str] = field(default_factory=set)
    uncertain: bool = False
    """A message holding a ``PREPARE`` or a ``DEALLOCATE`` failed: which ran is not known."""


_FORMS: dict[str, _Form | None] = {}
"""By SQL: its prepared form, or None when PostgreSQL could not prepare it."""
_SIGHTINGS: dict[str, int] = {}


def _session(driver: psycopg.AsyncConnection[Any]) -> _Session:
    session: _Session | None = getattr(driver, _SESSION, None)
    if session is None:
        session = _Session()
        setattr(driver, _SESSION, session)
    return session


def _form(sql: str, name: str) -> _Form:
    numbers: dict[str, int] = {}
    placeholders: list[str] = []

    def number(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "%%":
            return "%"
        key = match.group(1) or str(len(numbers))  # each %s a parameter of its own
        if key not in numbers:
            numbers[key] = len(numbers) + 1
            placeholders.append(text)
        return f"${numbers[key]}"

    numbered = _PLACEHOLDER.sub(number, sql)
    arguments = f"({', '.join(placeholders)})" if placeholders else ""
    return _Form(name, f"PREPARE {name} AS {numbered}", f"EXECUTE {name}{arguments}")


def _to_learn(sql: str) -> bool:
    """Count a sighting of ``sql``; whether it is now to be prepared for the first time."""
    if sql in _FORMS or len(_FORMS) >= MOST_STATEMENTS or not _PREPARABLE.match(sql):
        return False
    seen = _SIGHTINGS.get(sql, 0) + 1
    if seen < SIGHTINGS_BEFORE_PREPARED:
        if len(_SIGHTINGS) < 10 * MOST_STATEMENTS:
            _SIGHTINGS[sql] = seen
        return False
    _SIGHTINGS.pop(sql, None)
    return True


async def prepare_new(
    driver: psycopg.AsyncConnection[Any], statements: Iterable[tuple[str, Any]]
) -> None:
    """Before a message: prepare, each in a round trip of its own, the statements seen often
    enough that this process has not yet prepared anywhere (see the module's docstring). In a
    transaction, within a savepoint, so that one PostgreSQL cannot prepare fails nothing."""
    status = driver.info.transaction_status
    if status not in _LEARNING_STATES:
        return
    learning = [sql for sql, parameters in statements if parameters is not None and _to_learn(sql)]
    in_transaction = status == psycopg.pq.TransactionStatus.INTRANS
    for sql in learning:
        if sql in _FORMS:  # learned meanwhile, on another connection
            continue
        form = _form(sql, f"consentry_{next(_NUMBERS)}")
        try:
            if in_transaction:
                await driver.execute(f"SAVEPOINT {_SAVEPOINT}; {form.prepare}")
            else:
                await driver.execute(form.prepare)
        except psycopg.Error as exc:
            if not (exc.sqlstate or "").startswith(_CANNOT_PREPARE):
                raise
            if in_transaction:
                await driver.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            _FORMS[sql] = None
            continue
        if in_transaction:
            await driver.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
        _FORMS[sql] = form
        _session(driver).names.add(form.name)


def is_prepared(sql: str) -> bool:
    """Whether this process runs ``sql`` as a prepared statement."""
    return _FORMS.get(sql) is not None


@dataclass(frozen=True, slots=True)
class PreparedMessage:
    """Statements as one query, prepared ones as ``EXECUTE``."""

    text: str
    offset: int
    """Results before the first statement's (a ``DEALLOCATE ALL``, ``PREPARE``\\ s)."""
    prepares: bool
    """It prepares (or deallocates): if it fails, the connection's names are uncertain."""

    def failed(self, driver: psycopg.AsyncConnection[Any]) -> None:
        """The message failed or was not sent."""
        if self.prepares:
            _session(driver).uncertain = True


def prepared_message(
    driver: psycopg.AsyncConnection[Any],
    statements: Sequence[tuple[str, Any]],
    mogrify: Callable[[str, Any], str],
) -> PreparedMessage:
    """``statements`` as one query: those this process has prepared as ``EXECUTE``, their
    ``PREPARE`` first when the connection has not run it, the others bound by ``mogrify``
    (psycopg's ``ClientCursor.mogrify``). The ``PREPARE``\\ s go at the front, so that the
    statements' results keep their order after :attr:`PreparedMessage.offset` of theirs."""
    session = _session(driver)
    known = set() if session.uncertain else session.names
    front: list[str] = ["DEALLOCATE ALL"] if session.uncertain else []
    named: list[str] = []
    parts: list[str] = []
    for sql, parameters in statements:
        form = _FORMS.get(sql) if parameters is not None else None
        if form is None:
            parts.append(sql if parameters is None else mogrify(sql, parameters))
            continue
        if form.name not in known and form.name not in named:
            front.append(form.prepare)
            named.append(form.name)
        parts.append(mogrify(form.execute, parameters))
    # Every value bound (a value that cannot be raises before): what the connection holds
    # once the message has run.
    if session.uncertain:
        session.names.clear()
        session.uncertain = False
    session.names.update(named)
    return PreparedMessage(";\n".join([*front, *parts]), len(front), bool(front))
