"""``POST /v1/chat``: start a run and stream its events."""

from __future__ import annotations

from fastapi import APIRouter

from consentry.api.deps import IdempotencyKey, PrincipalDep, ServicesDep
from consentry.api.limits import check_chat_edits
from consentry.api.responses import ERROR_RESPONSES
from consentry.api.sse_response import EventStreamResponse
from consentry.api.streaming import EVENT_STREAM_RESPONSE, stream_new_run
from consentry.runtime.guards import KeyHold
from consentry.runtime.runs import ActiveRun
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
    services: ServicesDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Send a message (or a decision on a pending consent) and stream the run's events.

    With an `Idempotency-Key` that was used before, the run the first request started is sent
    again from its first event, live while it goes on (stored events only: no tokens)."""

    check_chat_edits(services.settings, request)

    async def start(key: KeyHold | None) -> ActiveRun:
        # Only a request that runs is counted: an idempotent replay is not.
        services.rate_limits.charge(owner, "decisions" if request.decisions else "messages")
        return await services.runs.start(owner, request, key=key)

    return await services.stream_slots.open(
        owner,
        lambda: stream_new_run(
            services,
            owner,
            start,
            idempotency_key=idempotency_key,
            route="/v1/chat",
            body=request.model_dump(mode="json"),
        ),
    )
