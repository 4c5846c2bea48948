"""A run rolled back at its end (the LangGraph SDK's ``rollback``): what it wrote of the thread's
graph state is deleted in the transaction that stores its end and frees its thread, so no other
run can start from those writes in between (a run queued behind it, another replica's).

In that transaction (``undo_run_in``):

1. the run's checkpoints of the thread's root graph tell where it started (the parent of its
   first); with ``CONSENTRY_CHECKPOINT_RETENTION=latest`` that checkpoint is gone, and nothing is
   undone (the run's end says it was kept);
2. each consent the run asked that is still pending ends ``superseded``, audited (a consent asked
   before it, which the checkpoint it started from still waits for, stays pending);
3. every checkpoint the run wrote (each namespace's, with their pending writes: the rows whose
   ``run_id`` is the run's) is deleted, so the thread's newest is again the one it started
   from; when that is not so (the run was a fork, which hangs from an older checkpoint), a
   fork's anchor of it is written as the newest;
4. the run is marked deleted (hidden from the SDK's run records) and ``run_rolled_back`` goes in
   the audit trail, with the checkpoints dropped and the consents superseded.

What the start checkpoint itself holds stays: a decision the run carried was written there as
the resume of its interrupt, and is honoured by the thread's next run, as the decision is on
record; an effect that ran is never run again (the ledger is keyed by approval id).
"""

from __future__ import annotations

from datetime import datetime

from consentry.principal import Principal
from consentry.runtime.consents import supersede_pending
from consentry.storage import runs as runs_repo
from consentry.storage.audit import record_audit
from consentry.storage.checkpoints import ConsentrySaver
from consentry.storage.db.database import DbConnection

__all__ = ["undo_run_in"]


async def undo_run_in(
    conn: DbConnection,
    saver: ConsentrySaver,
    owner: Principal,
    *,
    thread_id: str,
    run_id: str,
    now: datetime,
) -> bool:
    """Undo what the ended run wrote, in ``conn``'s transaction (the module's steps 1 to 4);
    False when the checkpoint it started from is no longer kept (nothing is undone)."""
    written = await saver.arun_checkpoints_in(conn, thread_id, run_id)
    start = written[0][1] if written else None
    source = None
    if start is not None:
        source = await saver.aget_tuple_in(conn, thread_id, start)
        if source is None:
            return False
    superseded = await supersede_pending(
        conn, owner, thread_id, run_id=run_id, checkpoint_id=start or "", now=now, asked_by=run_id
    )
    await saver.adelete_run_in(conn, thread_id, run_id)
    head = start
    if source is not None and await saver.ahead_id_in(conn, thread_id) != start:
        head = await saver.afork_in(conn, source)
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
            "checkpoint_id": head,
            "dropped": [checkpoint_id for checkpoint_id, _ in written],
            "superseded": superseded,
        },
    )
    return True
