"""``RunRequests``: the operations of the run room's face (message, start, queue, follow, retry,
decide, join, follow a run, follow the approvals). Each reads top to bottom: a stream slot held
(``StreamSlots.held``), the ``Idempotency-Key`` resolved and the rate limit charged (``_keyed``),
the run service called, the response made (``_responses``; a repeat's run replayed,
``_idempotent``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from consentry.api.http.limits import check_chat_edits, check_edits
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.http.streaming import StreamFace
from consentry.api.run_requests._idempotent import ReplayedRun
from consentry.api.run_requests._responses import EventResponses, graph_modes
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
)
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun, Queued, RunService
from consentry.schemas.approvals import DecisionAccepted, DecisionRequest
from consentry.schemas.chat import ChatRequest
from consentry.services import Services
from consentry.settings import Settings

__all__ = ["RunRequests", "RunRequestsDep"]


_REPLAYED = {"Idempotent-Replayed": "true"}


@dataclass(frozen=True)
class Followed:
    """What :meth:`RunRequests.follow` streams: a run's events, its ids, what the stream's end
    does, and whether the run is the first one of a repeated ``Idempotency-Key``."""

    events: AsyncIterator[OutgoingEvent]
    thread_id: str
    run_id: str
    on_close: Callable[[], None]
    replayed: bool = False


def _kind(request: ChatRequest) -> RateKind:
    return "decisions" if request.decisions else "messages"


def _stored_run(thread_id: str, run_id: str) -> StoredResponse:
    """What a repeat of a run request gets: the run the first one started."""
    return StoredResponse(200, None, thread_id, run_id)


def _ids(stored: StoredResponse) -> tuple[str, str]:
    assert stored.thread_id is not None  # a run request's answer names its run
    assert stored.run_id is not None
    return stored.thread_id, stored.run_id


def _replayed_run(runs: RunService, owner: Principal, first: StoredResponse) -> ActiveRun:
    thread_id, run_id = _ids(first)
    return ActiveRun(thread_id, run_id, ReplayedRun(runs, owner, thread_id, run_id))


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

    def check(self, request: ChatRequest) -> None:
        """What every run request is checked for before it starts (the size of its edits)."""
        check_chat_edits(self._settings, request)

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
        message names a thread to create when none has it (``RunService.start``). A repeat of
        an ``Idempotency-Key`` streams the first request's run again, from its first event."""
        self.check(request)
        body = request.model_dump(mode="json")
        with self._slots.held(owner) as slot:
            async with self._keyed(owner, _kind(request), idempotency_key, route, body) as key:
                if isinstance(key, StoredResponse):
                    return slot.keeps(await self._replayed(owner, key, face))
                run = await self._runs.start(owner, request, key=key, creates_thread=creates_thread)
            if cancel_on_disconnect:
                return slot.keeps(self._responses.cancelled_on_disconnect(owner, run, face))
            return slot.keeps(self._responses.run_response(run, face))

    async def start(
        self, owner: Principal, request: ChatRequest, *, idempotency_key: str | None, route: str
    ) -> ActiveRun:
        """A message (or decisions) whose run goes on without a stream (the SDK's
        ``runs.create`` and ``runs.wait``): the run, whose events the caller may listen to and
        must detach from. With an ``Idempotency-Key`` used before, the run the first request
        started (its events replayed from its first, live while it goes on)."""
        self.check(request)
        body = request.model_dump(mode="json")
        async with self._keyed(owner, _kind(request), idempotency_key, route, body) as key:
            if isinstance(key, StoredResponse):
                return _replayed_run(self._runs, owner, key)
            return await self._runs.start(owner, request, key=key)

    async def queue(
        self,
        owner: Principal,
        kind: RateKind,
        add: Callable[[KeyHold | None], Awaitable[Queued]],
        *,
        idempotency_key: str | None,
        route: str,
        body: dict[str, Any],
    ) -> tuple[str, str]:
        """A run request that waits in its thread's run queue (the SDK's ``enqueue``): charged
        now, its ``Idempotency-Key`` naming the queued run (``add`` completes it in the
        transaction that queues it); a repeat gets that run's (thread id, run id)."""
        async with self._keyed(owner, kind, idempotency_key, route, body) as key:
            if isinstance(key, StoredResponse):
                return _ids(key)
            queued = await add(key)
        return queued.thread_id, queued.run_id

    async def follow(
        self, owner: Principal, begin: Callable[[], Awaitable[Followed]], *, face: StreamFace
    ) -> EventStreamResponse:
        """Stream the run ``begin`` starts, queues or waits for (a queued run's events once it
        starts), holding one of ``owner``'s stream slots from before ``begin`` runs: no run
        starts for a stream refused 429."""
        with self._slots.held(owner) as slot:
            followed = await begin()
            headers = {"X-Thread-Id": followed.thread_id, "X-Run-Id": followed.run_id}
            if followed.replayed:
                headers |= _REPLAYED
            try:
                response = self._responses.response(
                    followed.events, headers, followed.on_close, face
                )
            except BaseException:
                followed.on_close()
                raise
            return slot.keeps(response)

    async def retry(
        self, owner: Principal, thread_id: str, *, idempotency_key: str | None
    ) -> EventStreamResponse:
        """The thread's failed run again, from its last good checkpoint: the new run's events
        (a repeat of an ``Idempotency-Key``: the first request's run again)."""
        route = f"/v1/threads/{thread_id}/retry"
        with self._slots.held(owner) as slot:
            async with self._keyed(owner, "messages", idempotency_key, route, {}) as key:
                if isinstance(key, StoredResponse):
                    return slot.keeps(await self._replayed(owner, key, None))
                run = await self._runs.retry(owner, thread_id, key=key)
            return slot.keeps(self._responses.run_response(run, None))

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
        route = f"/v1/approvals/{approval_id}/decision"

        def respond(thread_id: str, run_id: str) -> StoredResponse:
            answer = accepted(approval_id, body, thread_id=thread_id, run_id=run_id)
            return StoredResponse(202, answer.model_dump(mode="json"), thread_id, run_id)

        request = body.model_dump(mode="json")
        async with self._keyed(owner, "decisions", idempotency_key, route, request, respond) as key:
            if isinstance(key, StoredResponse):
                return DecisionAccepted.model_validate(key.body), True
            run = await self._runs.decide(owner, approval_id, body, key=key)
        run.events.detach()  # the graph resumes in the background; its events are stored
        return accepted(approval_id, body, thread_id=run.thread_id, run_id=run.run_id), False

    async def join(
        self, owner: Principal, thread_id: str, *, after: int, face: StreamFace | None = None
    ) -> EventStreamResponse:
        """What the client missed after ``after``, then the thread's active run live."""
        with self._slots.held(owner) as slot:
            events = await self._runs.join(
                owner, thread_id, after_seq=after, graph_modes=graph_modes(face)
            )
            return slot.keeps(
                self._responses.response(events, {"X-Thread-Id": thread_id}, face=face)
            )

    async def follow_run(
        self, owner: Principal, thread_id: str, run_id: str, *, face: StreamFace
    ) -> EventStreamResponse:
        """One run from its first event, then live while it goes on (the LangGraph SDK's join
        without ``Last-Event-ID``): read from the run's start, not the thread's."""
        with self._slots.held(owner) as slot:
            return slot.keeps(await self._responses.replay(owner, thread_id, run_id, face))

    async def follow_approvals(self, owner: Principal, *, after: int | None) -> EventStreamResponse:
        """The caller's approvals as they change (after the cursor ``after``)."""
        with self._slots.held(owner) as slot:
            return slot.keeps(self._responses.response(self._feed.follow(owner, after=after), {}))

    @asynccontextmanager
    async def _keyed(
        self,
        owner: Principal,
        kind: RateKind,
        idempotency_key: str | None,
        route: str,
        body: dict[str, Any],
        respond: Callable[[str, str], StoredResponse] = _stored_run,
    ) -> AsyncIterator[KeyHold | StoredResponse | None]:
        """The request's ``Idempotency-Key`` resolved (``IdempotencyGuard.held``): a repeat
        gets the first request's :class:`StoredResponse`, and is not charged; a new request is
        charged to ``owner``'s rate limit and gets the hold (None: no key) that the run it
        claims completes."""
        held = self._idempotency.held(
            owner, idempotency_key, route=route, body=body, respond=respond
        )
        async with held as key:
            if not isinstance(key, StoredResponse):
                self._rate_limits.charge(owner, kind)
            yield key

    async def _replayed(
        self, owner: Principal, first: StoredResponse, face: StreamFace | None
    ) -> EventStreamResponse:
        """The run an earlier request with the same ``Idempotency-Key`` started, from its first
        event (and the run that continued it after a crash), live while it goes on; token
        events are not stored, so the stored part has none."""
        self._metrics.stream_replayed("idempotent")
        thread_id, run_id = _ids(first)
        return await self._responses.replay(owner, thread_id, run_id, face, _REPLAYED)


async def _run_requests(request: Request) -> RunRequests:
    run_requests: RunRequests = request.app.state.run_requests  # made with the services (app)
    return run_requests


RunRequestsDep = Annotated[RunRequests, Depends(_run_requests)]
