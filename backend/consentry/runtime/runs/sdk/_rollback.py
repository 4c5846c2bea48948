"""Rolling a run back (the LangGraph SDK's ``runs.cancel(action="rollback")``,
``cancel_many(action="rollback")`` and ``multitask_strategy="rollback"``): the run is cancelled,
what it wrote of the thread's graph state is deleted, and the run is no longer shown on the SDK
face.

- **A run waiting in the run queue** never ran: it is taken out of the queue and marked
  deleted.
- **An active run** is cancelled as ``runs.cancel`` cancels one (its step cut within half a
  second), asked to roll back: the transaction that stores its end undoes what it wrote before
  it frees the thread (``execute._run_rollback``), so a run queued behind it starts from where
  the rolled-back run started. This waits for that end; a run that was not rolled back (the
  checkpoint it started from is no longer kept, ``CONSENTRY_CHECKPOINT_RETENTION=latest``; or
  its server stopped before its end) is 409 ``rollback_unavailable``: it is cancelled, and what
  it wrote is kept.
"""

from __future__ import annotations

from consentry.errors import ConflictError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.sdk.queue import RunQueue
from consentry.storage import run_queue as queue_repo
from consentry.storage import runs as runs_repo
from consentry.storage.db.database import Database

__all__ = ["RunRollback"]


class RunRollback:
    def __init__(self, *, db: Database, runs: RunService, clock: Clock) -> None:
        self._db = db
        self._runs = runs
        self._clock = clock

    async def run(
        self,
        queue: RunQueue,
        owner: Principal,
        thread_id: str,
        run_id: str,
        *,
        active: bool = True,
    ) -> bool:
        """``runs.cancel(action="rollback")``: a waiting run taken out of its queue and marked
        deleted; an active one (``active``: else it is left alone, and False) rolled back. 409
        ``no_active_run`` when it is neither, ``rollback_unavailable`` when it ended without
        being rolled back."""
        if await queue.cancel(owner, thread_id, run_id):
            async with self._db.write() as conn:
                await queue_repo.delete_unstarted_run(conn, thread_id, run_id, now=self._clock())
            return True
        if not active:
            return False
        await self._runs.cancel(owner, thread_id, run_id=run_id, roll_back=True)
        await self._runs.wait_for_end(owner, thread_id, run_id)  # stored with the rollback
        async with self._db.read() as conn:
            kept = await runs_repo.thread_run(conn, thread_id, run_id)
        if kept is not None:
            raise ConflictError(
                f"Run {run_id!r} was cancelled, but what it wrote is kept: the checkpoint it "
                "started from is no longer kept (CONSENTRY_CHECKPOINT_RETENTION=latest), or "
                "it ended before it could be rolled back.",
                code="rollback_unavailable",
                details={"thread_id": thread_id, "run_id": run_id, "reason": kept.reason},
            )
        return True

    async def thread(self, queue: RunQueue, owner: Principal, thread_id: str) -> None:
        """``multitask_strategy="rollback"``, before the new run: the thread's runs waiting in
        its queue, then its active one, rolled back (one that ended meanwhile is left as it
        is)."""
        found = await queue.owner_runs(owner, thread_id=thread_id, waiting=True, running=True)
        for _, run_id, _ in found:
            try:
                await self.run(queue, owner, thread_id, run_id)
            except ConflictError as exc:
                if exc.code != "no_active_run":  # (else it ended by itself meanwhile)
                    raise
