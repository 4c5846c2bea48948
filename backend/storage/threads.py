"""Threads, their runs and their stored events.

A thread is claimed for a run by a compare-and-set on its ``status``: at most one run per thread,
across every process that shares the database. The claim is a lease: it names the process that
executes the run (``lease_owner``), lasts until ``lease_expires_at`` (the owner's heartbeat renews
it), and increments the thread's ``fencing_token``. Every later write of the run (its events, its
end) is checked against that token, so a process that lost its lease (it stalled, and another
took the run over) cannot store anything more for it: :class:`LeaseLostError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.errors import NotFoundError
from backend.principal import Principal
from backend.schemas.threads import ThreadSummary
from backend.storage.dialect import insert
from backend.storage.tables import approvals, events, runs, tenant_usage, threads

__all__ = [
    "Claim",
    "LeaseLostError",
    "ThreadRow",
    "add_token_usage",
    "claim_thread",
    "create_thread",
    "earliest_lease_expiry",
    "end_run",
    "events_after",
    "extend_reservation",
    "get_thread",
    "insert_events",
    "last_run_trigger",
    "last_stored_seq",
    "list_threads",
    "prune_events",
    "queue_run",
    "queued_runs",
    "recovery_of",
    "release_thread",
    "renew_leases",
    "request_cancel",
    "run_events",
    "run_status",
    "seize_lease",
    "start_run",
    "suspend_lease",
    "take_queued_run",
    "token_usage",
    "unfinished_runs",
]

ThreadRow = Any


class LeaseLostError(Exception):
    """The run's lease was taken over (its fencing token is stale): it must not write anymore."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A thread claimed for a run: the seq before its reservation, and the run's fencing token."""

    last_seq: int
    fencing_token: int


class RunIds(Protocol):
    @property
    def thread_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...


class StoredEvent(Protocol):
    @property
    def seq(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def data(self) -> str: ...


def summarize(row: ThreadRow) -> ThreadSummary:
    return ThreadSummary(
        thread_id=row.id,
        consent_policy=row.consent_policy,
        graph=row.graph,
        project_id=row.project_id,
        title=row.title,
        status=row.status,
        last_reason=row.last_reason,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def create_thread(
    conn: AsyncConnection,
    owner: Principal,
    *,
    thread_id: str,
    graph: str,
    project_id: str,
    title: str,
    consent_policy: str,
    now: datetime,
) -> None:
    await conn.execute(
        threads.insert().values(
            consent_policy=consent_policy,
            id=thread_id,
            tenant=owner.tenant,
            user_id=owner.user,
            graph=graph,
            project_id=project_id,
            title=title,
            status="idle",
            last_seq=0,
            created_at=now,
            updated_at=now,
        )
    )


# Statements on the path of every run are built once (SQLAlchemy then reuses their compiled
# form and cache key); they take their values as bound parameters.
_GET_THREAD = threads.select().where(
    threads.c.id == sa.bindparam("p_id"),
    threads.c.tenant == sa.bindparam("p_tenant"),
    threads.c.user_id == sa.bindparam("p_user"),
)
_HOLDS_LEASE = (
    threads.c.id == sa.bindparam("p_id"),
    threads.c.active_run_id == sa.bindparam("p_run"),
    threads.c.fencing_token == sa.bindparam("p_token"),
)
_RELEASE_THREAD = (
    threads.update()
    .where(*_HOLDS_LEASE)
    .values(
        status=sa.bindparam("p_status"),
        last_reason=sa.bindparam("p_reason"),
        last_seq=sa.bindparam("p_seq"),
        active_run_id=None,
        lease_owner=None,
        lease_expires_at=None,
        updated_at=sa.bindparam("p_now"),
    )
)
_START_RUN = runs.insert()
_END_RUN = (
    runs.update()
    .where(runs.c.id == sa.bindparam("p_id"))
    .values(
        status="ended",
        reason=sa.bindparam("p_reason"),
        error_code=sa.bindparam("p_error"),
        ended_at=sa.bindparam("p_now"),
    )
)
# Events are inserted only while the run holds the lease: ``INSERT ... SELECT ... FROM threads
# WHERE fencing_token = ?`` inserts nothing for a stale token, at no extra statement.
_INSERT_EVENTS = events.insert().from_select(
    ["thread_id", "seq", "run_id", "type", "data", "created_at"],
    sa.select(
        threads.c.id,
        sa.bindparam("p_seq", type_=sa.Integer),
        sa.bindparam("p_run", type_=sa.String),
        sa.bindparam("p_type", type_=sa.String),
        sa.bindparam("p_data", type_=sa.Text),
        sa.bindparam("p_now", type_=events.c.created_at.type),
    ).where(
        threads.c.id == sa.bindparam("p_id"),
        threads.c.fencing_token == sa.bindparam("p_token"),
    ),
)
_INSERT_EVENTS_POSTGRES = sa.text(
    "INSERT INTO events (thread_id, seq, run_id, type, data, created_at) "
    "SELECT t.id, e.seq, :p_run, e.type, e.data, :p_now FROM threads AS t, "
    "unnest(CAST(:p_seqs AS integer[]), CAST(:p_types AS text[]), CAST(:p_datas AS text[])) "
    "AS e(seq, type, data) "
    "WHERE t.id = :p_id AND t.fencing_token = :p_token"
).bindparams(sa.bindparam("p_now", type_=events.c.created_at.type))
_CLAIM_THREAD = (
    threads.update()
    .where(
        threads.c.id == sa.bindparam("p_id"),
        threads.c.status.in_(sa.bindparam("p_expected", expanding=True)),
    )
    .values(
        status="running",
        active_run_id=sa.bindparam("p_run"),
        last_seq=threads.c.last_seq + sa.bindparam("p_reserve"),
        lease_owner=sa.bindparam("p_owner"),
        lease_expires_at=sa.bindparam("p_expires"),
        fencing_token=threads.c.fencing_token + 1,
        updated_at=sa.bindparam("p_now"),
    )
    .returning(threads.c.last_seq, threads.c.fencing_token)
)


async def get_thread(conn: AsyncConnection, owner: Principal, thread_id: str) -> ThreadRow:
    params = {"p_id": thread_id, "p_tenant": owner.tenant, "p_user": owner.user}
    row = (await conn.execute(_GET_THREAD, params)).first()
    if row is None:
        raise NotFoundError.of("thread", thread_id)
    return row


async def list_threads(
    conn: AsyncConnection, owner: Principal, *, limit: int, now: datetime
) -> list[ThreadSummary]:
    """The owner's threads, newest activity first. A thread whose consents all expired reads
    ``idle``, as in the thread's own detail."""
    live_consent = (
        sa.exists()
        .where(
            approvals.c.thread_id == threads.c.id,
            approvals.c.status == "pending",
            approvals.c.expires_at > now,
        )
        .correlate(threads)
    )
    status = sa.case(
        (sa.and_(threads.c.status == "awaiting_consent", ~live_consent), "idle"),
        else_=threads.c.status,
    ).label("status")
    columns = [column for column in threads.c if column.name != "status"]
    rows = await conn.execute(
        sa.select(*columns, status)
        .where(threads.c.tenant == owner.tenant, threads.c.user_id == owner.user)
        .order_by(threads.c.updated_at.desc())
        .limit(limit)
    )
    return [summarize(row) for row in rows]


async def claim_thread(
    conn: AsyncConnection,
    thread_id: str,
    *,
    run_id: str,
    expected: Sequence[str],
    reserve: int,
    lease_owner: str,
    lease_expires_at: datetime,
    now: datetime,
) -> Claim | None:
    """Mark the thread running if its status is one of ``expected``, lease it to ``lease_owner``
    with a new fencing token, and reserve the next ``reserve`` sequence numbers for the run.
    None when another run got there first.

    The stored ``last_seq`` stays at the end of the reservation until the run ends, so a run that
    dies mid-way never has its numbers handed out again."""
    row = (
        await conn.execute(
            _CLAIM_THREAD,
            {
                "p_id": thread_id,
                "p_expected": list(expected),
                "p_run": run_id,
                "p_reserve": reserve,
                "p_owner": lease_owner,
                "p_expires": lease_expires_at,
                "p_now": now,
            },
        )
    ).first()
    if row is None:
        return None
    return Claim(last_seq=int(row.last_seq) - reserve, fencing_token=int(row.fencing_token))


async def extend_reservation(
    conn: AsyncConnection, thread_id: str, *, run_id: str, fencing_token: int, reserve: int
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


async def renew_leases(
    conn: AsyncConnection, *, lease_owner: str, run_ids: Sequence[str], expires_at: datetime
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
    conn: AsyncConnection,
    thread_id: str,
    *,
    run_id: str,
    fencing_token: int,
    lease_owner: str,
    lease_expires_at: datetime,
) -> int:
    """Take over the lease of a run whose process is gone: a compare-and-set on its fencing
    token that gives the thread a new one (returned), so whatever the old process still tries
    to write is refused. :class:`LeaseLostError` when another process seized it first."""
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
    conn: AsyncConnection, thread_id: str, *, run_id: str, fencing_token: int, now: datetime
) -> None:
    """Give up the lease of a run stopped at a step boundary (the server is shutting down): the
    run stays ``running`` with an expired lease, for the next process to take over."""
    await conn.execute(
        threads.update().where(*_HOLDS_LEASE).values(lease_owner=None, lease_expires_at=now),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )


async def release_thread(
    conn: AsyncConnection,
    thread_id: str,
    *,
    run_id: str,
    fencing_token: int,
    status: str,
    reason: str,
    last_seq: int,
    now: datetime,
) -> None:
    """End the run's lease and set the thread's new status; :class:`LeaseLostError` when the run
    no longer holds the lease (nothing is changed, and the caller's transaction must roll back)."""
    result = await conn.execute(
        _RELEASE_THREAD,
        {
            "p_id": thread_id,
            "p_run": run_id,
            "p_token": fencing_token,
            "p_status": status,
            "p_reason": reason,
            "p_seq": last_seq,
            "p_now": now,
        },
    )
    if result.rowcount != 1:
        raise LeaseLostError(run_id)


async def start_run(
    conn: AsyncConnection, *, run_id: str, thread_id: str, trigger: str, now: datetime
) -> None:
    await conn.execute(
        _START_RUN,
        {
            "id": run_id,
            "thread_id": thread_id,
            "trigger": trigger,
            "status": "running",
            "started_at": now,
        },
    )


async def end_run(
    conn: AsyncConnection, run_id: str, *, reason: str, error_code: str | None, now: datetime
) -> None:
    await conn.execute(
        _END_RUN, {"p_id": run_id, "p_reason": reason, "p_error": error_code, "p_now": now}
    )


async def insert_events(
    conn: AsyncConnection,
    run: RunIds,
    rows: Iterable[StoredEvent],
    *,
    fencing_token: int,
    now: datetime,
) -> None:
    """Store serialized events of one run, if it still holds the lease (else
    :class:`LeaseLostError`, and the caller's transaction must roll back)."""
    values = [
        {
            "p_id": run.thread_id,
            "p_token": fencing_token,
            "p_seq": row.seq,
            "p_run": run.run_id,
            "p_type": row.type,
            "p_data": row.data,
            "p_now": now,
        }
        for row in rows
    ]
    if not values:
        return
    if conn.dialect.name == "postgresql":
        # One statement for all rows (psycopg reports no row count for executemany).
        result = await conn.execute(
            _INSERT_EVENTS_POSTGRES,
            {
                "p_id": run.thread_id,
                "p_token": fencing_token,
                "p_run": run.run_id,
                "p_now": now,
                "p_seqs": [v["p_seq"] for v in values],
                "p_types": [v["p_type"] for v in values],
                "p_datas": [v["p_data"] for v in values],
            },
        )
    else:
        result = await conn.execute(_INSERT_EVENTS, values)
    if result.rowcount != len(values):
        raise LeaseLostError(run.run_id)


async def last_run_trigger(conn: AsyncConnection, thread_id: str) -> str | None:
    """How the thread's most recent run was started (``message`` or ``resume``)."""
    found = await conn.scalar(
        sa.select(runs.c.trigger)
        .where(runs.c.thread_id == thread_id)
        .order_by(runs.c.started_at.desc())
        .limit(1)
    )
    return None if found is None else str(found)


async def unfinished_runs(conn: AsyncConnection, *, lease_expired_by: datetime | None) -> list[Any]:
    """Runs left ``running`` whose lease expired by ``lease_expired_by`` (their process stopped,
    crashed or stalled); with None, every run left ``running`` (this process is the only one)."""
    query = (
        sa.select(
            runs.c.id,
            runs.c.thread_id,
            threads.c.last_seq,
            threads.c.tenant,
            threads.c.user_id,
            threads.c.fencing_token,
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
    return list(await conn.execute(query))


async def queue_run(
    conn: AsyncConnection,
    thread_id: str,
    *,
    run_id: str,
    fencing_token: int,
    inputs: list[dict[str, Any]],
) -> None:
    """Hand a claimed run to the workers: it waits as ``queued`` with its graph inputs, and the
    thread's lease is free for the worker that takes it."""
    await conn.execute(
        runs.update().where(runs.c.id == run_id).values(status="queued", inputs=inputs)
    )
    await conn.execute(
        threads.update().where(*_HOLDS_LEASE).values(lease_owner=None, lease_expires_at=None),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.select(sa.func.pg_notify("consentry_runs", run_id)))


async def request_cancel(conn: AsyncConnection, run_id: str) -> None:
    """Tell whichever process executes ``run_id`` to cancel it (PostgreSQL ``NOTIFY``)."""
    await conn.execute(sa.select(sa.func.pg_notify("consentry_cancels", run_id)))


async def queued_runs(conn: AsyncConnection, *, limit: int) -> list[str]:
    """Runs waiting for a worker, oldest first."""
    rows = await conn.execute(
        sa.select(runs.c.id)
        .where(runs.c.status == "queued")
        .order_by(runs.c.started_at)
        .limit(limit)
    )
    return [str(row.id) for row in rows]


async def take_queued_run(
    conn: AsyncConnection,
    run_id: str,
    *,
    lease_owner: str,
    lease_expires_at: datetime,
) -> Any | None:
    """Take a queued run for this worker (a compare-and-set: one worker gets it), leasing its
    thread with a new fencing token. The run's row joined with its thread's (owner, graph,
    policy, seq, token) and its inputs, or None when another worker took it."""
    taken = (
        await conn.execute(
            runs.update()
            .where(runs.c.id == run_id, runs.c.status == "queued")
            .values(status="running")
            .returning(runs.c.thread_id, runs.c.trigger, runs.c.inputs)
        )
    ).first()
    if taken is None:
        return None
    thread = (
        await conn.execute(
            threads.update()
            .where(threads.c.id == taken.thread_id, threads.c.active_run_id == run_id)
            .values(
                lease_owner=lease_owner,
                lease_expires_at=lease_expires_at,
                fencing_token=threads.c.fencing_token + 1,
            )
            .returning(
                threads.c.tenant,
                threads.c.user_id,
                threads.c.graph,
                threads.c.consent_policy,
                threads.c.last_seq,
                threads.c.fencing_token,
            )
        )
    ).first()
    if thread is None:
        raise LeaseLostError(run_id)
    return (taken, thread)


async def earliest_lease_expiry(conn: AsyncConnection) -> datetime | None:
    """When the first lease among running threads expires (None: nothing runs)."""
    found = await conn.scalar(
        sa.select(sa.func.min(threads.c.lease_expires_at)).where(threads.c.status == "running")
    )
    return found if isinstance(found, datetime) else None  # min() keeps the column's UTC type


async def recovery_of(conn: AsyncConnection, run_id: str) -> str | None:
    """The run that continues ``run_id`` after its process died (trigger ``recovery``, the next
    run of the thread, claimed in the transaction that closed the dead one), if any."""
    dead = (
        await conn.execute(
            sa.select(runs.c.thread_id, runs.c.started_at, runs.c.error_code).where(
                runs.c.id == run_id
            )
        )
    ).first()
    if dead is None or dead.error_code != "server_restarted":
        return None
    following = (
        await conn.execute(
            sa.select(runs.c.id, runs.c.trigger)
            .where(runs.c.thread_id == dead.thread_id, runs.c.started_at > dead.started_at)
            .order_by(runs.c.started_at)
            .limit(1)
        )
    ).first()
    if following is None or following.trigger != "recovery":
        return None
    return str(following.id)


async def run_status(conn: AsyncConnection, run_id: str) -> str | None:
    found = await conn.scalar(sa.select(runs.c.status).where(runs.c.id == run_id))
    return None if found is None else str(found)


async def run_events(conn: AsyncConnection, thread_id: str, run_id: str) -> list[Any]:
    """The stored (durable) events of one run, in order."""
    rows = await conn.execute(
        sa.select(events.c.seq, events.c.type, events.c.data)
        .where(events.c.thread_id == thread_id, events.c.run_id == run_id)
        .order_by(events.c.seq)
    )
    return list(rows)


async def token_usage(conn: AsyncConnection, thread_id: str, tenant: str) -> tuple[int, int]:
    """Tokens used so far by the thread and by its tenant."""
    thread = await conn.scalar(sa.select(threads.c.tokens_used).where(threads.c.id == thread_id))
    owner = await conn.scalar(
        sa.select(tenant_usage.c.tokens_used).where(tenant_usage.c.tenant == tenant)
    )
    return int(thread or 0), int(owner or 0)


async def add_token_usage(conn: AsyncConnection, thread_id: str, tenant: str, tokens: int) -> None:
    await conn.execute(
        threads.update()
        .where(threads.c.id == thread_id)
        .values(tokens_used=threads.c.tokens_used + tokens)
    )
    upsert = insert(conn, tenant_usage).values(tenant=tenant, tokens_used=tokens)
    await conn.execute(
        upsert.on_conflict_do_update(
            index_elements=[tenant_usage.c.tenant],
            set_={"tokens_used": tenant_usage.c.tokens_used + upsert.excluded.tokens_used},
        )
    )


async def events_after(conn: AsyncConnection, thread_id: str, after_seq: int) -> list[Any]:
    """The thread's stored events after ``after_seq``, in order (all runs)."""
    rows = await conn.execute(
        sa.select(events.c.seq, events.c.type, events.c.data, events.c.run_id)
        .where(events.c.thread_id == thread_id, events.c.seq > after_seq)
        .order_by(events.c.seq)
    )
    return list(rows)


async def last_stored_seq(conn: AsyncConnection, thread_id: str) -> int:
    found = await conn.scalar(
        sa.select(sa.func.max(events.c.seq)).where(events.c.thread_id == thread_id)
    )
    return int(found or 0)


async def prune_events(conn: AsyncConnection, *, older_than: datetime) -> int:
    """Forget stored events older than the retention window; each thread remembers how far its
    log was pruned, so a client asking for older events gets a ``resync``."""
    pruned = await conn.execute(
        sa.select(events.c.thread_id, sa.func.max(events.c.seq).label("seq"))
        .where(events.c.created_at < older_than)
        .group_by(events.c.thread_id)
    )
    for row in list(pruned):
        await conn.execute(
            threads.update()
            .where(threads.c.id == row.thread_id, threads.c.pruned_through < row.seq)
            .values(pruned_through=row.seq)
        )
    result = await conn.execute(events.delete().where(events.c.created_at < older_than))
    return result.rowcount
