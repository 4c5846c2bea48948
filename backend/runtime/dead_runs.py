"""Runs whose process died: finding them (their lease expired) and closing them.

A dead run is closed with an ``error`` (``server_restarted``) and a ``final`` (``failed``),
numbered after its reservation, in one transaction fenced by its token: of two processes
closing it at once, one does and the other gets ``LeaseLostError`` having written nothing.
``RunStarter.take_over`` closes a run and claims its continuation in that same transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from backend.principal import Principal
from backend.runtime.clock import Clock
from backend.runtime.event_stream import RunEventStream
from backend.runtime.leases import LeaseKeeper
from backend.schemas.events import ErrorEvent, FinalEvent
from backend.storage import approvals as approvals_repo
from backend.storage import events as events_repo
from backend.storage import leases as leases_repo
from backend.storage import runs as runs_repo
from backend.storage.database import Database, DbConnection

__all__ = ["close_dead_run", "dead_runs"]


async def dead_runs(db: Database, *, lease_expired_by: datetime | None) -> list[Any]:
    """Runs that stopped without ending (their process crashed, stalled or shut down) and
    whose lease expired by ``lease_expired_by`` (None: every such run, when this process is
    the only one, as on SQLite)."""
    async with db.read() as conn:
        return await leases_repo.unfinished_runs(conn, lease_expired_by=lease_expired_by)


async def close_dead_run(conn: DbConnection, run: Any, *, leases: LeaseKeeper, clock: Clock) -> str:
    """In the caller's transaction: record the dead run ``failed`` with code
    ``server_restarted`` and free its thread; return the thread's new status. Fenced by the
    dead run's token: when two processes recover it at once, one closes it and the other
    gets ``LeaseLostError`` having written nothing. The numbering goes on after the dead
    run's reservation, so no seq it sent is reused."""
    now = clock()
    owner = Principal(run.tenant, run.user_id)
    events = RunEventStream(
        thread_id=run.thread_id,
        run_id=run.id,
        last_seq=run.last_seq,
        reserved_until=run.last_seq + 2,
        clock=clock,
    )
    events.record(
        events.make(
            ErrorEvent,
            code="server_restarted",
            retryable=True,
            message="The server stopped during this run.",
        )
    )
    events.record(events.make(FinalEvent, reason="failed"))
    # First the compare-and-set that takes the lease over with a new fencing token: a
    # second process recovering the same run fails here (LeaseLostError) and writes
    # nothing, and the old process, if it still runs, can write nothing more.
    token = await leases_repo.seize_lease(
        conn,
        run.thread_id,
        run_id=run.id,
        fencing_token=run.fencing_token,
        lease_owner=leases.owner,
        lease_expires_at=leases.expires_at(now),
    )
    await events_repo.insert_events(
        conn, events, events.take_durable(), fencing_token=token, now=now
    )
    pending = await approvals_repo.pending_approvals(conn, run.thread_id)
    status = "awaiting_consent" if pending else "idle"
    await leases_repo.release_thread(
        conn,
        run.thread_id,
        run_id=run.id,
        fencing_token=token,
        status=status,
        reason="failed",
        last_seq=events.last_seq,
        now=now,
    )
    await runs_repo.record_run_end(
        conn,
        owner,
        thread_id=run.thread_id,
        run_id=run.id,
        reason="failed",
        error_code="server_restarted",
        now=now,
    )
    return status
