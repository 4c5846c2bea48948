"""Threads: the caller's list, one thread's status and pending consents, its transcript."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Header, Query
from pydantic.config import JsonDict

from backend.api.deps import IdempotencyKey, PrincipalDep, ServicesDep
from backend.api.limits import page_limit
from backend.api.responses import ERROR_RESPONSES
from backend.api.sse_response import EventStreamResponse
from backend.api.streaming import EVENT_STREAM_RESPONSE, event_stream_response, stream_new_run
from backend.errors import BadRequestError
from backend.runtime.executor import ActiveRun
from backend.runtime.idempotency import KeyHold
from backend.schemas.audit import AuditTrail
from backend.schemas.threads import CancelAccepted, ThreadDetail, ThreadList, Transcript

__all__ = ["router"]

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERROR_RESPONSES)

_LAST_EVENT_ID = re.compile("[0-9]{0,18}")
"""A ``Last-Event-ID``: the seq of an event of the thread, or empty for none."""


def _last_event_id_schema(schema: JsonDict) -> None:
    """The schema of the ``Last-Event-ID`` header and query parameter: a string (absent, not
    null) of the pattern. Documented only: a value outside it is 400 ``invalid_last_event_id``
    (``_parse_event_id``), not FastAPI's 422."""
    schema.pop("anyOf", None)
    schema.update(type="string", pattern=f"^{_LAST_EVENT_ID.pattern}$")


@router.get("")
async def list_threads(
    owner: PrincipalDep,
    services: ServicesDep,
    limit: Annotated[int, page_limit(100)],
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


@router.get(
    "/{thread_id}/stream",
    response_class=EventStreamResponse,
    responses={
        200: {
            **EVENT_STREAM_RESPONSE[200],
            "description": "The stored events after `Last-Event-ID`, then the active run live, "
            "until its `final`.",
        },
        400: ERROR_RESPONSES[422] | {"description": "`Last-Event-ID` is not a seq of this thread."},
    },
)
async def join_stream(
    thread_id: str,
    owner: PrincipalDep,
    services: ServicesDep,
    last_event_id_header: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="The `id:` of the last event the client has.",
            json_schema_extra=_last_event_id_schema,
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        Query(description="Same as `Last-Event-ID`.", json_schema_extra=_last_event_id_schema),
    ] = None,
) -> EventStreamResponse:
    """Join a thread's stream: what the client missed (by `Last-Event-ID`), then what the active
    run does, until its `final`. Without an id the whole stored history comes first."""
    after = _parse_event_id(last_event_id)
    if last_event_id_header is not None:  # the header wins: what a reconnecting EventSource sends
        after = _parse_event_id(last_event_id_header)

    async def join() -> EventStreamResponse:
        events = await services.threads.join(owner, thread_id, after_seq=after)
        return event_stream_response(events, services=services, headers={"X-Thread-Id": thread_id})

    return await services.stream_slots.open(owner, join)


def _parse_event_id(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    if not _LAST_EVENT_ID.fullmatch(raw):
        raise BadRequestError(
            "Last-Event-ID must be the `id:` of an event of this thread (a number).",
            code="invalid_last_event_id",
            details={"last_event_id": raw[:40]},
        )
    return int(raw)


@router.post("/{thread_id}/cancel", status_code=202)
async def cancel_run(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> CancelAccepted:
    """Stop the thread's active run at its next step boundary; the thread stays usable."""
    return await services.runs.cancel(owner, thread_id)


@router.post(
    "/{thread_id}/retry", response_class=EventStreamResponse, responses=EVENT_STREAM_RESPONSE
)
async def retry_run(
    thread_id: str,
    owner: PrincipalDep,
    services: ServicesDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Run the thread's failed run again from its last good checkpoint (once the model provider
    is back, say) and stream the new run's events, as `POST /v1/chat` does. 409
    `nothing_to_retry` unless the thread's last run ended `failed` with work left to run; 409
    `run_in_progress` while a run is active."""

    async def start(key: KeyHold | None) -> ActiveRun:
        # Only a request that runs is counted: an idempotent replay is not.
        services.rate_limits.charge(owner, "messages")
        return await services.runs.retry(owner, thread_id, key=key)

    return await services.stream_slots.open(
        owner,
        lambda: stream_new_run(
            services,
            owner,
            start,
            idempotency_key=idempotency_key,
            route=f"/v1/threads/{thread_id}/retry",
            body={},
        ),
    )


@router.get("/{thread_id}/audit")
async def get_audit(thread_id: str, owner: PrincipalDep, services: ServicesDep) -> AuditTrail:
    """Every run and consent transition of the thread, oldest first (append-only)."""
    return await services.threads.audit(owner, thread_id)
