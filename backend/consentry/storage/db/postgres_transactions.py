"""A PostgreSQL transaction on SQLAlchemy's async engine, in two hops through its greenlet bridge.

``AsyncEngine.begin()`` crosses the bridge four times a transaction (the pool's checkout, the
``BEGIN``, the commit, the pool's checkin) and runs the checkin in a task of its own: on the
server's hot path, which opens two dozen transactions a conversation, that was more than most of
their statements cost. :func:`postgres_transaction` crosses it twice:
once to check a connection out and begin (the ``BEGIN`` itself is deferred and sends nothing,
``storage.db.direct``), once to commit (or roll back) and check it in. The end runs to completion
even when the caller is cancelled meanwhile, as SQLAlchemy's own does: a connection is never
left checked out half-way, and the cancellation is raised once it is back in the pool.

``read``: the connection's statements run without a transaction (``direct.NO_TRANSACTION``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import TypeVar

from sqlalchemy.engine import Connection, Engine, RootTransaction
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

from consentry.storage.db.direct import NO_TRANSACTION

__all__ = ["postgres_transaction"]

T = TypeVar("T")


@asynccontextmanager
async def postgres_transaction(
    engine: AsyncEngine, *, read: bool = False
) -> AsyncIterator[AsyncConnection]:
    """A transaction on ``engine``, committed when the block ends, rolled back if it raises."""
    sync, transaction = await greenlet_spawn(_check_out_and_begin, engine.sync_engine, read)
    try:
        yield AsyncConnection(engine, sync)
    except BaseException as failure:
        await _to_completion(greenlet_spawn(_end, sync, transaction, failure))
        raise
    await _to_completion(greenlet_spawn(_end, sync, transaction, None))


def _check_out_and_begin(engine: Engine, read: bool) -> tuple[Connection, RootTransaction]:
    connection = engine.connect()
    try:
        if read:
            connection.execution_options(**{NO_TRANSACTION: True})
        transaction = connection.begin()
        transaction.__enter__()  # as ``with connection.begin():`` (ended in ``_end``)
    except BaseException:
        connection.close()
        raise
    return connection, transaction


def _end(
    connection: Connection, transaction: RootTransaction, failure: BaseException | None
) -> None:
    """Commit (or, after ``failure``, roll back) as ``with connection.begin():`` does (a commit
    that fails is rolled back), then give the connection back to the pool."""
    try:
        if failure is None:
            transaction.__exit__(None, None, None)
        else:
            transaction.__exit__(type(failure), failure, failure.__traceback__)
    finally:
        connection.close()


async def _to_completion(ending: Awaitable[T]) -> T:
    """Await ``ending`` to its end even if the caller is cancelled meanwhile. The cancellation is
    raised after it, also when the end failed (that failure is then its cause), so that a task
    asked to stop does stop."""
    task = asyncio.ensure_future(ending)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as error:
            cancelled = error  # the caller's (the loop goes on) or the task's own (it is done)
        except BaseException:  # the end's own failure: raised below, by task.result()
            pass
    if cancelled is not None:
        failure = None if task.cancelled() else task.exception()
        raise cancelled from failure
    return task.result()
