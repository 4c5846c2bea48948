"""Cancelling many runs at once (the LangGraph SDK's ``runs.cancel_many``): the owner's runs
waiting in a thread's queue, the active ones, or both, of one thread or of all the owner's.

The waiting ones are taken out of their queues first, so that none starts when the run before
it is cancelled; each active one is then cancelled as ``runs.cancel`` cancels one (its step cut
within half a second). A waiting run its queue started meanwhile is cancelled as an active one
(when active ones are asked for); a run that ended meanwhile, or whose thread was deleted, is
passed over. A consent is never lost to it: a run waiting for a decision has ended, and is
neither waiting nor active. With ``action="rollback"`` each is rolled back instead
(``_rollback``): a waiting one dropped, an active one cancelled and what it wrote undone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.sdk._rollback import RunRollback
from consentry.runtime.runs.sdk.queue import RunQueue

__all__ = ["cancel_many"]


async def cancel_many(
    queue: RunQueue,
    runs: RunService,
    owner: Principal,
    *,
    thread_id: str | None,
    run_ids: Sequence[str] | None,
    status: Literal["pending", "running", "all"],
    rollback: RunRollback | None = None,
) -> list[tuple[str, str]]:
    """Cancel the owner's runs ``status`` names (of ``thread_id``, or of all the owner's
    threads; only ``run_ids`` when given): ``(thread_id, run_id)`` of each cancelled. With
    ``rollback``: each rolled back."""
    found = await queue.owner_runs(
        owner,
        thread_id=thread_id,
        waiting=status in ("pending", "all"),
        running=status in ("running", "all"),
    )
    wanted = None if run_ids is None else set(run_ids)
    active_too = status in ("running", "all")
    cancelled: list[tuple[str, str]] = []
    for thread, run_id, queued in found:
        if wanted is not None and run_id not in wanted:
            continue
        try:
            if rollback is not None:
                if await rollback.run(queue, owner, thread, run_id, active=active_too):
                    cancelled.append((thread, run_id))
            elif queued and await queue.cancel(owner, thread, run_id):
                cancelled.append((thread, run_id))
            elif not queued or active_too:  # active, or started by its queue meanwhile
                await runs.cancel(owner, thread, run_id=run_id)
                cancelled.append((thread, run_id))
        except NotFoundError:  # its thread was deleted meanwhile
            if thread_id is not None:
                raise
        except ConflictError as exc:  # it ended meanwhile (a rollback's own refusal is said)
            if rollback is not None and exc.code != "no_active_run":
                raise
    return cancelled
