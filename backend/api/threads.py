"""Threads: the caller's list, one thread's status and pending consents, its transcript."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.deps import PrincipalDep, ServicesDep
from backend.api.responses import ERROR_RESPONSES
from backend.schemas.audit import AuditTrail
from backend.schemas.threads import CancelAccepted, ThreadDetail, ThreadList, Transcript

__all__ = ["router"]

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERROR_RESPONSES)


@router.get("")
async def list_threads(
    owner: PrincipalDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ThreadList:
    """The caller's threads, most recently active first."""
    return await services.threads.list_threads(owner, limit=limit)


@router.get("/{thread_id}")
async def get_thread(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> ThreadDetail:
    """Status (`idle`, `running`, `awaiting_consent`), pending consents and last terminal reason."""
    return await services.threads.detail(owner, thread_id)


@router.get("/{thread_id}/messages")
async def get_messages(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> Transcript:
    """The conversation so far, from the thread's checkpoint."""
    return await services.threads.transcript(owner, thread_id)


@router.post("/{thread_id}/cancel", status_code=202)
async def cancel_run(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> CancelAccepted:
    """Stop the thread's active run at its next step boundary; the thread stays usable."""
    return await services.runs.cancel(owner, thread_id)


@router.get("/{thread_id}/audit")
async def get_audit(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> AuditTrail:
    """Every run and consent transition of the thread, oldest first (append-only)."""
    return await services.threads.audit(owner, thread_id)
