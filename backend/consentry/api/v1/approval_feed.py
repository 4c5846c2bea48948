"""``GET /v1/approvals/stream``: the caller's approvals as they change, pushed as Server-Sent
Events (``runtime.approval_feed``). Routed before ``/v1/approvals/{approval_id}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from consentry.api.http.deps import PrincipalDep
from consentry.api.http.last_event_id import LastEventId
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.run_requests import RunRequestsDep
from consentry.schemas.approvals import ApprovalChange, ApprovalsReady

__all__ = ["router"]

router = APIRouter(prefix="/v1/approvals", tags=["approvals"], responses=ERROR_RESPONSES)


def _frame(event: str, model: type[Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The cursor."},
            "event": {"const": event},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": f"#/components/schemas/{model.__name__}"},
            },
        },
    }


_STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "`text/event-stream`: `ready` once caught up, then an `approval` frame "
        "per change to one of the caller's approvals.",
        "content": {
            "text/event-stream": {
                "schema": {
                    "oneOf": [_frame("ready", ApprovalsReady), _frame("approval", ApprovalChange)]
                }
            }
        },
    }
}


@router.get(
    "/stream",
    response_class=EventStreamResponse,
    responses={
        **_STREAM_RESPONSE,
        400: ERROR_RESPONSES[422] | {"description": "`Last-Event-ID` is not a cursor."},
    },
)
async def stream_approvals(
    owner: PrincipalDep,
    run_requests: RunRequestsDep,
    after: LastEventId,
) -> EventStreamResponse:
    """The caller's approvals as they change: with `Last-Event-ID`, the changes after that
    cursor first; then `ready` (its `id:` is the cursor to reconnect with); then every change
    (requested, decided, expired, cancelled) as it commits, on whichever replica. Never ends by
    itself; keep-alive comments every 15 s."""
    return await run_requests.follow_approvals(owner, after=after)
