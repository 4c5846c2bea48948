"""A tenant's active runs, counted in the database so that the count holds across replicas.

A run is active while its thread is ``running`` (executing, or queued for a worker); the partial
index ``ix_threads_running_tenant`` holds exactly those threads, so the count reads a few index
entries, whatever the tenant's history.

Counting and then claiming are two statements. On SQLite one write transaction runs at a time,
so nothing comes in between. On PostgreSQL (``READ COMMITTED``) two replicas could both count
below the cap and both claim, so the count first takes a transaction-scoped advisory lock on the
tenant: run starts of one tenant queue for it until the claiming transaction ends (a few
milliseconds), those of other tenants do not.
"""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection, execute, execute_unread
from consentry.storage.db.direct import direct
from consentry.storage.tables import threads

__all__ = ["TENANT_RUNS_LOCK_CLASS", "count_active_runs"]

TENANT_RUNS_LOCK_CLASS = 0x636F6E73  # "cons": the first key of the per-tenant advisory lock

_LOCK_TENANT = direct(
    sa.text(f"SELECT pg_advisory_xact_lock({TENANT_RUNS_LOCK_CLASS}, hashtext(:tenant))")
)
"""Nobody reads its result: it goes in one message with the count. Each statement of a message
takes its own snapshot under ``READ COMMITTED``, so the count, which follows the lock, sees every
claim committed before the lock was granted."""
_COUNT_OTHERS = direct(
    sa.select(sa.func.count())
    .select_from(threads)
    .where(
        threads.c.tenant == sa.bindparam("p_tenant"),
        threads.c.status == sa.literal_column("'running'"),  # a literal: the index's condition
        threads.c.id != sa.bindparam("p_thread"),
    )
)


async def count_active_runs(conn: DbConnection, tenant: str, *, excluding_thread: str) -> int:
    """The tenant's active runs other than ``excluding_thread``'s, in the caller's write
    transaction; on PostgreSQL, after taking the tenant's lock for the rest of it."""
    if conn.dialect.name == "postgresql":
        await execute_unread(conn, _LOCK_TENANT, {"tenant": tenant})
    parameters = {"p_tenant": tenant, "p_thread": excluding_thread}
    count = (await execute(conn, _COUNT_OTHERS, parameters)).scalar()
    return int(count or 0)
