"""A LangGraph SDK run request as the run service's request: the ``/v1/chat`` request it is
(``input``, or ``command.resume`` as decisions through the consent gate), on the thread it names
(created first with ``if_not_exists="create"``), with the client's metadata kept on the run.
With ``multitask_strategy="enqueue"`` on a thread the request is queued (``_queue``) and made a
run service request when its turn comes. What makes the run service's request of a run request
(its checks, assistant, fork point) is ``_run_request``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from uuid import NAMESPACE_URL, uuid4, uuid5

from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.run_requests import Followed, RunRequests
from consentry.api.sdk._outcome import run_outcome
from consentry.api.sdk._run_checks import (
    goes_through_queue,
    no_client_to_watch,
    refuse_without_thread,
)
from consentry.api.sdk._run_request import RunRequestMaker
from consentry.api.sdk._stream import SdkStream
from consentry.errors import ConflictError
from consentry.principal import Principal
from consentry.runtime.assistants import Assistants
from consentry.runtime.guards import KeyHold
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import (
    ActiveRun,
    Queued,
    RunQueue,
    RunRecords,
    RunRollback,
    ThreadReader,
    ThreadWriter,
    Waiter,
)
from consentry.runtime.webhooks import WebhookHosts
from consentry.schemas.chat import ChatRequest
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["RunStart", "Waited"]


@dataclass(frozen=True)
class Waited:
    """A run a ``runs.wait`` waits for."""

    thread_id: str
    run_id: str
    outcome: Callable[[], Awaitable[dict[str, Any]]]
    """The state it leaves (read from its events as they come)."""
    closed: Callable[[bool], None]
    """What the wait's end does (given whether the run ended before it)."""


@dataclass(frozen=True)
class RunStart:
    """What a run request needs: who asks, and the services it goes through."""

    owner: Principal
    threads: ThreadReader
    writer: ThreadWriter
    assistants: Assistants
    run_records: RunRecords
    run_requests: RunRequests
    queue: RunQueue
    rollback: RunRollback
    idempotency_key: str | None
    webhook_hosts: WebhookHosts
    requests: RunRequestMaker = field(init=False, repr=False)
    """The run service's requests of this request's runs (``_run_request``)."""

    def __post_init__(self) -> None:
        maker = RunRequestMaker(
            self.owner, self.threads, self.writer, self.assistants, self.webhook_hosts
        )
        object.__setattr__(self, "requests", maker)

    async def chat_request(
        self, body: RunCreate, thread_id: str | None, *, queued: bool = False
    ) -> ChatRequest:
        """The run service's request of this run (``RunRequestMaker.chat_request``)."""
        return await self.requests.chat_request(body, thread_id, queued=queued)

    async def stream(
        self, body: RunCreate, thread_id: str | None, *, route: str
    ) -> EventStreamResponse:
        """Start the run and stream it as the SDK reads it."""
        created, thread_id = thread_id is None, await self._delayed_thread(body, thread_id)
        face = SdkStream(
            self.threads,
            self.owner,
            body.modes,
            graph=(await self.requests.assistant(body)).graph,
            subgraphs=body.stream_subgraphs,
            resumable=body.stream_resumable,
        )
        if goes_through_queue(body, thread_id):
            assert thread_id is not None
            queued_on = thread_id

            async def begin() -> Followed:
                waiter = await self._enqueue(body, queued_on, route=route, face=face)
                events, closed = self._watched(body, waiter)
                return Followed(events, queued_on, waiter.run_id, closed, waiter.repeat)

            followed = await self.run_requests.follow(self.owner, begin, face=face)
            return self._deleting_after(body, followed, created=created)
        request = await self.chat_request(body, thread_id)
        response = await self.run_requests.message(
            self.owner,
            request,
            idempotency_key=self.idempotency_key,
            face=face,
            route=route,
            cancel_on_disconnect=body.on_disconnect == "cancel",
        )
        await self._keep_metadata(body, response.headers["X-Run-Id"])
        return self._deleting_after(body, response, created=created)

    async def background(self, body: RunCreate, thread_id: str | None, *, route: str) -> ActiveRun:
        """Start the run without a stream: its events are the caller's to read or detach."""
        request = await self.chat_request(body, thread_id)
        run = await self.run_requests.start(
            self.owner, request, idempotency_key=self.idempotency_key, route=route
        )
        await self._keep_metadata(body, run.run_id)
        return run

    async def create(
        self, body: RunCreate, thread_id: str | None, *, route: str
    ) -> ActiveRun | Queued:
        """``runs.create``: the run started in the background, or queued (``enqueue``)."""
        if body.on_disconnect == "cancel":
            raise no_client_to_watch()
        created, thread_id = thread_id is None, await self._delayed_thread(body, thread_id)
        if goes_through_queue(body, thread_id):
            assert thread_id is not None
            waiter = await self._enqueue(body, thread_id, route=route)
            started = waiter.started  # at once (an idle thread's), or when its turn comes
            self.queue.forget(waiter)  # nobody waits
            self._delete_when_done(body, thread_id, waiter.run_id, created=created)
            return started or Queued(thread_id, waiter.run_id)
        run = await self.background(body, thread_id, route=route)
        run.events.detach()
        self._delete_when_done(body, run.thread_id, run.run_id, created=created)
        return run

    async def waited(self, body: RunCreate, thread_id: str | None, *, route: str) -> Waited:
        """``runs.wait``: the run started (or queued), and the state it will leave."""
        cancel = body.on_disconnect == "cancel"
        created, thread_id = thread_id is None, await self._delayed_thread(body, thread_id)
        if goes_through_queue(body, thread_id):
            assert thread_id is not None
            waiter = await self._enqueue(body, thread_id, route=route)
            queue, owner, queued_on = self.queue, self.owner, thread_id

            def waited_out(ended: bool) -> None:
                queue.closed(owner, waiter, cancel=cancel and not ended)
                self._delete_when_done(body, queued_on, waiter.run_id, created=created)

            return Waited(
                thread_id,
                waiter.run_id,
                partial(run_outcome, queue.events(owner, waiter), self.threads, owner),
                waited_out,
            )
        run = await self.background(body, thread_id, route=route)

        def closed(ended: bool) -> None:
            run.events.detach()  # the run goes on without this client...
            if cancel and not ended:  # ...unless it asked otherwise
                self.queue.cancel_soon(self.owner, run.thread_id, run.run_id)
            self._delete_when_done(body, run.thread_id, run.run_id, created=created)

        outcome = partial(run_outcome, run.events.listen(), self.threads, self.owner)
        return Waited(run.thread_id, run.run_id, outcome, closed)

    async def check_threadless(self, body: RunCreate) -> None:
        """What ``runs.create(None, ...)`` of ``body`` is refused for that the request alone
        tells, before anything is stored: an unknown assistant (404), fields not served (422),
        what only a thread takes (a ``command``, a ``checkpoint``, going on with no input)."""
        await self.requests.assistant(body)
        self.requests.check(body)
        if body.on_disconnect == "cancel":
            raise no_client_to_watch()
        refuse_without_thread(body)

    async def _enqueue(
        self, body: RunCreate, thread_id: str, *, route: str, face: SdkStream | None = None
    ) -> Waiter:
        """Queue the run on the thread, waited for by this request (a repeat of an
        ``Idempotency-Key``: the first request's run). With ``enqueue``, an input (or none) is
        tried at once first, checked as a run that starts now (``RunQueue.start_now``): it
        starts unless the thread is busy or a run waits in its queue (found at its claim), and
        is queued then. A ``command`` asked to be queued is read when its turn comes. With
        ``rollback`` the thread's waiting and active runs are rolled back first (``_rollback``),
        and the run is then tried as with ``enqueue``."""
        self.requests.check(body)
        strategy = body.multitask_strategy
        now = strategy in ("enqueue", "rollback") and body.command is None  # (a command: asked)
        now = now and not body.after_seconds
        if not now:  # (else its request creates the thread: ``chat_request``)
            await self.requests.create_thread(body, thread_id)
            await self._refuse_queued_fork(body, thread_id)
        run_id = str(uuid4())

        async def add(key: KeyHold | None) -> Queued:  # (not for a repeat of the key)
            if strategy == "rollback":  # checked before the active run's work is undone
                self.run_requests.check(await self.chat_request(body, thread_id))
                await self.rollback.thread(self.queue, self.owner, thread_id)
            if now:
                request = await self.chat_request(body, thread_id)
                self.run_requests.check(request)
                started = self.queue.start_now(
                    self.owner, request, waiter, key=key, metadata=body.metadata
                )
                if await started:
                    return Queued(thread_id, run_id)
                await self._refuse_queued_fork(body, thread_id)  # busy meanwhile
            sent, meta = body.model_dump(mode="json", exclude_unset=True), body.metadata
            return await self.queue.add(
                self.owner,
                thread_id,
                run_id,
                sent,
                meta,
                hold=key,
                after_seconds=body.after_seconds,
            )

        modes, kept = (face.graph_modes, face.kept) if face else (frozenset[str](), False)
        waiter = self.queue.expect(thread_id, run_id, graph_modes=modes, kept=kept)
        try:
            _, queued_id = await self.run_requests.queue(
                self.owner,
                "decisions" if body.command is not None else "messages",
                add,
                idempotency_key=self.idempotency_key,
                route=route,
                body=body.model_dump(mode="json"),
            )
        except BaseException:
            self.queue.forget(waiter)
            raise
        if queued_id == run_id:
            if body.multitask_strategy == "interrupt":  # the active run makes way for it
                await self.queue.interrupt(self.owner, thread_id)
            return waiter
        self.queue.forget(waiter)  # a repeat: the first request's run
        repeat = self.queue.expect(thread_id, queued_id, graph_modes=modes, kept=kept)
        repeat.repeat = True
        return repeat

    async def _refuse_queued_fork(self, body: RunCreate, thread_id: str) -> None:
        if await self.requests.fork_point(body, thread_id) is not None:
            raise ConflictError(
                "A run from an older checkpoint (a fork) is not queued: send it when the "
                "thread has no active run, or send the thread's newest checkpoint.",
                code="fork_not_queued",
                details={"checkpoint_id": body.from_checkpoint},
            )

    def _watched(
        self, body: RunCreate, waiter: Waiter
    ) -> tuple[AsyncIterator[OutgoingEvent], Callable[[], None]]:
        """A queued run's events, and what its stream's end does: with
        ``on_disconnect="cancel"``, a client gone before the run's end cancels it (waiting or
        running)."""
        ended = False

        async def events() -> AsyncIterator[OutgoingEvent]:
            nonlocal ended
            async for event in self.queue.events(self.owner, waiter):
                ended = ended or event.type == "final"
                yield event

        cancel = body.on_disconnect == "cancel"

        def closed() -> None:
            self.queue.closed(self.owner, waiter, cancel=cancel and not ended)

        return events(), closed

    async def _delayed_thread(self, body: RunCreate, thread_id: str | None) -> str | None:
        """A delayed run (``after_seconds``) waits in its thread's queue: on a new thread, the
        thread is made first (its id named by the request's ``Idempotency-Key``, if any, so
        that a repeat finds it)."""
        if thread_id is not None or not body.after_seconds:
            return thread_id
        self.requests.check(body)  # (what the request alone refuses leaves no thread behind)
        refuse_without_thread(body)
        key = self.idempotency_key
        chosen = None if key is None else str(uuid5(NAMESPACE_URL, f"{self.owner.display}/{key}"))
        graph = (await self.requests.assistant(body)).graph
        made = await self.writer.create(
            self.owner, thread_id=chosen, metadata={"graph_id": graph}, if_exists="do_nothing"
        )
        return made.thread_id

    def _deleting_after(
        self, body: RunCreate, response: EventStreamResponse, *, created: bool
    ) -> EventStreamResponse:
        """The stream, which once over has its run's new thread deleted (``on_completion``)."""
        thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
        if created and body.on_completion == "delete":
            response.also_on_close(
                partial(self._delete_when_done, body, thread_id, run_id, created=created)
            )
        return response

    def _delete_when_done(
        self, body: RunCreate, thread_id: str, run_id: str, *, created: bool
    ) -> None:
        """``on_completion="delete"`` on a new thread: deleted once the run has ended (and the
        request that waited for it is over: its answer reads the thread), unless a consent waits
        on it (then kept) or another run is active on it."""
        if created and body.on_completion == "delete":
            owner, writer = self.owner, self.writer

            async def delete() -> None:
                await writer.delete_if_done(owner, thread_id)

            self.queue.after_end(owner, thread_id, run_id, delete)

    async def _keep_metadata(self, body: RunCreate, run_id: str) -> None:
        if body.metadata:
            await self.run_records.keep_metadata(run_id, body.metadata)
