"""``POST /v1/agui/{graph}``: AG-UI's face on the run service (``docs/ag-ui.md``).

A ``RunAgentInput`` is a ``/v1/chat`` request under another shape (``_input``): the same claim,
rate limit, consent gate and stored events, on the thread the input names (created by its first
run), streamed as AG-UI events (``_stream``). With an ``Idempotency-Key`` header, the same input
sent again streams the first run again (the input's ``runId`` is not a key: ``HttpAgent`` makes
a new one for every run, and claiming it would cost every run about 8% of its CPU). A run the
service refuses (a consent still waiting, a decision already made or expired, a bad input) is a
``RUN_ERROR`` with Consentry's ``code``: AG-UI clients read a run's errors from its stream.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from fastapi import APIRouter
from fastapi.responses import Response

from consentry.api.agui._input import message_request, resume_request, state_input
from consentry.api.agui._interrupts import Interrupts
from consentry.api.agui._stream import AguiStream, error_frames
from consentry.api.http.deps import (
    GraphsDep,
    IdempotencyKey,
    PrincipalDep,
    ThreadsDep,
)
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.new_thread_ids import check_uuid
from consentry.api.run_requests import RunRequestsDep
from consentry.errors import ConsentryError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.runs import ThreadReader
from consentry_graphs.registry import GraphSpec

__all__ = ["router"]

router = APIRouter(prefix="/v1/agui", tags=["ag-ui"])

_interrupts: dict[int, Interrupts] = {}
"""Each served graph's interrupt builder (its consent kinds' schemas), made at its first run."""


@router.post("/{graph}", response_class=EventStreamResponse, responses=ERROR_RESPONSES)
async def run_agent(
    graph: str,
    body: RunAgentInput,
    owner: PrincipalDep,
    graphs: GraphsDep,
    threads: ThreadsDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Run ``graph`` on the input's thread (its new messages, or the ``resume`` answering the
    interrupts its last run ended with) and stream the run as AG-UI events."""
    spec = graphs.get(graph)
    if spec is None:
        raise NotFoundError.of("graph", graph)
    try:
        if body.resume:
            pending = await threads.pending_consents(owner, body.thread_id)
            request = resume_request(body, spec, pending)
        else:
            current = None
            if state_input(body, spec):  # what of it the thread has already is not input again
                current = await _state_of(threads, owner, body.thread_id)
            request = message_request(body, spec, current)
            check_uuid(body.thread_id)
        face = AguiStream(
            threads, owner, graph=graph, client_run_id=body.run_id, interrupts=_of(spec)
        )
        return await run_requests.message(
            owner,
            request,
            idempotency_key=idempotency_key,
            face=face,
            route=f"/v1/agui/{graph}",
            creates_thread=True,
        )
    except ConsentryError as exc:
        frames = error_frames(
            body.thread_id,
            body.run_id,
            code=exc.code,
            message=exc.message,
            status=exc.status_code,
            details=exc.details,
        )
        return Response(frames, media_type="text/event-stream", headers=exc.headers)


async def _state_of(threads: ThreadReader, owner: Principal, thread_id: str) -> dict[str, Any]:
    """The thread's graph state (none for a thread the request creates)."""
    try:
        values = (await threads.graph_state(owner, thread_id)).values
    except NotFoundError:
        return {}
    return values if isinstance(values, dict) else {}


def _of(spec: GraphSpec) -> Interrupts:
    interrupts = _interrupts.get(id(spec))
    if interrupts is None or interrupts.spec is not spec:  # (an id another spec had)
        interrupts = _interrupts[id(spec)] = Interrupts(spec)
    return interrupts
