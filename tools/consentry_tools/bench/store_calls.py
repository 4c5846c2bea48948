"""The CPU of one Store call in process: Consentry's Store against LangGraph's own
(``AsyncSqliteStore``, ``AsyncPostgresStore``), for the two calls ``memory_flow`` makes a
conversation: ``asearch(namespace, limit=5)`` of a person's namespace holding one item, and
``aput`` of that item again (an upsert). Below what a ``consentry bench`` run can see on a loaded
machine (``docs/performance.md``, "memory_flow"), so measured here with ``time.process_time()``
over ``--calls`` calls of each, after ``--warm-up`` calls, ``--repeats`` times, the two stores
alternating; printed: the min and median ms a call.

    python -m consentry_tools.bench.store_calls                     # SQLite, files in a temp dir
    python -m consentry_tools.bench.store_calls --postgres postgresql://u@host/db

On PostgreSQL each store gets an empty database of its own beside the given one, dropped after
(``databases.database_beside``: it needs ``CREATEDB``). SQLite's files are in WAL mode on both
sides, as ``bench.baseline`` opens LangGraph's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

from langgraph.store.base import BaseStore
from langgraph.store.postgres.aio import AsyncPostgresStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from consentry.stored import Database, ItemStore
from consentry_tools.bench.databases import database_beside, libpq_url

__all__ = ["main"]

NAMESPACE = ("memory_flow", "decisions", "bench/person")
VALUE = {"summary": "Rename the note", "decision": "approve"}


@asynccontextmanager
async def _consentry(url: str) -> AsyncIterator[BaseStore]:
    db = Database(url)
    await db.open()
    try:
        await db.migrate()
        yield ItemStore(db=db, clock=lambda: datetime.now(UTC), index=None).for_tenant("bench")
    finally:
        await db.close()


@asynccontextmanager
async def _langgraph(url: str) -> AsyncIterator[BaseStore]:
    if url.startswith("postgres"):
        async with AsyncPostgresStore.from_conn_string(libpq_url(url)) as pg_store:
            await pg_store.setup()
            yield pg_store
    else:
        async with AsyncSqliteStore.from_conn_string(url) as sqlite_store:
            await sqlite_store.setup()
            await sqlite_store.conn.execute("PRAGMA journal_mode=WAL")
            yield sqlite_store


async def _cpu_ms(store: BaseStore, calls: int) -> tuple[float, float]:
    """The CPU ms of one search and of one put, over ``calls`` of each."""
    started = time.process_time()
    for _ in range(calls):
        await store.asearch(NAMESPACE, limit=5)
    searched = time.process_time()
    for _ in range(calls):
        await store.aput(NAMESPACE, "Rename the note", VALUE)
    put = time.process_time()
    return (searched - started) * 1000 / calls, (put - searched) * 1000 / calls


async def _measure(urls: dict[str, str], *, calls: int, warm_up: int, repeats: int) -> None:
    async with AsyncExitStack() as stack:
        stores = {
            "consentry": await stack.enter_async_context(_consentry(urls["consentry"])),
            "langgraph": await stack.enter_async_context(_langgraph(urls["langgraph"])),
        }
        for store in stores.values():
            await store.aput(NAMESPACE, "Rename the note", VALUE)
            await _cpu_ms(store, warm_up)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in stores}
        for _ in range(repeats):
            for name, store in stores.items():
                figures[name].append(await _cpu_ms(store, calls))
    for name, runs in figures.items():
        search, put = [r[0] for r in runs], [r[1] for r in runs]
        both = [s + p for s, p in runs]
        print(
            f"{name:10} search {min(search):.3f}/{statistics.median(search):.3f}  "
            f"put {min(put):.3f}/{statistics.median(put):.3f}  "
            f"both {min(both):.3f}/{statistics.median(both):.3f}  (ms a call, min/median)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m consentry_tools.bench.store_calls")
    parser.add_argument("--postgres", help="a PostgreSQL server's URL (default: SQLite)")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warm-up", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    options = {"calls": args.calls, "warm_up": args.warm_up, "repeats": args.repeats}
    if args.postgres:
        with database_beside(args.postgres) as ours, database_beside(args.postgres) as theirs:
            asyncio.run(_measure({"consentry": ours, "langgraph": theirs}, **options))
        return
    with tempfile.TemporaryDirectory() as folder:
        urls = {
            "consentry": f"sqlite:///{Path(folder) / 'consentry.db'}",
            "langgraph": str(Path(folder) / "langgraph.db"),
        }
        asyncio.run(_measure(urls, **options))


if __name__ == "__main__":
    main()
