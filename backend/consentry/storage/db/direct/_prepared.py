"""Statements prepared once a connection, and run as ``EXECUTE`` in one message.

A transaction's statements go in one message of the simple query protocol, their values bound on the
client (``_messages``). PostgreSQL then parses, analyses and plans every one of them at every run,
and that was most of the time it spent on a conversation: 6.5 ms of its statements' durations
against the naive server's 1.3 on the same conversations (``log_min_duration_statement``,
``consent_flow`` at C=1), the naive server's statements being prepared (psycopg's, through
LangGraph's ``AsyncPostgresSaver``). Here a statement of the hot path is prepared on each connection
once (``PREPARE consentry_3 AS UPDATE runs SET seq = $2 WHERE id = $1``) and then sent as ``EXECUTE
consentry_3('r-1', 42)``: still one message a transaction, its values still bound on the client, and
PostgreSQL plans it once a connection. In a loop of a two-statement transaction (an event and a
checkpoint), that took a transaction from 370 to 220 µs and the client's CPU from 125 to 116 µs;
psycopg's pipeline with prepared statements took it to 230 µs for 185 µs of the client's CPU;
planning each run again (``plan_cache_mode = force_custom_plan``) gave back most of the gain.

- **Which statements.** Those a module declares :func:`preparable`: a statement marked
  ``direct`` (compiled once, ``_compiled_statement``), the checkpointer's, a notification's. A
  statement compiled for one call (a search with its filters, a cold path) is not: its values
  would become parameters of a plan made once. A preparable statement is prepared the second time
  this process runs it; at most :data:`MOST_STATEMENTS` are.
- **Plans.** PostgreSQL plans a prepared statement for its values the first five runs, then may
  keep a generic plan, made without them (``plan_cache_mode``). A generic plan cannot use a
  partial index whose condition a parameter decides (``status = $1`` for ``WHERE status =
  'pending'``), so the values a ``direct`` statement carries itself (``status == "pending"``)
  are written into the prepared statement as literals, each set of those values a prepared
  statement of its own (one SQL may be two statements: the claim of an idle thread and that of
  a waiting one, ``leases``); only what changes from run to run is a parameter.
- **Learning it can be.** The first time, it is prepared in a round trip of its own (in a
  transaction, within a savepoint): a statement whose parameters' types PostgreSQL cannot tell
  (``SELECT $1``) fails there, harming nothing, and is never prepared again. A statement that
  prepared once prepares on any connection, so from then on its ``PREPARE`` goes in front of the
  message that first runs it on another connection.
- **What a connection holds.** The names prepared on it are kept on the connection. A
  ``PREPARE`` is not undone by a rollback, but a message that fails (or is not sent) may or may
  not have run the ``PREPARE`` it held; and a statement prepared before a migration changed its
  result's type fails, with its transaction (``cached plan must not change result type``: once a
  connection). Either way the connection's next message starts with ``DEALLOCATE ALL`` and
  prepares again. psycopg prepares nothing on
  these connections (``prepare_threshold=None``, ``postgres_pool``), so nothing of its own is
  lost.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg.sql import Literal

__all__ = [
    "MOST_STATEMENTS",
    "PreparedMessage",
    "Quoting",
    "is_prepared",
    "kept_on",
    "preparable",
    "prepare_new",
    "prepared_message",
]

T = TypeVar("T")

MOST_STATEMENTS = 300
"""Statements prepared by a process at most (each connection holds those it ran)."""

_PARAMETER = re.compile(r"%\((\w+)\)s|%s|%%")
_PREPARABLE = re.compile(r"\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|VALUES)\b", re.IGNORECASE)
_SESSION = "_consentry_prepared"
_SAVEPOINT = "consentry_prepare"
_LEARNING_STATES = (psycopg.pq.TransactionStatus.IDLE, psycopg.pq.TransactionStatus.INTRANS)
_NUMBERS = itertools.count(1)
_REFUSED = ("42", "0A")
"""SQLSTATE classes of a ``PREPARE`` refused (any other error is the connection's)."""
_CANNOT_PREPARE = frozenset({"42P18", "42P08", "42601", "42804", "0A000"})
"""A ``PREPARE`` refused for the statement itself: a parameter whose type PostgreSQL cannot tell
or that it cannot tell apart, a statement it cannot read or prepare."""
_PREPARED_GONE = frozenset({"0A000", "26000", "42P05"})
"""A prepared statement whose result's type changed, one missing, one already there."""


@dataclass(frozen=True, slots=True)
class Quoting:
    """psycopg's quoting of a value for one connection: ``literal`` (``Transformer.as_literal``)
    writes it in the connection's ``encoding`` (its client encoding's Python codec)."""

    literal: Callable[[Any], bytes]
    encoding: str


@dataclass(frozen=True, slots=True)
class _Form:
    name: str
    prepare: str
    """``PREPARE consentry_3 AS SELECT name FROM items WHERE id = $1``: the statement, its
    parameters numbered."""
    execute: str
    """``EXECUTE consentry_3``: what its arguments follow."""
    arguments: tuple[str | int, ...]
    """The statement's parameters in their numbers' order: a name (``%(p_id)s``), or a
    position (``%s``)."""

    def bound(self, parameters: Any, quoting: Quoting) -> str:
        """``EXECUTE consentry_3('t-1')``: each value as psycopg quotes it for the connection
        (``quoting``: what ``mogrify`` writes, without reading the statement again)."""
        if not self.arguments:
            return self.execute
        if not isinstance(parameters, Mapping) and len(parameters) != len(self.arguments):
            raise psycopg.ProgrammingError(
                f"the statement takes {len(self.arguments)} values, not {len(parameters)}"
            )
        try:
            literal = quoting.literal
            values = [literal(parameters[key]) for key in self.arguments]
        except KeyError as missing:
            raise psycopg.ProgrammingError(f"query parameter missing: {missing}") from None
        return f"{self.execute}({b', '.join(values).decode(quoting.encoding)})"


@dataclass(slots=True)
class _Session:
    """What one connection has prepared."""

    names: set[str] = field(default_factory=set)
    uncertain: bool = False
    """A message holding a ``PREPARE`` or a ``DEALLOCATE`` failed: which ran is not known."""


_Key = tuple[str, tuple[Any, ...]]
"""A statement prepared: its SQL and the values of its constant parameters (two statements of
the same SQL may carry different values: a claim of an idle thread, one of a waiting one)."""

_CONSTANTS: dict[str, tuple[str, ...]] = {}
"""The statements declared :func:`preparable`, with the names of their constant parameters."""
_NEVER = ("",)
"""The constants of a statement never prepared (a name no statement has)."""
_PLAIN = (str, int, float, bool, type(None), Decimal, datetime, date, UUID)
"""The types of the constant values a key holds (compared as they render)."""
_FORMS: dict[_Key, _Form | None] = {}
"""Each statement's prepared form, or None when PostgreSQL could not prepare it."""
_SIGHTINGS: set[_Key] = set()
"""Preparable statements run once."""


def preparable(sql: str, constants: Iterable[str] = ()) -> None:
    """Declare ``sql`` (as psycopg takes it, ``%(name)s`` or ``%s``) a statement of the hot path,
    to be prepared the second time the process runs it. ``constants``: the named parameters
    whose values a statement carries itself, written into the prepared statement as literals
    (each set of their values its own prepared statement)."""
    names = tuple(constants)
    known = _CONSTANTS.get(sql)
    if known is None:
        if len(_CONSTANTS) < 10 * MOST_STATEMENTS:
            _CONSTANTS[sql] = names
    elif known != names:  # the same SQL with other constants: its parameters are not known
        _CONSTANTS[sql] = _NEVER


def _key(sql: str, parameters: Any) -> _Key | None:
    """``sql`` run with ``parameters`` as a prepared statement, or None: not one to prepare."""
    names = _CONSTANTS.get(sql)
    if names is None or parameters is None:
        return None
    if not names:
        return sql, ()
    try:
        values = tuple(parameters[name] for name in names)
    except KeyError:
        return None
    if not all(type(value) in _PLAIN for value in values):
        return None  # a JSON value, say: equal values that are not the same key
    return sql, tuple((type(value), value) for value in values)


def kept_on(driver: psycopg.AsyncConnection[Any], attribute: str, make: Callable[[], T]) -> T:
    """What ``make`` makes, once a connection, kept on the connection itself (a cache keyed by
    the connection would keep it alive: what is kept may refer to it): its prepared names, its
    cursors, its quoting."""
    kept: T | None = getattr(driver, attribute, None)
    if kept is None:
        kept = make()
        setattr(driver, attribute, kept)
    return kept


def _session(driver: psycopg.AsyncConnection[Any]) -> _Session:
    return kept_on(driver, _SESSION, _Session)


def _form(key: _Key, name: str) -> _Form:
    sql, values = key
    literals = {
        constant: Literal(value).as_string(None)
        for constant, (_, value) in zip(_CONSTANTS[sql], values, strict=True)
    }
    numbers: dict[str | int, int] = {}
    positions = itertools.count()

    def number(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "%%":
            return "%"
        if match.group(1) in literals:
            return literals[match.group(1)]
        key: str | int = match.group(1) or next(positions)  # each %s a parameter of its own
        if key not in numbers:
            numbers[key] = len(numbers) + 1
        return f"${numbers[key]}"

    numbered = _PARAMETER.sub(number, sql)
    return _Form(name, f"PREPARE {name} AS {numbered}", f"EXECUTE {name}", tuple(numbers))


def _to_learn(key: _Key | None) -> bool:
    """Count a run of the statement; whether it is now to be prepared for the first time."""
    if key is None or key in _FORMS or not _PREPARABLE.match(key[0]):
        return False
    if key not in _SIGHTINGS:
        if len(_SIGHTINGS) < 10 * MOST_STATEMENTS:
            _SIGHTINGS.add(key)
        return False
    return len(_FORMS) < MOST_STATEMENTS


async def prepare_new(
    driver: psycopg.AsyncConnection[Any], statements: Iterable[tuple[str, Any]]
) -> None:
    """Before a message: prepare, each in a round trip of its own, the statements run often
    enough that this process has not yet prepared anywhere (see the module's docstring). In a
    transaction, within a savepoint, so that one PostgreSQL cannot prepare fails nothing."""
    status = driver.info.transaction_status
    if status not in _LEARNING_STATES:
        return
    keys = (_key(sql, parameters) for sql, parameters in statements)
    learning = [key for key in keys if key is not None and _to_learn(key)]
    in_transaction = status == psycopg.pq.TransactionStatus.INTRANS
    for key in dict.fromkeys(learning):
        if key in _FORMS:  # learned meanwhile, on another connection
            continue
        try:
            form = _form(key, f"consentry_{next(_NUMBERS)}")
        except (psycopg.Error, TypeError, ValueError):  # a value with no literal
            _FORMS[key] = None
            continue
        try:
            if in_transaction:
                await driver.execute(
                    f"SAVEPOINT {_SAVEPOINT}; {form.prepare}; RELEASE SAVEPOINT {_SAVEPOINT}"
                )
            else:
                await driver.execute(form.prepare)
        except psycopg.Error as exc:
            sqlstate = exc.sqlstate or ""
            if not sqlstate.startswith(_REFUSED):
                raise
            if in_transaction:
                await driver.execute(
                    f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}"
                )
            if sqlstate in _CANNOT_PREPARE:
                _FORMS[key] = None  # never; another refusal (a table not there yet): later
            continue
        _FORMS[key] = form
        _session(driver).names.add(form.name)


def is_prepared(sql: str, parameters: Any) -> bool:
    """Whether this process runs ``sql`` with ``parameters`` as a prepared statement."""
    key = _key(sql, parameters)
    return key is not None and _FORMS.get(key) is not None


@dataclass(frozen=True, slots=True)
class PreparedMessage:
    """Statements as one query, prepared ones as ``EXECUTE``."""

    text: str
    offset: int
    """Results before the first statement's (a ``DEALLOCATE ALL``, ``PREPARE``\\ s)."""
    prepares: bool
    """It prepares (or deallocates): if it fails, the connection's names are uncertain."""

    def failed(self, driver: psycopg.AsyncConnection[Any], error: BaseException) -> None:
        """The message failed with ``error``, or was not sent."""
        cause = getattr(error, "orig", None) or error  # SQLAlchemy's error names psycopg's
        if self.prepares or getattr(cause, "sqlstate", None) in _PREPARED_GONE:
            _session(driver).uncertain = True


def prepared_message(
    driver: psycopg.AsyncConnection[Any],
    statements: Sequence[tuple[str, Any]],
    mogrify: Callable[[str, Any], str],
    quoting: Quoting,
) -> PreparedMessage:
    """``statements`` as one query: those this process has prepared as ``EXECUTE``, their
    ``PREPARE`` first when the connection has not run it, their values quoted by ``quoting``
    (psycopg's ``Transformer.as_literal``), the others bound by ``mogrify`` (psycopg's
    ``ClientCursor.mogrify``). The ``PREPARE``\\ s go at the front, so that the statements'
    results keep their order after :attr:`PreparedMessage.offset` of theirs."""
    session = _session(driver)
    known = set() if session.uncertain else session.names
    front: list[str] = ["DEALLOCATE ALL"] if session.uncertain else []
    named: list[str] = []
    parts: list[str] = []
    for sql, parameters in statements:
        key = _key(sql, parameters)
        form = None if key is None else _FORMS.get(key)
        if form is None:
            parts.append(sql if parameters is None else mogrify(sql, parameters))
            continue
        if form.name not in known and form.name not in named:
            front.append(form.prepare)
            named.append(form.name)
        parts.append(form.bound(parameters, quoting))
    # Every value bound (a value that cannot be raises before): what the connection holds
    # once the message has run.
    if session.uncertain:
        session.names.clear()
        session.uncertain = False
    session.names.update(named)
    return PreparedMessage(";\n".join([*front, *parts]), len(front), bool(front))
