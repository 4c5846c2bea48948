"""The LangGraph SDK's runs (``client.runs.stream``, ``join_stream``, ``cancel``), served by
Consentry's one run service: a run here is a ``/v1/chat`` request under another shape (same
claim, rate limit, ``Idempotency-Key``, consent gate and stored events), streamed as the SDK
reads it (``_stream``)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter

from consentry.api.deps import AssistantsDep, IdempotencyKey, PrincipalDep, RunsDep, ThreadsDep
from consentry.api.last_event_id import LastEventId
from consentry.api.responses import ERROR_RESPONSES
from consentry.api.run_requests import RunRequests, RunRequestsDep
from consentry.api.sdk._resume import decisions_for
from consentry.api.sdk._stream import SdkStream
from consentry.api.sse_response import EventStreamResponse
from consentry.errors import ConflictError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.runs import Assistants, ThreadReader
from consentry.schemas.chat import ChatRequest
from consentry.schemas.sdk_runs import RunCreate
from consentry.schemas.threads import CancelAccepted

__all__ = ["router"]

router = APIRouter(tags=["langgraph-sdk"])


@router.post(
    "/threads/{thread_id}/runs/stream",
    response_class=EventStreamResponse,
    responses=ERROR_RESPONSES,
)
async def stream_run(
    thread_id: str,
    body: RunCreate,
    owner: PrincipalDep,
    threads: ThreadsDep,
    assistants: AssistantsDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Run the assistant on the thread (``input``, or ``command.resume`` answering what the
    thread waits for) and stream it as the SDK reads it."""
    run = _RunStart(owner, threads, assistants, run_requests, idempotency_key)
    return await run.stream(body, thread_id)


@router.post("/runs/stream", response_class=EventStreamResponse, responses=ERROR_RESPONSES)
async def stream_threadless_run(
    body: RunCreate,
    owner: PrincipalDep,
    threads: ThreadsDep,
    assistants: AssistantsDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Run the assistant on a new thread and stream it."""
    run = _RunStart(owner, threads, assistants, run_requests, idempotency_key)
    return await run.stream(body, None)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    response_class=EventStreamResponse,
    responses={
        **ERROR_RESPONSES,
        400: ERROR_RESPONSES[422] | {"description": "`Last-Event-ID` is not a seq of this thread."},
    },
)
async def join_run(
    thread_id: str,
    run_id: str,
    owner: PrincipalDep,
    threads: ThreadsDep,
    run_requests: RunRequestsDep,
    after: LastEventId,
) -> EventStreamResponse:
    """The run's frames after ``Last-Event-ID`` (without one: from the run's start), then live
    while it goes on (``values``, ``messages-tuple`` and ``custom``)."""
    modes = frozenset({"values", "messages-tuple", "custom"})
    face = SdkStream(threads, owner, modes, run_id=run_id)
    return await run_requests.join(owner, thread_id, after=after or 0, face=face)


@router.post(
    "/threads/{thread_id}/runs/{run_id}/cancel", status_code=202, responses=ERROR_RESPONSES
)
async def cancel_run(
    thread_id: str, run_id: str, owner: PrincipalDep, runs: RunsDep
) -> CancelAccepted:
    """Stop the thread's run at its next step boundary (final reason ``cancelled``)."""
    return await runs.cancel(owner, thread_id)


@dataclass(frozen=True)
class _RunStart:
    """What a run request needs: who asks, and the services it goes through."""

    owner: Principal
    threads: ThreadReader
    assistants: Assistants
    run_requests: RunRequests
    idempotency_key: str | None

    async def stream(self, body: RunCreate, thread_id: str | None) -> EventStreamResponse:
        graph = self.assistants.get(body.assistant_id).graph
        request = await _chat_request(self.owner, self.threads, body, graph, thread_id)
        return await self.run_requests.message(
            self.owner,
            request,
            idempotency_key=self.idempotency_key,
            face=SdkStream(self.threads, self.owner, _modes(body)),
            route=f"/threads/{thread_id}/runs/stream" if thread_id else "/runs/stream",
        )


def _modes(body: RunCreate) -> frozenset[str]:
    modes = [body.stream_mode] if isinstance(body.stream_mode, str) else body.stream_mode
    return frozenset(modes)


async def _chat_request(
    owner: Principal, threads: ThreadReader, body: RunCreate, graph: str, thread_id: str | None
) -> ChatRequest:
    """The ``/v1/chat`` request this run is (``graph``: the assistant's)."""
    if body.config or body.context:
        raise InvalidRequestError(
            "`config` and `context` are not served: graphs get Consentry's runtime context.",
            code="unsupported_field",
            details={"fields": [f for f in ("config", "context") if getattr(body, f)]},
        )
    if (body.input is None) == (body.command is None):
        raise InvalidRequestError("Send exactly one of `input` or `command`.", code="invalid_input")
    if body.command is None:
        return ChatRequest(thread_id=thread_id, graph=graph, input=body.input)
    if thread_id is None:
        raise ConflictError("A `command` resumes a thread: name it.", code="no_pending_consent")
    pending = (await threads.detail(owner, thread_id)).pending_consents
    decisions = decisions_for(body.command.resume, pending)
    return ChatRequest(thread_id=thread_id, graph=graph, resume=decisions)
