"""The LangGraph SDK's run records (``client.runs.get``, ``list``, ``delete``): a thread's runs
with their status as the SDK names it, Consentry's terminal reason and the client's metadata.
A deleted run is no longer shown; the thread's events and audit trail still name it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from consentry.api.http.deps import PrincipalDep, RunRecordsDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.sdk._ids import RUN_ID
from consentry.api.sdk._queue import RunQueueDep
from consentry.schemas.sdk_runs import SdkRun, SdkRunStatus

__all__ = ["router"]

router = APIRouter(prefix="/threads/{thread_id}/runs", tags=["langgraph-sdk"])


@router.get("", responses=ERROR_RESPONSES)
async def list_runs(
    thread_id: str,
    owner: PrincipalDep,
    run_records: RunRecordsDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    status: SdkRunStatus | None = None,
) -> list[SdkRun]:
    """The thread's runs, newest first (with `status`: those with it)."""
    return await run_records.list(owner, thread_id, limit=limit, offset=offset, status=status)


@router.get(f"/{{run_id:{RUN_ID}}}", responses=ERROR_RESPONSES)
async def get_run(
    thread_id: str, run_id: str, owner: PrincipalDep, run_records: RunRecordsDep
) -> SdkRun:
    """One run of the thread (404 `run_not_found` when the thread has none with this id)."""
    return await run_records.get(owner, thread_id, run_id)


@router.delete(f"/{{run_id:{RUN_ID}}}", status_code=204, responses=ERROR_RESPONSES)
async def delete_run(
    thread_id: str, run_id: str, owner: PrincipalDep, run_records: RunRecordsDep, queue: RunQueueDep
) -> None:
    """Delete one run of the thread: an ended one (its events and audit records are kept, and
    name it), or one waiting in the run queue (taken out first, so it never starts). 409
    `run_in_progress` while it runs: cancel it first."""
    await queue.cancel(owner, thread_id, run_id)
    await run_records.delete(owner, thread_id, run_id)
