"""``storage.db.direct._prepared``: on PostgreSQL a statement of the hot path the process runs
again is prepared once a connection and sent as ``EXECUTE``, still in one message a transaction,
with the values the statement carries itself written in as literals (a generic plan then still
uses a partial index on them); a statement compiled for one call is not prepared; one PostgreSQL
cannot prepare runs as it is, even inside a transaction; and a message that may or may not have
prepared, or a statement whose result's type a migration changed, leaves its connection to
prepare again, never to ``EXECUTE`` a statement it lacks. On a throwaway PostgreSQL cluster."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import psycopg
import psycopg.adapt
import pytest
import pytest_asyncio
import sqlalchemy as sa
from psycopg.types.json import Json
from sqlalchemy.exc import IntegrityError, NotSupportedError

from consentry.storage.db.database import Database, execute_unread, libpq_url
from consentry.storage.db.direct import _prepared, direct
from tests.postgres import PostgresCluster, opened_with_tables

_metadata = sa.MetaData()
_items = sa.Table(
    "items",
    _metadata,
    sa.Column("name", sa.String, primary_key=True),
    sa.Column("status", sa.String, nullable=True),
)
_INSERT = direct(_items.insert())
_PENDING_FROM = direct(
    sa.select(_items.c.name).where(
        _items.c.status == "pending", _items.c.name >= sa.bindparam("p_from")
    )
)
_DONE_FROM = direct(  # the same SQL, another value of its own
    sa.select(_items.c.name).where(
        _items.c.status == "done", _items.c.name >= sa.bindparam("p_from")
    )
)
_PREPARED = "SELECT name FROM pg_prepared_statements WHERE name LIKE 'consentry%'"
_INSERT_SQL = "INSERT INTO items (name) VALUES (%(name)s::VARCHAR)"


@pytest.fixture(autouse=True)
def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What this process has prepared and run, as if it had just started (its names go on:
    they are never used twice)."""
    monkeypatch.setattr(_prepared, "_FORMS", {})
    monkeypatch.setattr(_prepared, "_SIGHTINGS", set())


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.new_database()


@pytest_asyncio.fixture
async def pg(url: str) -> AsyncIterator[Database]:
    async with opened_with_tables(url, _metadata) as database:
        yield database


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every message psycopg sends from here on, whole (not the pool's empty idle checks)."""
    seen: list[str] = []
    execute = psycopg.AsyncCursor.execute

    async def executed(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        if str(query):
            seen.append(str(query))
        return await execute(self, query, *args, **kw)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", executed)
    return seen


def _name(sql: str, *constants: Any) -> str:
    form = _prepared._FORMS[sql, constants]
    assert form is not None
    return form.name


async def _insert(db: Database, *names: str) -> None:
    async with db.write() as conn:
        for name in names:
            await execute_unread(conn, _INSERT, {"name": name})


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        return sorted((await conn.execute(sa.select(_items.c.name))).scalars())


async def _prepared_on(db: Database) -> list[str]:
    async with db.read() as conn:
        return sorted((await conn.exec_driver_sql(_PREPARED)).scalars())


async def test_a_statement_run_again_is_prepared_once_and_then_executed(
    pg: Database, messages: list[str]
) -> None:
    await _insert(pg, "first")
    await _insert(pg, "second")
    await _insert(pg, "third", "fourth")

    name = _name(_INSERT_SQL)
    assert messages[0] == "BEGIN;\nINSERT INTO items (name) VALUES ('first'::VARCHAR);\nCOMMIT"
    learned, second, third = messages[1:]
    assert learned == f"PREPARE {name} AS INSERT INTO items (name) VALUES ($1::VARCHAR)"
    assert second == f"BEGIN;\nEXECUTE {name}('second');\nCOMMIT"
    assert third == f"BEGIN;\nEXECUTE {name}('third');\nEXECUTE {name}('fourth');\nCOMMIT"
    assert await _names(pg) == ["first", "fourth", "second", "third"]
    assert await _prepared_on(pg) == [name]  # the pool's one connection


async def test_what_a_statement_carries_itself_is_prepared_as_a_literal(
    pg: Database, messages: list[str]
) -> None:
    async with pg.write() as conn:
        await conn.execute(_items.insert(), [{"name": "a", "status": "pending"}, {"name": "b"}])
    found = []
    for _ in range(3):
        async with pg.read() as conn:
            found.append(list((await conn.execute(_PENDING_FROM, {"p_from": "a"})).scalars()))

    assert found == [["a"], ["a"], ["a"]]
    (prepare,) = [m for m in messages if m.startswith("PREPARE")]
    assert "status = 'pending'::VARCHAR" in prepare  # a generic plan's partial index's condition
    assert "name >= $1::VARCHAR" in prepare
    assert messages[-1].endswith("('a')")  # the one value a run gives


async def test_a_generic_plan_of_a_carried_value_still_uses_the_partial_index(
    pg: Database, messages: list[str]
) -> None:
    async with pg.write() as conn:
        await conn.exec_driver_sql(
            "CREATE INDEX items_pending ON items (name) WHERE status = 'pending'"
        )
        await conn.execute(_items.insert(), {"name": "a", "status": "pending"})
    for _ in range(2):
        async with pg.read() as conn:
            await conn.execute(_PENDING_FROM, {"p_from": "a"})
    (name,) = re.findall(r"PREPARE (consentry_\d+) AS SELECT", "\n".join(messages))
    async with pg.read() as conn:  # the pool's one connection, which prepared it
        await conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        await conn.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join((await conn.exec_driver_sql(f"EXPLAIN EXECUTE {name}('a')")).scalars())
    assert "items_pending" in plan


def test_one_sql_declared_with_other_constant_parameters_is_never_prepared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_prepared, "_CONSTANTS", {})
    sql = "SELECT name FROM items WHERE status = %(s)s AND kind = %(k)s"
    _prepared.preparable(sql, ("s",))
    _prepared.preparable(sql, ("s",))  # the same again: still preparable
    assert _prepared._key(sql, {"s": "x", "k": "y"}) is not None
    _prepared.preparable(sql, ("k",))
    assert _prepared._key(sql, {"s": "x", "k": "y"}) is None


async def test_statements_of_one_sql_that_carry_other_values_are_prepared_apart(
    pg: Database,
) -> None:
    async with pg.write() as conn:
        await conn.execute(
            _items.insert(), [{"name": "a", "status": "pending"}, {"name": "b", "status": "done"}]
        )
    found = []
    for _ in range(3):
        async with pg.read() as conn:
            pending = list((await conn.execute(_PENDING_FROM, {"p_from": ""})).scalars())
            done = list((await conn.execute(_DONE_FROM, {"p_from": ""})).scalars())
            found.append((pending, done))

    assert found == [(["a"], ["b"])] * 3
    assert len(await _prepared_on(pg)) == 2


async def test_a_statement_compiled_for_one_call_is_not_prepared(
    pg: Database, messages: list[str]
) -> None:
    for _ in range(3):
        async with pg.read() as conn:
            await conn.execute(sa.select(_items.c.name).where(_items.c.status == "pending"))
    assert not any("PREPARE" in m or "EXECUTE" in m for m in messages)


async def test_a_connection_that_lacks_a_learned_statement_prepares_it_in_the_message(
    pg: Database, url: str, messages: list[str]
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned on pg's connection
    name = _name(_INSERT_SQL)
    other = Database(url)
    await other.open()
    try:
        messages.clear()
        await _insert(other, "c", "d")
        assert messages == [
            f"PREPARE {name} AS INSERT INTO items (name) VALUES ($1::VARCHAR);\n"
            f"BEGIN;\nEXECUTE {name}('c');\nEXECUTE {name}('d');\nCOMMIT"
        ]
        assert await _prepared_on(other) == [name]
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c", "d"]


async def test_a_statement_postgresql_cannot_prepare_runs_as_it_is_in_or_out_of_a_transaction(
    pg: Database, messages: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # PREPARE cannot tell $1's type; psycopg's own binding sends an int's
    untyped = "SELECT %(value)s IS NULL AS missing"
    for sql in (untyped, untyped + "_2"):  # as a module declares them (for this test only)
        monkeypatch.setitem(_prepared._CONSTANTS, sql, ())
    for _ in range(2):
        async with pg.read() as conn:
            assert (await conn.exec_driver_sql(untyped, {"value": 1})).scalar() is False
    async with pg.write() as conn:
        await conn.execute(_INSERT, {"name": "sent"})  # the transaction is open
        for _ in range(2):
            found = await conn.exec_driver_sql(untyped + "_2", {"value": 2})
            assert found.scalar() is False
        await execute_unread(conn, _INSERT, {"name": "after"})

    assert await _names(pg) == ["after", "sent"]  # the failed PREPARE failed nothing
    assert _prepared._FORMS[untyped, ()] is None
    assert _prepared._FORMS[untyped + "_2", ()] is None
    assert any(m.startswith("SAVEPOINT consentry_prepare; PREPARE") for m in messages)
    # only the INSERT, learned within the transaction at its second run
    assert await _prepared_on(pg) == [_name(_INSERT_SQL)]


async def test_a_failed_message_that_prepared_has_its_connection_prepare_again(
    pg: Database, url: str, messages: list[str]
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned
    name = _name(_INSERT_SQL)
    other = Database(url)
    await other.open()
    try:
        with pytest.raises(IntegrityError):  # its PREPARE ran, its INSERT failed
            await _insert(other, "a")
        messages.clear()
        await _insert(other, "c")
        assert messages[0].startswith(f"DEALLOCATE ALL;\nPREPARE {name} AS")
        assert await _prepared_on(other) == [name]
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c"]


async def test_a_message_that_was_never_sent_has_its_connection_prepare_again(
    pg: Database, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _insert(pg, "a")
    await _insert(pg, "b")  # learned
    other = Database(url)
    await other.open()
    execute = psycopg.AsyncCursor.execute

    async def lost(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        if str(query).startswith("PREPARE"):
            raise psycopg.OperationalError("the message was lost on its way")
        return await execute(self, query, *args, **kw)

    try:
        with monkeypatch.context() as patched:
            patched.setattr(psycopg.AsyncCursor, "execute", lost)
            with pytest.raises(Exception, match="lost on its way"):
                await _insert(other, "never")
        await _insert(other, "c")  # not an EXECUTE of a statement the connection lacks
    finally:
        await other.close()
    assert await _names(pg) == ["a", "b", "c"]


async def test_a_statement_whose_result_a_migration_changed_is_prepared_again(
    pg: Database, messages: list[str]
) -> None:
    async with pg.write() as conn:
        await conn.execute(_items.insert(), {"name": "a", "status": "pending"})
    for _ in range(2):
        async with pg.read() as conn:
            await conn.execute(_PENDING_FROM, {"p_from": "a"})  # prepared
    async with pg.write() as conn:  # another replica's migration
        await conn.exec_driver_sql("ALTER TABLE items ALTER COLUMN name TYPE text")

    with pytest.raises(NotSupportedError, match="cached plan must not change result type"):
        async with pg.read() as conn:
            await conn.execute(_PENDING_FROM, {"p_from": "a"})
    messages.clear()
    async with pg.read() as conn:
        found = list((await conn.execute(_PENDING_FROM, {"p_from": "a"})).scalars())

    assert found == ["a"]
    assert messages[0].startswith("DEALLOCATE ALL;\nPREPARE")


_AWKWARD = {
    "text": "it's a \\ back\\slash, é 😀 \u2028 and\na line",
    "empty": "",
    "none": None,
    "yes": True,
    "number": -42,
    "big": 2**62,
    "fraction": 0.1,
    "decimal": Decimal("-1.50"),
    "bytes": b"\x00\x87'\\",
    "when": datetime(2026, 12, 7, 9, 22, 40, 764462, tzinfo=UTC),
    "day": date(2026, 12, 7),
    "uuid": UUID("8eb83eda-266e-45e0-a3c9-01d2757178e7"),
    "json": Json({"a": "it's", "b": [1, None]}),
}


async def test_an_execute_s_values_are_quoted_as_mogrify_quotes_them(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prepared statement's ``EXECUTE`` binds its values with psycopg's own quoting
    (``Transformer.as_literal``), byte for byte what ``mogrify`` writes, named or positional; a
    missing value or a wrong count fails before anything is sent, as ``mogrify`` fails."""
    names = list(_AWKWARD)
    named_sql = "SELECT " + ", ".join(f"%({n})s" for n in names)
    positional_sql = "SELECT " + ", ".join(["%s"] * len(names))
    for sql in (named_sql, positional_sql):
        monkeypatch.setitem(_prepared._CONSTANTS, sql, ())  # declared: no constants of its own
    named = _prepared._form((named_sql, ()), "consentry_x")
    positional = _prepared._form((positional_sql, ()), "consentry_y")
    async with await psycopg.AsyncConnection.connect(libpq_url(url)) as driver:
        client = psycopg.AsyncClientCursor(driver)
        quoting = _prepared.Quoting(
            psycopg.adapt.Transformer.from_context(driver).as_literal, driver.info.encoding
        )
        expected = client.mogrify(
            "EXECUTE consentry_x(" + ", ".join(f"%({n})s" for n in names) + ")", _AWKWARD
        )
        assert named.bound(_AWKWARD, quoting) == expected
        values = list(_AWKWARD.values())
        assert positional.bound(values, quoting) == expected.replace("_x(", "_y(")
        with pytest.raises(psycopg.ProgrammingError):
            named.bound({"text": "only one"}, quoting)
        with pytest.raises(psycopg.ProgrammingError):
            positional.bound(values[:-1], quoting)


async def test_an_execute_s_values_are_written_in_the_connection_s_encoding(
    postgres: PostgresCluster, messages: list[str]
) -> None:
    """On a database whose client encoding is not UTF-8 (LATIN1), a prepared statement's values
    are stored as given: quoted and read back in that encoding, as ``mogrify`` does."""
    name = "latin1_items"
    with psycopg.connect(postgres.admin_url, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' "
            "TEMPLATE template0"
        )
    async with opened_with_tables(postgres.url(name), _metadata) as db:
        for text in ("café", "Ã©", "naïve", "über"):  # the third run and after: EXECUTE
            async with db.write() as conn:
                await execute_unread(conn, _INSERT, {"name": text, "status": "pending"})
        async with db.read() as conn:
            stored = list((await conn.execute(sa.select(_items.c.name))).scalars())
        assert sorted(stored) == sorted(["café", "Ã©", "naïve", "über"])
        assert any("EXECUTE consentry_" in message for message in messages)


async def test_a_statement_run_alone_answers_with_its_own_last_result(pg: Database) -> None:
    """The connection's one cursor stands on the result a message asked for; a statement run
    alone after it (several statements without values, as psycopg sends them) answers with its
    own last result, not the one the message before it asked for."""
    for _ in range(3):  # prepared, then an EXECUTE that stands on its first result
        async with pg.write() as conn:
            await execute_unread(conn, _INSERT, {"name": f"n{_}", "status": "pending"})
            await conn.execute(_PENDING_FROM, {"p_from": "a"})
    async with pg.read() as conn:
        await conn.execute(_PENDING_FROM, {"p_from": "a"})
        result = await conn.exec_driver_sql("SELECT 1; SELECT 2")
        assert result.scalar() == 2
