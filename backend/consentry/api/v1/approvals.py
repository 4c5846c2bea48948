"""The approvals inbox: list, read and decide consents without a chat stream."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from consentry.api.http.deps import ApprovalsDep, IdempotencyKey, PrincipalDep
from consentry.api.http.limits import page_limit
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.run_requests import RunRequestsDep
from consentry.schemas.approvals import (
    Approval,
    ApprovalList,
    ApprovalStatus,
    DecisionAccepted,
    DecisionRequest,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1/approvals", tags=["approvals"], responses=ERROR_RESPONSES)


@router.get("")
async def list_approvals(
    owner: PrincipalDep,
    approvals: ApprovalsDep,
    limit: Annotated[int, page_limit(50)],
    status: ApprovalStatus | None = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> ApprovalList:
    """The caller's consents, newest first; `status=pending` is the inbox."""
    return await approvals.list_approvals(owner, status=status, limit=limit, cursor=cursor)


@router.get("/{approval_id}")
async def get_approval(approval_id: str, owner: PrincipalDep, approvals: ApprovalsDep) -> Approval:
    return await approvals.get(owner, approval_id)


@router.post(
    "/{approval_id}/decision",
    status_code=status.HTTP_202_ACCEPTED,
    responses={410: ERROR_RESPONSES[409] | {"description": "The consent expired."}},
)
async def decide(
    approval_id: str,
    body: DecisionRequest,
    owner: PrincipalDep,
    run_requests: RunRequestsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> DecisionAccepted:
    """Record a decision; the graph resumes in the background (202 with its run id)."""
    accepted, replayed = await run_requests.decide(
        owner, approval_id, body, idempotency_key=idempotency_key
    )
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return accepted
