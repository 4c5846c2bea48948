"""A thread's runs as the LangGraph SDK reads them (``runs.get``, ``runs.list``), and the
client's metadata a run keeps.

Consentry's terminal reasons map onto the SDK's run statuses: ``completed`` and ``expired`` (the
graph took its expired path to its end) are ``success``; ``interrupted`` (a consent waits) and
``cancelled`` are ``interrupted``, as the LangGraph server says of a cancelled run; ``failed``,
``step_limit`` and ``budget_exhausted`` are ``error``; ``timeout`` is ``timeout``. A run queued for
a worker is ``pending``. The reason itself is on the run beside the status.

A run in the run queue (``multitask_strategy="enqueue"``) that has not started is a run record
too: ``pending`` while it waits, ``error`` (with the code that refused it) when its start was
refused, ``interrupted`` (reason ``cancelled``) when a client cancelled it; once started it is the
run's own record (same id)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.assistants import assistant_uuid
from consentry.runtime.clock import Clock
from consentry.schemas.events import TerminalReason
from consentry.schemas.sdk_runs import SdkRun, SdkRunStatus, ended_status, statuses_of
from consentry.storage import run_queue as queue_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.audit import record_audit
from consentry.storage.db.database import Database
from consentry.storage.run_queue import QueuedRun, QueueStatus
from consentry.storage.runs import RunRecord
from consentry.storage.tables import runs

__all__ = ["RunRecords"]


class RunRecords:
    def __init__(self, *, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def get(self, owner: Principal, thread_id: str, run_id: str) -> SdkRun:
        """One run of the owner's thread (404 ``run_not_found`` when the thread has none such)."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, thread_id)
            # The queue first: a run that starts commits its row with its queue row's `started`,
            # so a `started` read here is followed by a read that finds the run, even where
            # each statement sees what was committed when it ran (PostgreSQL's reads).
            queued = await queue_repo.queued_run(conn, thread_id, run_id)
            run = await runs_repo.thread_run(conn, thread_id, run_id)
        if run is not None:
            return _sdk_run(run, graph=thread.graph)
        if queued is not None and queued.status not in ("started", "deleted"):
            return _queued_run(queued, graph=thread.graph)
        raise NotFoundError.of("run", run_id)

    async def list(
        self,
        owner: Principal,
        thread_id: str,
        *,
        limit: int,
        offset: int,
        status: SdkRunStatus | None,
    ) -> list[SdkRun]:
        """The owner's thread's runs with this status, newest first (those in the run queue
        among them)."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, thread_id)
            rows = await runs_repo.thread_runs(
                conn, thread_id, limit=limit + offset, offset=0, where=_status_is(status)
            )
            queued = await queue_repo.queued_runs(conn, thread_id, statuses=_queued_as(status))
        listed = [_sdk_run(run, graph=thread.graph) for run in rows]
        listed += [_queued_run(row, graph=thread.graph) for row in queued]
        listed.sort(key=lambda run: (run.created_at, run.run_id), reverse=True)
        return listed[offset : offset + limit]

    async def delete(self, owner: Principal, thread_id: str, run_id: str) -> None:
        """Delete one ended run of the owner's thread from what the SDK shows (its events,
        audit records and consents keep naming it: ``run_deleted`` in the trail), or a queued run
        that never started (refused or cancelled). 409 ``run_in_progress`` while it runs; 404
        ``run_not_found`` for none such."""
        now = self._clock()
        async with self._db.write() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)
            run = await runs_repo.thread_run(conn, thread_id, run_id)
            if run is not None and run.status != "ended":
                raise ConflictError(
                    f"Run {run_id!r} is still running: cancel it first (`runs.cancel`).",
                    code="run_in_progress",
                    details={"thread_id": thread_id, "run_id": run_id},
                )
            if run is not None and await runs_repo.delete_run(conn, thread_id, run_id, now=now):
                await record_audit(
                    conn,
                    owner,
                    action="run_deleted",
                    thread_id=thread_id,
                    run_id=run_id,
                    actor=owner.display,
                    now=now,
                )
                return
            if await queue_repo.delete_unstarted_run(conn, thread_id, run_id, now=now):
                return
        raise NotFoundError.of("run", run_id)

    async def keep_metadata(self, run_id: str, metadata: dict[str, Any]) -> None:
        """Store the client's metadata on a run it just started."""
        async with self._db.write() as conn:
            await runs_repo.set_run_metadata(conn, run_id, metadata)


def _sdk_run(run: RunRecord, *, graph: str) -> SdkRun:
    if run.status == "ended":
        status = ended_status(run.reason)
    else:
        status = "pending" if run.status == "queued" else "running"
    return SdkRun(
        run_id=run.id,
        thread_id=run.thread_id,
        assistant_id=assistant_uuid(graph),
        created_at=run.started_at,
        updated_at=run.ended_at or run.started_at,
        status=status,
        metadata=run.metadata or {},
        reason=run.reason,
        error_code=run.error_code,
    )


def _queued_run(row: QueuedRun, *, graph: str) -> SdkRun:
    """A run of the run queue that did not start (``pending``, refused or cancelled)."""
    status, reason = _QUEUED[row.status]
    return SdkRun(
        run_id=row.id,
        thread_id=row.thread_id,
        assistant_id=assistant_uuid(graph),
        created_at=row.created_at,
        updated_at=row.updated_at,
        status=status,
        metadata=row.metadata or {},
        multitask_strategy="enqueue",
        reason=reason,
        error_code=row.error_code,
    )


_QUEUED: dict[QueueStatus, tuple[SdkRunStatus, TerminalReason | None]] = {
    "waiting": ("pending", None),
    "refused": ("error", "failed"),
    "cancelled": ("interrupted", "cancelled"),
}


def _queued_as(status: SdkRunStatus | None) -> tuple[QueueStatus, ...]:
    """The queue rows listed among runs with this status (a started one is its run's)."""
    return tuple(
        queued for queued, (shown, _) in _QUEUED.items() if status is None or shown == status
    )


def _status_is(status: SdkRunStatus | None) -> sa.ColumnElement[bool] | None:
    if status is None:
        return None
    if status in ("pending", "running"):
        return runs.c.status == ("queued" if status == "pending" else "running")
    reasons = statuses_of(status)
    return sa.and_(runs.c.status == "ended", runs.c.reason.in_(reasons))
