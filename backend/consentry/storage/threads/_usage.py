"""The model tokens a thread and its tenant used: read together, and a run's added to its
tenant's total (one upsert, built once per dialect)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.db.dialect import INSERTS
from consentry.storage.db.direct import direct
from consentry.storage.tables import tenant_usage, threads


async def token_usage(conn: DbConnection, thread_id: str, tenant: str) -> tuple[int, int]:
    """Tokens used so far by the thread and by its tenant."""
    thread = await conn.scalar(sa.select(threads.c.tokens_used).where(threads.c.id == thread_id))
    owner = await conn.scalar(
        sa.select(tenant_usage.c.tokens_used).where(tenant_usage.c.tenant == tenant)
    )
    return int(thread or 0), int(owner or 0)


async def add_tenant_usage(conn: DbConnection, tenant: str, tokens: int) -> None:
    """Add a run's model tokens to its tenant's total (a thread's own total is added by
    ``leases.release_thread``)."""
    await execute_unread(
        conn, _ADD_TENANT_USAGE[conn.dialect.name], {"tenant": tenant, "tokens": tokens}
    )


def _add_tenant_usage(dialect_insert: Any) -> Any:
    upsert = dialect_insert(tenant_usage).values(
        tenant=sa.bindparam("tenant"), tokens_used=sa.bindparam("tokens")
    )
    return upsert.on_conflict_do_update(
        index_elements=[tenant_usage.c.tenant],
        set_={"tokens_used": tenant_usage.c.tokens_used + upsert.excluded.tokens_used},
    )


_ADD_TENANT_USAGE = {name: direct(_add_tenant_usage(build)) for name, build in INSERTS.items()}
