"""Rolling a run back (the LangGraph SDK's ``runs.cancel(action="rollback")`` and
``multitask_strategy="rollback"``): the run is cancelled, what it wrote of the thread's graph
state is deleted, and the run is no longer shown on the SDK face.

- **A run waiting in the run queue** never ran: it is taken out of the queue and its row
  dropped.
- **An active run** is cancelled as ``runs.cancel`` cancels one (its step cut within half a
  second) and waited for to its end (its ``final`` stored: its own records are complete). Then,
  in one transaction (:meth:`RunRollback.undo`):

  1. each consent still pending on the thread ends ``superseded`` (a run cut just as it asked
     one), audited, as when a fork leaves a branch;
  2. the thread's row is held as it was read after the run's end, and its newest checkpoint is
     checked to be the run's (else 409 ``thread_changed``: another run or a state update went
     on from what the run wrote, which is then kept);
  3. every checkpoint the run wrote (each namespace's, with their pending writes: the rows whose
     ``run_id`` is the run's) is deleted, so the thread's newest is again the one the run
     started from; when that is not so (the run was a fork, which hangs from an older
     checkpoint), a fork's anchor of it is written as the newest;
  4. the run is marked deleted (``runs.delete`` hides it the same way), and ``run_rolled_back``
     goes in the audit trail with the checkpoints dropped and the consents superseded.

What a person decided is never undone: a decision is recorded on its consent (and honoured by
the thread's next run when the run that carried it is rolled back before its effect ran), and an
effect that ran is not run again (the ledger is keyed by approval id). The thread's events,
transcript and audit trail keep the run. With ``CONSENTRY_CHECKPOINT_RETENTION=latest`` the
checkpoint a run started from is dropped by its first write: a rollback is then 409
``rollback_unavailable`` (the run stays cancelled, its writes kept).
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.runnables import RunnableConfig

from consentry.errors import ConflictError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import supersede_pending
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.sdk._run_queue import RunQueue
from consentry.storage import run_queue as queue_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.audit import record_audit
from consentry.storage.checkpoints import saver_of
from consentry.storage.db.database import Database
from consentry_graphs.registry import CompiledGraph

__all__ = ["RunRollback"]


class RunRollback:
    def __init__(
        self,
        *,
        db: Database,
        runs: RunService,
        compiled: Callable[[str], CompiledGraph],
        clock: Clock,
    ) -> None:
        self._db = db
        self._runs = runs
        self._compiled = compiled
        self._clock = clock

    async def run(self, queue: RunQueue, owner: Principal, thread_id: str, run_id: str) -> None:
        """``runs.cancel(action="rollback")``: a waiting run taken out of its queue and
        dropped; an active one cancelled, waited for, and undone. 409 ``no_active_run`` when it
        is neither."""
        if await queue.cancel(owner, thread_id, run_id):
            async with self._db.write() as conn:
                await queue_repo.delete_unstarted_run(conn, thread_id, run_id)
            return
        await self._runs.cancel(owner, thread_id, run_id=run_id)
        async for _ in await self._runs.replay(owner, thread_id, run_id):
            pass  # to its end: its final is stored
        await self.undo(owner, thread_id, run_id)

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

    async def undo(self, owner: Principal, thread_id: str, run_id: str) -> None:
        """Delete what the ended run ``run_id`` wrote of the thread's graph state, and the run
        from what the SDK shows (the module's steps 1 to 4)."""
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
            saver = saver_of(self._compiled(row.graph))
            written = await saver.arun_checkpoints_in(conn, thread_id, run_id)
            head = await saver.ahead_id_in(conn, thread_id)
        start = written[0][1] if written else None
        source = None
        if start is not None:
            at = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": start}
            source = await saver.aget_tuple(RunnableConfig(configurable=at))
            if source is None:
                raise _unavailable(thread_id, run_id)
        if row.status == "running" or (written and head not in dict(written)):
            raise _changed(thread_id, run_id)
        now = self._clock()
        async with self._db.write() as conn:
            superseded: list[str] = []
            if written:  # the consents first, then the thread's row (as a decision takes them)
                superseded = await supersede_pending(
                    conn, owner, thread_id, run_id=run_id, checkpoint_id=start or "", now=now
                )
            held = await threads_repo.hold_thread(conn, owner, row, idle_at=now)
            if not held or await saver.ahead_id_in(conn, thread_id) != head:
                raise _changed(thread_id, run_id)
            await saver.adelete_run_in(conn, thread_id, run_id)
            new_head = start
            if source is not None and await saver.ahead_id_in(conn, thread_id) != start:
                new_head = await saver.afork_in(conn, source)
            await runs_repo.delete_run(conn, thread_id, run_id, now=now)
            await record_audit(
                conn,
                owner,
                action="run_rolled_back",
                thread_id=thread_id,
                run_id=run_id,
                actor=owner.display,
                now=now,
                data={
                    "checkpoint_id": new_head,
                    "dropped": [checkpoint_id for checkpoint_id, _ in written],
                    "superseded": superseded,
                },
            )


def _changed(thread_id: str, run_id: str) -> ConflictError:
    return ConflictError(
        f"Run {run_id!r} was cancelled, but the thread went on from what it wrote (another "
        "run, or a state update): what it wrote is kept.",
        code="thread_changed",
        details={"thread_id": thread_id, "run_id": run_id},
    )


def _unavailable(thread_id: str, run_id: str) -> ConflictError:
    return ConflictError(
        f"Run {run_id!r} was cancelled, but the checkpoint it started from is no longer kept "
        "(CONSENTRY_CHECKPOINT_RETENTION=latest): what it wrote is kept.",
        code="rollback_unavailable",
        details={"thread_id": thread_id, "run_id": run_id},
    )
