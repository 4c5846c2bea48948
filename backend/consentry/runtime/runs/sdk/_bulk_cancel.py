"""Cancelling many runs at once (the LangGraph SDK's ``runs.cancel_many``): the owner's runs
waiting in a thread's queue, the active ones, or both, of one thread or of all the owner's.

The waiting ones are taken out of their queues first, so that none starts when the run before
it is cancelled; each active one is then cancelled as ``runs.cancel`` cancels one (its step cut
within half a second). A waiting run its queue started meanwhile is cancelled as an active one
(when active ones are asked for); a run that ended meanwhile, or whose thread was deleted, is
passed over. A consent is never lost to it: a run waiting for a decision has ended, and is
neither waiting nor active.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Literal

from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.sdk._run_queue import RunQueue

__all__ = ["cancel_many"]


async def cancel_many(
    queue: RunQueue,
    runs: RunService,
    owner: Principal,
    *,
    thread_id: str | None,
    run_ids: Sequence[str] | None,
    status: Literal["pending", "running", "all"],
) -> list[tuple[str, str]]:
    """Cancel the owner's runs ``status`` names (of ``thread_id``, or of all the owner's
    threads; only ``run_ids`` when given): ``(thread_id, run_id)`` of each cancelled."""
    found = await queue.owner_runs(
        owner,
        thread_id=thread_id,
        waiting=status in ("pending", "all"),
        running=status in ("running", "all"),
    )
    wanted = None if run_ids is None else set(run_ids)
    active_too = status in ("running", "all")
    gone = (ConflictError, NotFoundError) if thread_id is None else (ConflictError,)
    cancelled: list[tuple[str, str]] = []
    for thread, run_id, queued in found:
        if wanted is not None and run_id not in wanted:
            continue
        with contextlib.suppress(*gone):  # it ended meanwhile, or its thread was deleted
            if queued and await queue.cancel(owner, thread, run_id):
                cancelled.append((thread, run_id))
            elif not queued or active_too:  # active, or started by its queue meanwhile
                await runs.cancel(owner, thread, run_id=run_id)
                cancelled.append((thread, run_id))
    return cancelled
