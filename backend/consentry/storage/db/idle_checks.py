"""PostgreSQL connections are checked before use only after they sat idle in their pool.

A pooled connection can be dead when it is taken: the database restarted while it waited. A
check before every use finds that out, at the price of a round trip per transaction (measured:
about a tenth of a conversation's CPU).
A connection given back less than :data:`IDLE_CHECK_SECONDS` ago was working then, and a
restart takes longer than that (a fast restart of the test suite's small local cluster takes
0.24 s: 0.11 s to stop, 0.13 s to start), so only connections that sat idle longer are checked.
Under load a pooled connection is taken again within milliseconds, so the checks all but stop.

What this gives up: a connection cut off on its own (a backend terminated by an operator, a
network fault) while the database stayed up is found out when it is used, not before. That
request fails with 503 ``database_unavailable``, or the run with a retryable error (``POST
/v1/threads/{id}/retry``), and the pool drops the connection.

One pool has the rule: SQLAlchemy's (:func:`check_idle_connections`), which the app's tables and
the checkpointer (``storage.checkpoints``) share.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["IDLE_CHECK_SECONDS", "check_idle_connections"]

IDLE_CHECK_SECONDS = 0.1
"""A connection back in its pool for this long is checked before its next use."""

_RETURNED_AT = "consentry_returned_at"


def check_idle_connections(engine: AsyncEngine) -> None:
    """SQLAlchemy's pool: ping a connection that sat idle before handing it out (a dead one is
    replaced, as ``pool_pre_ping`` would do for every connection)."""
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(sync_engine, "checkout")
    def _taken(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is None or time.monotonic() - returned < IDLE_CHECK_SECONDS:
            return  # new, or given back a moment ago
        try:
            alive = sync_engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise exc.DisconnectionError("an idle connection no longer answers") from error
        if not alive:
            raise exc.DisconnectionError("an idle connection no longer answers")
