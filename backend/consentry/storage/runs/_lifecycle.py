"""A run's life in its row: started (with the graph inputs it starts with), ended (with its audit
records and token usage), handed to the workers (API-only replicas: ``queued``, taken with a new
fencing token), cancelled across processes (a ``NOTIFY``), and the chain of runs that continued a
crashed one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import TerminalReason, TokenUsage, Trigger
from consentry.storage.audit import record_audit
from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.db.direct import direct
from consentry.storage.leases import _HOLDS_LEASE, LeaseLostError
from consentry.storage.tables import runs, threads
from consentry.storage.threads import add_tenant_usage

__all__ = [
    "CANCELS_CHANNEL",
    "ROLL_BACK",
    "RUNS_CHANNEL",
    "TakenRun",
    "continued_runs",
    "end_run",
    "queue_run",
    "queued_runs",
    "record_run_end",
    "recovery_of",
    "request_cancel",
    "start_run",
    "take_queued_run",
]

RUNS_CHANNEL = "consentry_runs"
"""PostgreSQL channel notified with a run id when a run is queued for the workers."""
CANCELS_CHANNEL = "consentry_cancels"
"""PostgreSQL channel notified with a run id when a client asks to cancel it."""


@dataclass(frozen=True, slots=True)
class TakenRun:
    """A queued run a worker took (:func:`take_queued_run`): the run's trigger and inputs, and
    its thread's owner, graph, policy, seq and new fencing token."""

    thread_id: str
    trigger: Trigger
    inputs: list[dict[str, Any]] | None
    tenant: str
    user_id: str
    graph: str
    consent_policy: ConsentPolicy
    last_seq: int
    fencing_token: int
    run_options: dict[str, Any] | None
    webhook: str | None


_START_RUN = direct(runs.insert())
_CHAIN_LIMIT = 20
"""Continuations of continuations looked back through (each crash or retry adds one)."""


_END_RUN = direct(
    runs.update()
    .where(runs.c.id == sa.bindparam("p_id"))
    .values(
        status="ended",
        reason=sa.bindparam("p_reason"),
        error_code=sa.bindparam("p_error"),
        ended_at=sa.bindparam("p_now"),
        input_tokens=sa.bindparam("p_input_tokens"),
        output_tokens=sa.bindparam("p_output_tokens"),
    )
)


async def start_run(
    conn: DbConnection,
    *,
    run_id: str,
    thread_id: str,
    trigger: Trigger,
    inputs: list[dict[str, Any]],
    now: datetime,
    webhook: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Record a claimed run with the graph inputs it starts with (``runtime.run_inputs``): what
    continues it if its process dies before its graph got far (``runtime.continuation``). A run
    with a ``webhook`` keeps it, with the client's ``metadata``, from its claim: its end posts
    them, however soon it comes."""
    row: dict[str, Any] = {
        "id": run_id,
        "thread_id": thread_id,
        "trigger": trigger,
        "status": "running",
        "inputs": inputs,
        "started_at": now,
    }
    if webhook is not None:  # (a run without one sends the statement it always sent)
        row |= {"webhook": webhook, "metadata": metadata}
    await execute_unread(conn, _START_RUN, row)


async def end_run(
    conn: DbConnection,
    run_id: str,
    *,
    reason: TerminalReason,
    error_code: str | None,
    now: datetime,
    usage: TokenUsage,
) -> None:
    await execute_unread(
        conn,
        _END_RUN,
        {
            "p_id": run_id,
            "p_reason": reason,
            "p_error": error_code,
            "p_now": now,
            "p_input_tokens": usage.input_tokens,
            "p_output_tokens": usage.output_tokens,
        },
    )


async def record_run_end(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    run_id: str,
    reason: TerminalReason,
    error_code: str | None,
    now: datetime,
    usage: TokenUsage | None = None,
) -> None:
    """End the run with its terminal reason and token usage, and its audit records (``error``
    when it failed with a code, then ``run_ended``), in the caller's transaction. The usage is
    added to the tenant's total; the thread's is added as its lease is released
    (``leases.release_thread``), in the same statement as the rest of the thread's row."""
    usage = usage or TokenUsage()
    if error_code is not None:
        await record_audit(
            conn,
            owner,
            action="error",
            thread_id=thread_id,
            run_id=run_id,
            actor="system",
            now=now,
            data={"code": error_code},
        )
    await record_audit(
        conn,
        owner,
        action="run_ended",
        thread_id=thread_id,
        run_id=run_id,
        actor="system",
        now=now,
        data={"reason": reason, **usage.model_dump()},
    )
    await end_run(conn, run_id, reason=reason, error_code=error_code, now=now, usage=usage)
    if usage.input_tokens or usage.output_tokens:
        await add_tenant_usage(conn, owner.tenant, usage.input_tokens + usage.output_tokens)


async def queue_run(conn: DbConnection, thread_id: str, *, run_id: str, fencing_token: int) -> None:
    """Hand a claimed run to the workers: it waits as ``queued`` (with the graph inputs stored
    when it was claimed), and the thread's lease is free for the worker that takes it."""
    await conn.execute(runs.update().where(runs.c.id == run_id).values(status="queued"))
    await conn.execute(
        threads.update().where(*_HOLDS_LEASE).values(lease_owner=None, lease_expires_at=None),
        {"p_id": thread_id, "p_run": run_id, "p_token": fencing_token},
    )
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.select(sa.func.pg_notify(RUNS_CHANNEL, run_id)))


ROLL_BACK = "rollback"
"""What a cancel's notification adds after the run id when the run is to be rolled back."""


async def request_cancel(conn: DbConnection, run_id: str, *, roll_back: bool = False) -> None:
    """Tell whichever process executes ``run_id`` to cancel it (PostgreSQL ``NOTIFY``; the
    payload is the run id, then `` rollback`` with ``roll_back``)."""
    payload = f"{run_id} {ROLL_BACK}" if roll_back else run_id
    await conn.execute(sa.select(sa.func.pg_notify(CANCELS_CHANNEL, payload)))


async def queued_runs(conn: DbConnection, *, limit: int) -> list[str]:
    """Runs waiting for a worker, oldest first."""
    rows = await conn.execute(
        sa.select(runs.c.id)
        .where(runs.c.status == "queued")
        .order_by(runs.c.started_at)
        .limit(limit)
    )
    return [str(row.id) for row in rows]


async def take_queued_run(
    conn: DbConnection,
    run_id: str,
    *,
    lease_owner: str,
    lease_expires_at: datetime,
) -> TakenRun | None:
    """Take a queued run for this worker (a compare-and-set: one worker gets it), leasing its
    thread with a new fencing token; None when another worker took it."""
    taken = (
        await conn.execute(
            runs.update()
            .where(runs.c.id == run_id, runs.c.status == "queued")
            .values(status="running")
            .returning(runs.c.thread_id, runs.c.trigger, runs.c.inputs, runs.c.webhook)
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
                threads.c.run_options,
            )
        )
    ).first()
    if thread is None:
        raise LeaseLostError(run_id)
    return TakenRun(**taken._mapping, **thread._mapping)


async def recovery_of(conn: DbConnection, run_id: str) -> str | None:
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


async def continued_runs(conn: DbConnection, thread_id: str, *, run_id: str) -> list[str]:
    """The runs whose work run ``run_id`` (a ``recovery`` or a ``retry``) continues: the thread's
    runs before it, newest first, back to the first one that was not a continuation itself."""
    rows = await conn.execute(
        sa.select(runs.c.id, runs.c.trigger)
        .where(runs.c.thread_id == thread_id, runs.c.id != run_id)
        .order_by(runs.c.started_at.desc())
        .limit(_CHAIN_LIMIT)
    )
    chain: list[str] = []
    for row in rows:
        chain.append(str(row.id))
        if row.trigger not in ("recovery", "retry"):
            break
    return chain
