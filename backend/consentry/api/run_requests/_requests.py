"""``RunRequests``: the operations of the run room's face (message, start, queue, follow, retry,
decide, join, follow a run, follow the approvals), each charged, made idempotent and given a
stream slot here; what it answers is made by ``_idempotent`` and ``_responses``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request

from consentry.api.limits import check_chat_edits, check_edits
from consentry.api.run_requests._idempotent import ReplayedRun, S, once, started
from consentry.api.run_requests._responses import EventResponses, graph_modes
from consentry.api.sse_response import EventStreamResponse
from consentry.api.streaming import StreamFace
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.consents import ApprovalFeed, accepted
from consentry.runtime.guards import (
    IdempotencyGuard,
    KeyHold,
    OpenStreams,
    RateKind,
    RateLimiter,
    StoredResponse,
    StreamSlots,
    request_fingerprint,
)
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun, RunService
from consentry.schemas.approvals import DecisionAccepted, DecisionRequest
from consentry.schemas.chat import ChatRequest
from consentry.services import Services
from consentry.settings import Settings

__all__ = ["RunRequests", "RunRequestsDep"]

T = TypeVar("T")


class RunRequests:
    def __init__(
        self,
        *,
        runs: RunService,
        approval_feed: ApprovalFeed,
        idempotency: IdempotencyGuard,
        rate_limits: RateLimiter,
        stream_slots: StreamSlots,
        open_streams: OpenStreams,
        metrics: Metrics,
        settings: Settings,
    ) -> None:
        self._runs = runs
        self._feed = approval_feed
        self._idempotency = idempotency
        self._rate_limits = rate_limits
        self._slots = stream_slots
        self._metrics = metrics
        self._settings = settings
        self._responses = EventResponses(runs=runs, open_streams=open_streams, settings=settings)

    @classmethod
    def of(cls, services: Services) -> RunRequests:
        return cls(
            runs=services.runs,
            approval_feed=services.approval_feed,
            idempotency=services.idempotency,
            rate_limits=services.rate_limits,
            stream_slots=services.stream_slots,
            open_streams=services.open_streams,
            metrics=services.metrics,
            settings=services.settings,
        )

    async def message(
        self,
        owner: Principal,
        request: ChatRequest,
        *,
        idempotency_key: str | None,
        face: StreamFace | None = None,
        route: str = "/v1/chat",
        cancel_on_disconnect: bool = False,
        creates_thread: bool = False,
    ) -> EventStreamResponse:
        """A message (or decisions on pending consents): its run's events (as ``face`` sends
        them: by default Consentry's own). The run goes on when the client goes away, unless
        ``cancel_on_disconnect`` (the LangGraph SDK's ``on_disconnect="cancel"``): then a
        client gone before the run's end cancels it. ``creates_thread``: the ``thread_id`` of a
        message names a thread to create when none has it (``RunService.start``)."""
        check_chat_edits(self._settings, request)
        kind: RateKind = "decisions" if request.decisions else "messages"
        start = partial(self._runs.start, owner, request, creates_thread=creates_thread)
        return await self._new_run(
            owner,
            self._charged(owner, kind, start),
            idempotency_key,
            route,
            request.model_dump(mode="json"),
            face,
            cancel_on_disconnect=cancel_on_disconnect,
        )

    async def start(
        self, owner: Principal, request: ChatRequest, *, idempotency_key: str | None, route: str
    ) -> ActiveRun:
        """A message (or decisions) whose run goes on without a stream (the SDK's
        ``runs.create`` and ``runs.wait``): the run, whose events the caller may listen to and
        must detach from. With an ``Idempotency-Key`` used before, the run the first request
        started (its events replayed from its first, live while it goes on)."""
        check_chat_edits(self._settings, request)
        kind: RateKind = "decisions" if request.decisions else "messages"
        start = self._charged(owner, kind, partial(self._runs.start, owner, request))
        body = request.model_dump(mode="json")
        return await started(
            self._idempotency, self._runs, owner, start, idempotency_key, route, body
        )

    async def queue(
        self,
        owner: Principal,
        kind: RateKind,
        add: Callable[..., Awaitable[S]],
        *,
        idempotency_key: str | None,
        route: str,
        body: dict[str, Any],
    ) -> tuple[str, str]:
        """A run request that waits in its thread's run queue (the SDK's ``enqueue``): charged
        now, its ``Idempotency-Key`` naming the queued run (``add(key=…)`` completes it in the
        transaction that queues it); a repeat gets that run's (thread id, run id)."""
        action = self._charged(owner, kind, add)
        result = await once(self._idempotency, owner, idempotency_key, route, body, action)
        return result if isinstance(result, tuple) else (result.thread_id, result.run_id)

    async def follow(
        self,
        owner: Principal,
        events: AsyncIterator[OutgoingEvent],
        *,
        thread_id: str,
        run_id: str,
        face: StreamFace,
        on_close: Callable[[], None] | None = None,
    ) -> EventStreamResponse:
        """Stream ``events`` of run ``run_id`` (a queued run's, once it starts), holding one of
        ``owner``'s stream slots."""

        async def follow() -> EventStreamResponse:
            headers = {"X-Thread-Id": thread_id, "X-Run-Id": run_id}
            return self._responses.response(events, headers, on_close=on_close, face=face)

        return await self._slots.open(owner, follow)

    async def retry(
        self, owner: Principal, thread_id: str, *, idempotency_key: str | None
    ) -> EventStreamResponse:
        """The thread's failed run again, from its last good checkpoint: the new run's events."""
        return await self._new_run(
            owner,
            self._charged(owner, "messages", partial(self._runs.retry, owner, thread_id)),
            idempotency_key,
            f"/v1/threads/{thread_id}/retry",
            {},
        )

    async def decide(
        self,
        owner: Principal,
        approval_id: str,
        body: DecisionRequest,
        *,
        idempotency_key: str | None,
    ) -> tuple[DecisionAccepted, bool]:
        """A decision from the inbox: accepted (the graph resumes in the background), and
        whether that answer is the stored one of an earlier request with the same key."""
        check_edits(self._settings, [("edited", body.edited)])

        async def decide(key: KeyHold | None) -> DecisionAccepted:
            run = await self._runs.decide(owner, approval_id, body, key=key)
            run.events.detach()  # the graph resumes in the background; its events are stored
            return accepted(approval_id, body, thread_id=run.thread_id, run_id=run.run_id)

        action = self._charged(owner, "decisions", decide)

        if idempotency_key is None:
            return await action(None), False

        def respond(thread_id: str, run_id: str) -> StoredResponse:
            answer = accepted(approval_id, body, thread_id=thread_id, run_id=run_id)
            return StoredResponse(202, answer.model_dump(mode="json"), thread_id, run_id)

        route = f"/v1/approvals/{approval_id}/decision"
        fingerprint = request_fingerprint(route, body.model_dump(mode="json"))
        result = await self._idempotency.run(owner, idempotency_key, fingerprint, action, respond)
        if isinstance(result, StoredResponse):
            return DecisionAccepted.model_validate(result.body), True
        return result, False

    async def join(
        self, owner: Principal, thread_id: str, *, after: int, face: StreamFace | None = None
    ) -> EventStreamResponse:
        """What the client missed after ``after``, then the thread's active run live."""

        async def join() -> EventStreamResponse:
            events = await self._runs.join(
                owner, thread_id, after_seq=after, graph_modes=graph_modes(face)
            )
            return self._responses.response(events, {"X-Thread-Id": thread_id}, face=face)

        return await self._slots.open(owner, join)

    async def follow_run(
        self, owner: Principal, thread_id: str, run_id: str, *, face: StreamFace
    ) -> EventStreamResponse:
        """One run from its first event, then live while it goes on (the LangGraph SDK's join
        without ``Last-Event-ID``): read from the run's start, not the thread's."""
        return await self._slots.open(
            owner, partial(self._responses.replay, owner, thread_id, run_id, face)
        )

    async def follow_approvals(self, owner: Principal, *, after: int | None) -> EventStreamResponse:
        """The caller's approvals as they change (after the cursor ``after``)."""

        async def follow() -> EventStreamResponse:
            return self._responses.response(self._feed.follow(owner, after=after), {})

        return await self._slots.open(owner, follow)

    def _charged(
        self, owner: Principal, kind: RateKind, action: Callable[..., Awaitable[T]]
    ) -> Callable[[KeyHold | None], Awaitable[T]]:
        """``action(key=…)``, charged to ``owner``'s rate limit when it runs: a request answered
        from its ``Idempotency-Key`` (a replay) is not charged."""

        async def charged(key: KeyHold | None) -> T:
            self._rate_limits.charge(owner, kind)
            return await action(key=key)

        return charged

    async def _new_run(
        self,
        owner: Principal,
        start: Callable[[KeyHold | None], Awaitable[ActiveRun]],
        idempotency_key: str | None,
        route: str,
        body: dict[str, Any],
        face: StreamFace | None = None,
        *,
        cancel_on_disconnect: bool = False,
    ) -> EventStreamResponse:
        """Start a run and stream its events, holding one of ``owner``'s stream slots. With an
        ``Idempotency-Key`` that was used before (for the same route and body), the run that
        first request started is streamed again instead, from its first event (and the run that
        continued it after a crash), live while it goes on; token events are not stored, so the
        stored part has none."""
        run = partial(self._start_or_replay, owner, start, idempotency_key, route, body, face)
        return await self._slots.open(owner, partial(run, cancel_on_disconnect))

    async def _start_or_replay(
        self,
        owner: Principal,
        start: Callable[[KeyHold | None], Awaitable[ActiveRun]],
        idempotency_key: str | None,
        route: str,
        body: dict[str, Any],
        face: StreamFace | None,
        cancel_on_disconnect: bool,
    ) -> EventStreamResponse:
        run = await started(
            self._idempotency, self._runs, owner, start, idempotency_key, route, body
        )
        if not isinstance(run.events, ReplayedRun):
            if cancel_on_disconnect:
                return self._responses.cancelled_on_disconnect(owner, run, face)
            return self._responses.run_response(run, face)
        self._metrics.stream_replayed("idempotent")
        replayed = {"Idempotent-Replayed": "true"}
        return await self._responses.replay(owner, run.thread_id, run.run_id, face, replayed)


async def _run_requests(request: Request) -> RunRequests:
    run_requests: RunRequests = request.app.state.run_requests  # made with the services (app)
    return run_requests


RunRequestsDep = Annotated[RunRequests, Depends(_run_requests)]
