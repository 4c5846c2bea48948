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

The rule is the pool's (``postgres_pool.PostgresPool``), which the app's tables and the
checkpointer (``storage.checkpoints``) share.
"""

from __future__ import annotations

from typing import Any

import psycopg

__all__ = ["IDLE_CHECK_SECONDS", "check"]

IDLE_CHECK_SECONDS = 0.1
"""A connection back in its pool for this long is checked before its next use."""


async def check(driver: psycopg.AsyncConnection[Any]) -> None:
    """Ping ``driver`` (an empty query: one round trip); raises when it does not answer."""
    await driver.execute("")
