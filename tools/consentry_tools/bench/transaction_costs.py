"""The CPU of one PostgreSQL transaction in process: Consentry's (``Database.read()`` /
``write()`` on its pool, ``storage/db/postgres_pool.py``) against psycopg's own on one connection
(``docs/performance.md``, "issue 37, third part"). A conversation makes about twenty
round trips, so what a transaction costs beyond its statements is paid twenty times; below what
a ``consentry bench`` run can resolve on a loaded machine, so measured here with
``time.process_time()`` over ``--transactions`` of each kind, after ``--warm-up``, ``--repeats``
times, the two sides alternating; printed: the min and median µs a transaction.

The kinds, the same statements on both sides:

- ``read``: one read (``SELECT`` of a row by its key), no ``BEGIN`` (psycopg: bound on the
  server, as its default cursor does);
- ``write``: one insert whose result nobody reads, committed at the block's end (Consentry:
  ``execute_unread``, sent with its ``BEGIN`` and ``COMMIT`` in one message);
- ``claim``: one ``UPDATE … RETURNING`` committed with it (Consentry:
  ``commit_with_one_row_change``, as a run's claim of its thread).

psycopg's writes go as one message with their ``BEGIN`` and ``COMMIT``, bound on the client
(``AsyncClientCursor``), as Consentry sends them: what differs is what Consentry does around them
(its pool, its transaction object, its statements compiled once and prepared, its result).

    python -m consentry_tools.bench.transaction_costs --postgres postgresql://u@host/db

It works in an empty database of its own beside the given one, dropped after
(``databases.database_beside``: it needs ``CREATEDB``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import psycopg
import sqlalchemy as sa

from consentry.stored import Database, direct, execute_unread
from consentry_tools.bench.databases import database_beside, libpq_url

__all__ = ["main"]

KINDS = ("read", "write", "claim")
_metadata = sa.MetaData()
_rows = sa.Table(
    "bench_rows",
    _metadata,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("status", sa.String, nullable=False),
    sa.Column("counter", sa.Integer, nullable=False),
)
_READ = direct(sa.select(_rows.c.status).where(_rows.c.id == sa.bindparam("p_id")))
_INSERT = direct(_rows.insert())
_CLAIM = direct(
    _rows.update()
    .where(_rows.c.id == sa.bindparam("p_id"))
    .values(counter=_rows.c.counter + 1)
    .returning(_rows.c.counter)
)

Transaction = Callable[[], Awaitable[None]]


def _consentry(db: Database) -> dict[str, Transaction]:
    inserted = iter(range(10**9))

    async def read() -> None:
        async with db.read() as conn:
            (await conn.execute(_READ, {"p_id": "claimed"})).all()

    async def write() -> None:
        async with db.write() as conn:
            row = {"id": f"c{next(inserted)}", "status": "new", "counter": 0}
            await execute_unread(conn, _INSERT, row)

    async def claim() -> None:
        async with db.write() as conn:
            await conn.commit_with_one_row_change(_CLAIM, {"p_id": "claimed"})  # type: ignore[union-attr]

    return {"read": read, "write": write, "claim": claim}


def _psycopg(conn: psycopg.AsyncConnection[object]) -> dict[str, Transaction]:
    inserted = iter(range(10**9))

    async def read() -> None:
        async with conn.cursor() as cursor:
            await cursor.execute("SELECT status FROM bench_rows WHERE id = %s", ("claimed",))
            await cursor.fetchall()

    async def write() -> None:  # one message, bound on the client as Consentry's
        async with psycopg.AsyncClientCursor(conn) as cursor:
            await cursor.execute(
                "BEGIN; INSERT INTO bench_rows (id, status, counter) VALUES (%s, %s, %s); COMMIT",
                (f"p{next(inserted)}", "new", 0),
            )

    async def claim() -> None:
        async with psycopg.AsyncClientCursor(conn) as cursor:
            await cursor.execute(
                "BEGIN; UPDATE bench_rows SET counter = counter + 1 WHERE id = %s "
                "RETURNING counter; COMMIT",
                ("claimed",),
            )

    return {"read": read, "write": write, "claim": claim}


async def _cpu_us(transaction: Transaction, count: int) -> float:
    started = time.process_time()
    for _ in range(count):
        await transaction()
    return (time.process_time() - started) * 1e6 / count


async def _measure(url: str, *, transactions: int, warm_up: int, repeats: int) -> None:
    db = Database(url)
    await db.open()
    raw = await psycopg.AsyncConnection.connect(libpq_url(url), autocommit=True)
    try:
        async with raw.cursor() as cursor:
            await cursor.execute(
                "CREATE TABLE bench_rows (id text PRIMARY KEY, status text NOT NULL, "
                "counter integer NOT NULL); "
                "INSERT INTO bench_rows VALUES ('claimed', 'idle', 0)"
            )
        sides = {"consentry": _consentry(db), "psycopg": _psycopg(raw)}
        figures: dict[tuple[str, str], list[float]] = {}
        for kind in KINDS:
            for side in sides.values():
                await _cpu_us(side[kind], warm_up)
            for _ in range(repeats):
                for name, side in sides.items():
                    figures.setdefault((name, kind), []).append(
                        await _cpu_us(side[kind], transactions)
                    )
    finally:
        await raw.close()
        await db.close()
    for name in sides:
        line = "  ".join(
            f"{kind} {min(figures[name, kind]):.0f}/{statistics.median(figures[name, kind]):.0f}"
            for kind in KINDS
        )
        print(f"{name:10} {line}  (µs of CPU a transaction, min/median)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m consentry_tools.bench.transaction_costs")
    parser.add_argument("--postgres", required=True, help="a PostgreSQL server's URL")
    parser.add_argument("--transactions", type=int, default=2000)
    parser.add_argument("--warm-up", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with database_beside(args.postgres) as url:
        asyncio.run(
            _measure(
                url, transactions=args.transactions, warm_up=args.warm_up, repeats=args.repeats
            )
        )


if __name__ == "__main__":
    main()
