"""A LangGraph SDK run request as the run service's request: the ``/v1/chat`` request it is
(``input``, or ``command.resume`` as decisions through the consent gate), on the thread it names
(created first with ``if_not_exists="create"``), with the client's metadata kept on the run."""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from consentry.api.run_requests import RunRequests
from consentry.api.sdk._outcome import run_outcome
from consentry.api.sdk._resume import decisions_for
from consentry.api.sdk._stream import SdkStream
from consentry.api.sse_response import EventStreamResponse
from consentry.errors import ConflictError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.runs import ActiveRun, Assistants, RunRecords, ThreadReader, ThreadWriter
from consentry.schemas.chat import ChatRequest
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["RunStart"]


@dataclass(frozen=True)
class RunStart:
    """What a run request needs: who asks, and the services it goes through."""

    owner: Principal
    threads: ThreadReader
    writer: ThreadWriter
    assistants: Assistants
    run_records: RunRecords
    run_requests: RunRequests
    idempotency_key: str | None

    async def stream(
        self, body: RunCreate, thread_id: str | None, *, route: str
    ) -> EventStreamResponse:
        """Start the run and stream it as the SDK reads it."""
        request = await self._chat_request(body, thread_id)
        response = await self.run_requests.message(
            self.owner,
            request,
            idempotency_key=self.idempotency_key,
            face=SdkStream(self.threads, self.owner, body.modes, graph=request.graph),
            route=route,
            cancel_on_disconnect=body.on_disconnect == "cancel",
        )
        await self._keep_metadata(body, response.headers["X-Run-Id"])
        return response

    async def background(self, body: RunCreate, thread_id: str | None, *, route: str) -> ActiveRun:
        """Start the run without a stream: its events are the caller's to read or detach."""
        if body.on_disconnect == "cancel":
            raise InvalidRequestError(
                '`on_disconnect: "cancel"` is served on a streamed run only (`runs.stream`).',
                code="unsupported_field",
                details={"fields": ["on_disconnect"]},
            )
        request = await self._chat_request(body, thread_id)
        run = await self.run_requests.start(
            self.owner, request, idempotency_key=self.idempotency_key, route=route
        )
        await self._keep_metadata(body, run.run_id)
        return run

    def outcome(self, run: ActiveRun) -> Coroutine[Any, Any, dict[str, Any]]:
        """The state ``run`` leaves, read from its events (``runs.wait``)."""
        return run_outcome(run.events.listen(), self.threads, self.owner)

    async def _keep_metadata(self, body: RunCreate, run_id: str) -> None:
        if body.metadata:
            await self.run_records.keep_metadata(run_id, body.metadata)

    async def _chat_request(self, body: RunCreate, thread_id: str | None) -> ChatRequest:
        """The ``/v1/chat`` request this run is, on the assistant's graph."""
        graph = self.assistants.get(body.assistant_id).graph
        if body.config or body.context:
            raise InvalidRequestError(
                "`config` and `context` are not served: graphs get Consentry's runtime context.",
                code="unsupported_field",
                details={"fields": [f for f in ("config", "context") if getattr(body, f)]},
            )
        if (body.input is None) == (body.command is None):
            raise InvalidRequestError(
                "Send exactly one of `input` or `command`.", code="invalid_input"
            )
        if thread_id is not None and body.if_not_exists == "create":
            _check_uuid(thread_id)
            await self.writer.create(
                self.owner,
                thread_id=thread_id,
                metadata={"graph_id": graph},
                if_exists="do_nothing",
            )
        if body.command is None:
            return ChatRequest(thread_id=thread_id, graph=graph, input=body.input)
        if thread_id is None:
            raise ConflictError("A `command` resumes a thread: name it.", code="no_pending_consent")
        pending = (await self.threads.detail(self.owner, thread_id)).pending_consents
        decisions = decisions_for(body.command.resume, pending)
        return ChatRequest(thread_id=thread_id, graph=graph, resume=decisions)


def _check_uuid(thread_id: str) -> None:
    try:
        UUID(thread_id)
    except ValueError:
        raise InvalidRequestError(
            "A thread created by its first run needs a UUID for its id.",
            code="request_invalid",
            details={"thread_id": thread_id},
        ) from None
