"""Claiming a thread for a new run, in the caller's transaction: one compare-and-set that leases
the thread to this process (bumping its fencing token, reserving event numbers), then the run's
row (with the graph inputs it starts with) and its ``run_started`` audit record. Nothing is
written when the thread is not as expected."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from consentry.principal import Principal
from consentry.runtime.replicas import LeaseKeeper
from consentry.runtime.runs.execute import SEQ_RESERVATION
from consentry.runtime.runs.start._targets import RunTarget
from consentry.schemas.events import Trigger
from consentry.storage import leases as leases_repo
from consentry.storage import runs as runs_repo
from consentry.storage.audit import record_audit
from consentry.storage.db.database import DbConnection
from consentry.storage.leases import Claim

__all__ = ["claim_run"]


async def claim_run(
    conn: DbConnection,
    owner: Principal,
    target: RunTarget,
    *,
    run_id: str,
    trigger: Trigger,
    inputs: list[dict[str, Any]],
    leases: LeaseKeeper,
    now: datetime,
    expected: tuple[str, ...],
    last: bool = False,
) -> Claim | None:
    """Lease ``target``'s thread for run ``run_id`` if its status is one of ``expected``, and
    record the run's start with its graph ``inputs`` (``run_inputs.dump_inputs``); None (and
    nothing written) when it is not.

    ``last``: the claim is the transaction's last work, and a refused claim ends it with an
    error. The run's start is then written first and the claim goes last, with the transaction's
    commit on PostgreSQL (``leases.claim_thread``): a round trip saved."""

    async def claimed() -> Claim | None:
        return await leases_repo.claim_thread(
            conn,
            target.thread_id,
            run_id=run_id,
            expected=expected,
            reserve=SEQ_RESERVATION,
            lease_owner=leases.owner,
            lease_expires_at=leases.expires_at(now),
            now=now,
            assistant_id=target.assistant_id,
            last=last,
        )

    if last:
        await _record_start(conn, owner, target, run_id, trigger, inputs, now)
        return await claimed()
    claim = await claimed()
    if claim is not None:
        await _record_start(conn, owner, target, run_id, trigger, inputs, now)
    return claim


async def _record_start(
    conn: DbConnection,
    owner: Principal,
    target: RunTarget,
    run_id: str,
    trigger: Trigger,
    inputs: list[dict[str, Any]],
    now: datetime,
) -> None:
    options = target.run_options
    await runs_repo.start_run(
        conn,
        run_id=run_id,
        thread_id=target.thread_id,
        trigger=trigger,
        inputs=inputs,
        now=now,
        webhook=options.webhook,
        metadata=dict(options.metadata) if options.metadata is not None else None,
    )
    await record_audit(
        conn,
        owner,
        action="run_started",
        thread_id=target.thread_id,
        run_id=run_id,
        actor="system" if trigger in ("expiry", "recovery") else owner.display,
        now=now,
        data={"trigger": trigger, "graph": target.spec.name},
    )
