"""Run leases: at most one active run per thread, across every process sharing the database.

A thread is claimed for a run by a compare-and-set on its ``status``. The claim is a lease: it
names the process that executes the run (``lease_owner``), lasts until ``lease_expires_at`` (the
owner's heartbeat renews it), and increments the thread's ``fencing_token``. Every later write of
the run (its events, its end) is checked against that token, so a process that lost its lease (it
stalled, and another took the run over) cannot store anything more for it:
:class:`LeaseLostError`.

Whatever else lets the thread's graph state be written moves the token on too (a takeover, a
worker taking a queued run, a state update made outside a run: ``threads.hold_thread``), so a
claim whose token is the one a request read plus one is the first such change since that read
(:meth:`Claim.follows`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from consentry.schemas.events import TerminalReason, Trigger
from consentry.schemas.threads import ThreadStatus
from consentry.storage.db.database import DbConnection, execute
from consentry.storage.db.direct import direct
from consentry.storage.db.postgres_connection import PostgresConnection, refused_one_row_change
from consentry.storage.tables import runs, threads

__all__ = [
    "Claim",
    "LeaseLostError",
    "ThreadVersion",
    "UnfinishedRun",
    "claim_thread",
    "commit_only_while_leased",
    "earliest_lease_expiry",
    "extend_reservation",
    "holds_lease",
    "release_refused",
    "release_thread",
    "renew_leases",
    "seize_lease",
    "suspend_lease",
    "unfinished_runs",
]


class LeaseLostError(Exception):
    """The run's lease was taken over (its fencing token is stale): it must not write anymore."""


@dataclass(frozen=True, slots=True)
class ThreadVersion:
    """A thread's row as a request read it: which row (a deleted thread's id may be taken
    again) and its fencing token."""

    created_at: datetime
    fencing_token: int


@dataclass(frozen=True, slots=True)
class Claim:
    """A thread claimed for a run: the seq before its reservation, and the run's fencing token."""

    last_seq: int
    fencing_token: int
    created_at: datetime | None = None
    """When the claimed thread was created (None: not told)."""

    def follows(self, read: ThreadVersion) -> bool:
        """Nothing else let the thread's graph state be written between the read of its row
        ``read`` and this claim: no other run claimed or took it over, no state update was
        made, and it is the same thread (not one made again under a deleted one's id)."""
        return self.fencing_token == read.fencing_token + 1 and self.created_at == read.created_at


@dataclass(frozen=True, slots=True)
class UnfinishedRun:
    """A run left ``running`` (:func:`unfinished_runs`), with what its thread's row says."""

    id: str
    thread_id: str
    trigger: Trigger
    inputs: list[dict[str, Any]] | None
    graph: str
    pruned_through: int
    tenant: str
    user_id: str
    fencing_token: int
    webhook: str | None = None
    """Where the run posts its record when it ends (``runs.webhook``), if anywhere."""
    metadata: dict[str, Any] | None = None
    """The client's metadata on the run."""


_LOCK_THREAD_ROW = sa.text("SELECT 1 FROM threads WHERE id = :p_id FOR UPDATE")
"""PostgreSQL: a takeover waits for the checkpoint writes in flight (each holds the thread's row
``FOR KEY SHARE``, ``storage.checkpoints``); the heartbeat's renewals do not conflict with those."""

_HOLDS_LEASE = (
    threads.c.id == sa.bindparam("p_id"),
    threads.c.active_run_id == sa.bindparam("p_run"),
    threads.c.fencing_token == sa.bindparam("p_token"),
)


_RELEASE_THREAD = direct(
    threads.update()
    .where(*_HOLDS_LEASE)
    .values(
        status=sa.bindparam("p_status"),
        last_reason=sa.bindparam("p_reason"),
        last_seq=sa.bindparam("p_seq"),
        tokens_used=threads.c.tokens_used + sa.bindparam("p_tokens", type_=sa.Integer),
        active_run_id=None,
        lease_owner=None,
        lease_expires_at=None,
        updated_at=sa.bindparam("p_now"),
    )
)


@functools.cache
def _claim_thread(expected: tuple[str, ...]) -> sa.Update:
    """The claim of a thread whose status is one of ``expected`` (a few sets, each built once:
    its statuses are the statement's own values, not an expanding ``IN``, so that it runs on the
    driver directly, ``storage.db.direct``)."""
    return direct(
        threads.update()
        .where(
            threads.c.id == sa.bindparam("p_id"),
            sa.or_(*(threads.c.status == status for status in expected)),
        )
        .values(
            status="running",
            active_run_id=sa.bindparam("p_run"),
            last_seq=threads.c.last_seq + sa.bindparam("p_reserve"),
            lease_owner=sa.bindparam("p_owner"),
            lease_expires_at=sa.bindparam("p_expires"),
            fencing_token=threads.c.fencing_token + 1,
            updated_at=sa.bindparam("p_now"),
            assistant_id=sa.bindparam("p_assistant"),
        )
        .returning(threads.c.last_seq, threads.c.fencing_token, threads.c.created_at)
    )


async def claim_thread(
    conn: DbConnection,
    thread_id: str,
    *,
    run_id: str,
    expected: Sequence[str],
    reserve: int,
    lease_owner: str,
    lease_expires_at: datetime,
    now: datetime,
    assistant_id: str | None = None,
    last: bool = False,
) -> Claim | None:
    """Mark the thread running if its status is one of ``expected``, lease it to ``lease_owner``
    with a new fencing token, and reserve the next ``reserve`` sequence numbers for the run.
    ``assistant_id``: the assistant of the owner's the run is on (None: its graph's own). None
    when another run got there first.

    ``last``: the claim is its transaction's last statement. On PostgreSQL the transaction then
    commits in the claim's message (one round trip saved), or, when another run got there first,
    commits nothing: the caller must end it with an error (it rolls back).

    The stored ``last_seq`` stays at the end of the reservation until the run ends, so a run that
    dies mid-way never has its numbers handed out again."""
    if not expected:
        raise ValueError("a claim expects at least one status")
    statement = _claim_thread(tuple(expected))
    parameters = {
        "p_id": thread_id,
        "p_run": run_id,
        "p_reserve": reserve,
        "p_owner": lease_owner,
        "p_expires": lease_expires_at,
        "p_now": now,
        "p_assistant": assistant_id,
    }
    result: Any
    if last and isinstance(conn, PostgresConnection):
        try:
            result = await conn.commit_with_one_row_change(statement, parameters)
        except DBAPIError as error:
            if refused_one_row_change(error):
                return None
            raise
    else:
        result = await execute(conn, statement, parameters)
    row = result.first()
    if row is None:
        return None
    return Claim(
        last_seq=int(row.last_seq) - reserve,
        fencing_token=int(row.fencing_token),
        created_at=row.created_at,
    )


async def extend_reservation(
    conn: DbConnection, thread_id: str, *, run_id: str, fencing_token: int, reserve: int
) -> int:
    """Reserve ``reserve`` more sequence numbers for the thread's active run; return the new end."""
    result = await conn.execute(
        threads.update()
        .where(*_HOLDS_LEASE)
        .values(last_seq=threads.c.last_seq + reserve)
        .returning(threads.c.last_seq),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )
    reserved_until = result.scalar()
    if reserved_until is None:
        raise LeaseLostError(run_id)
    return int(reserved_until)


async def holds_lease(
    conn: DbConnection, thread_id: str, *, run_id: str, fencing_token: int
) -> bool:
    """Whether the run still holds the thread's lease (its fencing token is current)."""
    found = await conn.scalar(
        sa.select(threads.c.id).where(*_HOLDS_LEASE),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )
    return found is not None


async def renew_leases(
    conn: DbConnection, *, lease_owner: str, run_ids: Sequence[str], expires_at: datetime
) -> set[str]:
    """Extend the leases ``lease_owner`` holds on these runs; return the runs it still holds."""
    if not run_ids:
        return set()
    result = await conn.execute(
        threads.update()
        .where(threads.c.lease_owner == lease_owner, threads.c.active_run_id.in_(run_ids))
        .values(lease_expires_at=expires_at)
        .returning(threads.c.active_run_id)
    )
    return {str(run_id) for run_id in result.scalars()}


async def seize_lease(
    conn: DbConnection,
    thread_id: str,
    *,
    run_id: str,
    fencing_token: int,
    lease_owner: str,
    lease_expires_at: datetime,
) -> int:
    """Take over the lease of a run whose process is gone: a compare-and-set on its fencing
    token that gives the thread a new one (returned), so whatever the old process still tries
    to write is refused. :class:`LeaseLostError` when another process seized it first.

    On PostgreSQL it first locks the thread's row ``FOR UPDATE``: a checkpoint write of the old
    process that is in flight (it holds the row ``FOR KEY SHARE``) commits first, and one that
    starts later waits for this transaction and finds the new token."""
    if conn.dialect.name == "postgresql":
        await conn.execute(_LOCK_THREAD_ROW, {"p_id": thread_id})
    result = await conn.execute(
        threads.update()
        .where(*_HOLDS_LEASE)
        .values(
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
            fencing_token=threads.c.fencing_token + 1,
        )
        .returning(threads.c.fencing_token),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )
    token = result.scalar()
    if token is None:
        raise LeaseLostError(run_id)
    return int(token)


async def suspend_lease(
    conn: DbConnection, thread_id: str, *, run_id: str, fencing_token: int, now: datetime
) -> None:
    """Give up the lease of a run stopped at a step boundary (the server is shutting down): the
    run stays ``running`` with an expired lease, for the next process to take over."""
    await conn.execute(
        threads.update().where(*_HOLDS_LEASE).values(lease_owner=None, lease_expires_at=now),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )


async def release_thread(
    conn: DbConnection,
    thread_id: str,
    *,
    run_id: str,
    fencing_token: int,
    status: ThreadStatus,
    reason: TerminalReason,
    last_seq: int,
    now: datetime,
    tokens_used: int = 0,
    last: bool = False,
) -> None:
    """End the run's lease, set the thread's new status and add the run's model tokens to the
    thread's total; :class:`LeaseLostError` when the run no longer holds the lease (nothing is
    changed, and the caller's transaction must roll back). ``last``: nothing follows in the
    transaction; on PostgreSQL the release then goes in one message with its ``COMMIT``, and a
    refused release fails that commit (nothing is stored) instead of raising here."""
    parameters = {
        "p_id": thread_id,
        "p_run": run_id,
        "p_token": fencing_token,
        "p_status": status,
        "p_reason": reason,
        "p_seq": last_seq,
        "p_now": now,
        "p_tokens": tokens_used,
    }
    if last and isinstance(conn, PostgresConnection):
        conn.defer_one_row_change(_RELEASE_THREAD, parameters)
        return
    result = await execute(conn, _RELEASE_THREAD, parameters)
    if result.rowcount != 1:
        raise LeaseLostError(run_id)


_STILL_LEASED = direct(
    threads.update().where(*_HOLDS_LEASE).values(fencing_token=threads.c.fencing_token)
)
"""Changes nothing but locks the thread's row until the commit, and only while the run holds the
lease: a takeover's claim then waits for that commit, or came first and refuses it."""


def commit_only_while_leased(
    conn: DbConnection, thread_id: str, *, run_id: str, fencing_token: int
) -> None:
    """Let the caller's transaction commit only if the run still holds the thread's lease when
    it does (an effect on Consentry's own tables, written by a run's graph in a transaction of
    its own): on PostgreSQL a check that goes with the ``COMMIT``, in its message, and fails it
    when the lease moved on (:func:`release_refused`; nothing is stored). On SQLite, one process
    on the file, no other can take the lease: nothing to check."""
    if isinstance(conn, PostgresConnection):
        conn.defer_one_row_change(
            _STILL_LEASED, {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token}
        )


def release_refused(error: BaseException) -> bool:
    """Whether ``error`` is a ``release_thread(last=True)`` (or a
    :func:`commit_only_while_leased`) refused at its commit (PostgreSQL): the run no longer held
    the lease, and nothing of its transaction was stored."""
    return refused_one_row_change(error)


async def unfinished_runs(
    conn: DbConnection, *, lease_expired_by: datetime | None
) -> list[UnfinishedRun]:
    """Runs left ``running`` whose lease expired by ``lease_expired_by`` (their process stopped,
    crashed or stalled); with None, every run left ``running`` (this process is the only one)."""
    query = (
        sa.select(
            runs.c.id,
            runs.c.thread_id,
            runs.c.trigger,
            runs.c.inputs,
            threads.c.graph,
            threads.c.pruned_through,
            threads.c.tenant,
            threads.c.user_id,
            threads.c.fencing_token,
            runs.c.webhook,
            runs.c.metadata,
        )
        .join(threads, threads.c.id == runs.c.thread_id)
        .where(runs.c.status == "running", threads.c.active_run_id == runs.c.id)
    )
    if lease_expired_by is not None:
        query = query.where(
            sa.or_(
                threads.c.lease_expires_at.is_(None),
                threads.c.lease_expires_at < lease_expired_by,
            )
        )
    return [UnfinishedRun(**row._mapping) for row in await conn.execute(query)]


async def earliest_lease_expiry(conn: DbConnection) -> datetime | None:
    """When the first lease among running threads expires (None: nothing runs)."""
    found = await conn.scalar(
        sa.select(sa.func.min(threads.c.lease_expires_at)).where(threads.c.status == "running")
    )
    return found if isinstance(found, datetime) else None  # min() keeps the column's UTC type
