"""A cap on the runs one tenant has active at once (``CONSENTRY_MAX_ACTIVE_RUNS_PER_TENANT``),
across every replica: checked in the transaction that claims a thread for a run a client asked
for (a message, a decision, a retry), against the count in the database
(``storage.tenant_runs``). Runs the server starts itself (expiry, recovery) are never refused:
they finish what was already accepted.
"""

from __future__ import annotations

from consentry.errors import TooManyRequestsError
from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.tenant_runs import count_active_runs

__all__ = ["ACTIVE_RUNS_RETRY_AFTER_SECONDS", "refuse_if_tenant_at_cap"]

ACTIVE_RUNS_RETRY_AFTER_SECONDS = 5
"""The ``Retry-After`` of ``too_many_active_runs``: a hint (a run takes seconds)."""


async def refuse_if_tenant_at_cap(
    conn: DbConnection, owner: Principal, *, thread_id: str, cap: int
) -> None:
    """429 ``too_many_active_runs`` when ``owner``'s tenant already has ``cap`` runs active on
    other threads (0: no cap). Raised inside the claiming transaction: nothing it wrote stays."""
    if not cap:
        return
    active = await count_active_runs(conn, owner.tenant, excluding_thread=thread_id)
    if active >= cap:
        raise TooManyRequestsError(
            f"Your organization has {active} runs going, the most allowed at once; try again "
            "when one has ended.",
            code="too_many_active_runs",
            retry_after=ACTIVE_RUNS_RETRY_AFTER_SECONDS,
            details={"limit": "max_active_runs_per_tenant", "max": cap},
        )
