"""``POST /v1/chat``: start a run and stream its events."""

from __future__ import annotations

from fastapi import APIRouter

from consentry.api.http.deps import IdempotencyKey, PrincipalDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.http.streaming import EVENT_STREAM_RESPONSE
from consentry.api.run_requests import RunRequestsDep
from consentry.schemas.chat import ChatRequest

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["chat"])


@router.post(
    "/chat",
    response_class=EventStreamResponse,
    responses={**EVENT_STREAM_RESPONSE, **ERROR_RESPONSES},
)
async def chat(
    request: ChatRequest,
    owner: PrincipalDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Send a message (or a decision on a pending consent) and stream the run's events.

    With an `Idempotency-Key` that was used before, the run the first request started is sent
    again from its first event, live while it goes on (stored events only: no tokens)."""
    return await run_requests.message(owner, request, idempotency_key=idempotency_key)
