"""The approvals inbox: list, read and decide consents without a chat stream."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from consentry.api.deps import IdempotencyKey, PrincipalDep, ServicesDep
from consentry.api.limits import check_edits, page_limit
from consentry.api.responses import ERROR_RESPONSES
from consentry.runtime.consents import accepted
from consentry.runtime.guards import KeyHold, StoredResponse, request_fingerprint
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
    services: ServicesDep,
    limit: Annotated[int, page_limit(50)],
    status: ApprovalStatus | None = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> ApprovalList:
    """The caller's consents, newest first; `status=pending` is the inbox."""
    return await services.approvals.list_approvals(owner, status=status, limit=limit, cursor=cursor)


@router.get("/{approval_id}")
async def get_approval(approval_id: str, owner: PrincipalDep, services: ServicesDep) -> Approval:
    return await services.approvals.get(owner, approval_id)


@router.post(
    "/{approval_id}/decision",
    status_code=status.HTTP_202_ACCEPTED,
    responses={410: ERROR_RESPONSES[409] | {"description": "The consent expired."}},
)
async def decide(
    approval_id: str,
    body: DecisionRequest,
    owner: PrincipalDep,
    services: ServicesDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> DecisionAccepted:
    """Record a decision; the graph resumes in the background (202 with its run id)."""
    check_edits(services.settings, [("edited", body.edited)])

    async def action(key: KeyHold | None) -> DecisionAccepted:
        # Only a request that runs is counted: an idempotent replay is not.
        services.rate_limits.charge(owner, "decisions")
        run = await services.runs.decide(owner, approval_id, body, key=key)
        run.events.detach()  # the graph resumes in the background; its events are stored
        return accepted(approval_id, body, thread_id=run.thread_id, run_id=run.run_id)

    if idempotency_key is None:
        return await action(None)
    fingerprint = request_fingerprint(
        f"/v1/approvals/{approval_id}/decision", body.model_dump(mode="json")
    )
    result = await services.idempotency.run(
        owner,
        idempotency_key,
        fingerprint,
        action,
        lambda thread_id, run_id: StoredResponse(
            202,
            accepted(approval_id, body, thread_id=thread_id, run_id=run_id).model_dump(mode="json"),
            thread_id,
            run_id,
        ),
    )
    if isinstance(result, StoredResponse):
        response.headers["Idempotent-Replayed"] = "true"
        return DecisionAccepted.model_validate(result.body)
    return result
