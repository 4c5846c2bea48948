"""Continuing a run's work after it stopped half-way: a run whose process died (taken over at
start-up, or by any replica once its lease expired) and a failed run a client retries. What
continues the work comes from the graph's checkpoint and the run's stored inputs
(``_continuation``); a dead run is first closed as far as its graph got (``_dead_runs``)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from uuid import uuid4

from consentry.errors import ConflictError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.consents import ExpiryAlarm, recorded_decisions
from consentry.runtime.runs.execute import (
    NOWHERE,
    ActiveRun,
    ClaimHold,
    GraphInput,
    load_inputs,
)
from consentry.runtime.runs.recover._dead_runs import (
    Recovery,
    close_dead_run,
    dead_runs,
    read_recovery,
)
from consentry.runtime.runs.start import (
    Launcher,
    RunTarget,
    RunTargets,
    continuation,
    refuse_if_running,
)
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.leases import LeaseLostError, UnfinishedRun

__all__ = ["retry_failed_run", "take_over_dead_runs"]


async def take_over_dead_runs(
    launcher: Launcher,
    targets: RunTargets,
    alarm: ExpiryAlarm,
    *,
    lease_expired_by: datetime | None,
    only: Mapping[str, bool] | None = None,
) -> int:
    """Take over every run whose process died (``_dead_runs.dead_runs``), or ``only`` those of
    them (run id → whether to continue its work, else only close it); how many this process
    got (another one may win some)."""
    taken = 0
    for run in await dead_runs(launcher.db, lease_expired_by=lease_expired_by):
        if only is not None and run.id not in only:
            continue
        try:
            continues = only is None or only[run.id]
            await _take_over(launcher, targets, alarm, run, continue_work=continues)
        except LeaseLostError:
            continue  # another process took it first
        taken += 1
    return taken


async def _take_over(
    launcher: Launcher,
    targets: RunTargets,
    alarm: ExpiryAlarm,
    dead: UnfinishedRun,
    *,
    continue_work: bool = True,
) -> None:
    """Close a run a dead process left open as far as its graph got, and continue its work
    from the last checkpoint, in one transaction (so nobody sees the thread idle in between):
    see ``_dead_runs``. Nothing is continued when nothing is left to run, the graph is no
    longer served, or not ``continue_work``. ``LeaseLostError`` when another process took it
    first."""
    executor = launcher.executor
    owner = Principal(dead.tenant, dead.user_id)
    async with launcher.db.read() as conn:
        thread = await threads_repo.get_thread(conn, owner, dead.thread_id)
    recovery = Recovery()
    target: RunTarget | None = None
    with contextlib.suppress(InvalidRequestError):  # a graph no longer served: just close
        # As the thread will be once the dead run is closed (its last run stopped).
        target = replace(targets.of(thread), last_reason="failed")
        recovery = await read_recovery(
            launcher.db,
            executor.graph(target.spec.name),
            target,
            dead,
            position=await executor.position(target.spec, target.thread_id),
            deadlines=executor.deadlines,
        )
        if not continue_work:
            recovery = replace(recovery, continuation=[])
    if target is not None and dead.webhook is not None and recovery.continuation:
        # The run that continues the work posts its end to the dead run's webhook.
        options = replace(target.run_options, webhook=dead.webhook, metadata=dead.metadata)
        target = replace(target, run_options=options)
    now, run_id = launcher.clock(), str(uuid4())
    async with launcher.db.write() as conn:
        closed = await close_dead_run(
            conn, dead, recovery, leases=executor.leases, clock=launcher.clock
        )
        claim = None
        if target is not None and recovery.continuation:
            claim = await launcher.try_claim(
                conn,
                owner,
                target,
                run_id,
                "recovery",
                now,
                (closed.status,),
                recovery.continuation,
            )
    launcher.metrics.run_closed_after_crash(dead.graph, closed.reason)
    for consent in closed.consents:
        launcher.metrics.consent_requested(dead.graph, consent.kind)
        alarm.consent_requested(consent.expires_at)
    if target is not None and claim is not None:
        run = await launcher.launch(owner, target, run_id, claim, "recovery", recovery.continuation)
        run.events.detach()  # nobody listens yet; clients join with GET .../stream


async def retry_failed_run(
    launcher: Launcher, target: RunTarget, owner: Principal, key: ClaimHold | None
) -> ActiveRun:
    """Run a failed run's remaining work again, from the thread's last checkpoint: the step
    that failed (a model provider that gave up, say) and whatever follows it, or the whole run
    when its graph never got its inputs (``_continuation``); 409 ``nothing_to_retry``."""
    refuse_if_running(target)
    inputs: list[GraphInput] = []
    position = NOWHERE
    if target.last_reason == "failed":
        position = await launcher.executor.position(target.spec, target.thread_id)
        async with launcher.db.read() as conn:
            recorded = await recorded_decisions(conn, target, position.waiting)
            failed = await runs_repo.last_run(conn, target.thread_id)
        inputs = continuation(
            position,
            recorded,
            run_id=failed.id if failed is not None else None,
            inputs=load_inputs(failed.inputs)
            if failed is not None and failed.inputs is not None
            else None,
        )
    if not inputs:
        raise ConflictError(
            "This thread has no failed run to retry: its last run ended "
            f"{target.last_reason or 'never'!s}, and its graph has nothing left to run.",
            code="nothing_to_retry",
            details={"thread_id": target.thread_id, "last_reason": target.last_reason},
        )
    return await launcher.continue_with(owner, target, inputs, "retry", key, position=position)
