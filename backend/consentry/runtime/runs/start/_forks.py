"""A run from an older checkpoint of its thread: a fork, as the LangGraph Agent Server makes one
for a run given a ``checkpoint_id`` that is not the thread's newest.

The branch starts in the run's claim transaction: the checkpoint is copied as the thread's newest
(``ConsentrySaver.afork_in``), so the run, a recovery of it and a worker replica all continue
from the head as for any run. The consents still pending on the branch the head leaves end
``superseded`` in that same transaction, audited (``consents.supersede_pending``): none is left
pending, none can be decided afterwards, and an effect applied on the old branch stays applied
(its ledger is keyed by its approval id; the new branch asks anew, under new ids).
"""

from __future__ import annotations

from langgraph.checkpoint.base import CheckpointTuple

from consentry.errors import NotFoundError
from consentry.runtime.runs.execute import RunExecutor
from consentry.runtime.runs.start._targets import RunTarget
from consentry.storage.checkpoints import saver_of
from consentry.storage.db.database import DbConnection

__all__ = ["fork_source", "write_fork"]


async def fork_source(
    executor: RunExecutor, target: RunTarget, checkpoint_id: str
) -> CheckpointTuple:
    """The kept checkpoint a run forks from (404 ``checkpoint_not_found``)."""
    found = None
    if not target.is_new:
        configurable = {"thread_id": target.thread_id, "checkpoint_id": checkpoint_id}
        found = await saver_of(executor.graph(target.spec.name)).aget_tuple(
            {"configurable": configurable}
        )
    if found is None:
        raise NotFoundError(
            "The thread keeps no checkpoint with this id (CONSENTRY_CHECKPOINT_RETENTION).",
            code="checkpoint_not_found",
            details={"thread_id": target.thread_id, "checkpoint_id": checkpoint_id},
        )
    return found


async def write_fork(
    executor: RunExecutor, conn: DbConnection, target: RunTarget, source: CheckpointTuple
) -> str:
    """Make ``source`` the thread's head, in ``conn``'s transaction; the anchor's id."""
    return await saver_of(executor.graph(target.spec.name)).afork_in(conn, source)
