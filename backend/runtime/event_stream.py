"""The events of one run: numbering, buffering for storage, and hand-off to the open stream.

Every event gets the thread's next ``seq``. Durable events (all but ``token``) are kept for the
run's closing transaction; every event goes to the listening SSE response, if one is still
connected. A run never waits for its listener: a client that goes away only stops the hand-off.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from backend.runtime.clock import Clock
from backend.schemas.events import Event, TokenEvent

__all__ = ["OutgoingEvent", "RunEventStream"]


@dataclass(frozen=True, slots=True)
class OutgoingEvent:
    """An event serialized once: what SSE sends and what storage keeps."""

    seq: int
    type: str
    data: str


class RunEventStream:
    def __init__(
        self, *, thread_id: str, run_id: str, last_seq: int, reserved_until: int, clock: Clock
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.last_seq = last_seq
        self.reserved_until = reserved_until
        """The run may number events up to here (see ``threads.claim_thread``)."""
        self._clock = clock
        self._durable: list[OutgoingEvent] = []
        self._history: list[OutgoingEvent] = []
        """Durable events already sent: what a client joining mid-run catches up with."""
        self._listeners: set[asyncio.Queue[OutgoingEvent | None]] = set()
        self._closed = False
        self._main = self._subscribe(after_seq=last_seq)

    @property
    def listeners(self) -> int:
        """Open streams following this run (the request that started it, and joiners)."""
        return len(self._listeners)

    @property
    def unreserved(self) -> int:
        """How many more events fit in the reservation."""
        return self.reserved_until - self.last_seq

    def make(self, event_type: type[Event], **fields: Any) -> Event:
        if self.last_seq >= self.reserved_until:
            raise RuntimeError("event sequence reservation exhausted")
        self.last_seq += 1
        event: Event = event_type(
            thread_id=self.thread_id,
            run_id=self.run_id,
            seq=self.last_seq,
            ts=self._clock(),
            **fields,
        )
        return event

    def record(self, event: Event) -> OutgoingEvent:
        """Serialize ``event`` and keep it for storage unless it is ephemeral."""
        outgoing = OutgoingEvent(event.seq, event.type, event.model_dump_json())
        if not isinstance(event, TokenEvent):
            self._durable.append(outgoing)
        return outgoing

    def send(self, outgoing: OutgoingEvent) -> None:
        if outgoing.type != "token":
            self._history.append(outgoing)
        for queue in self._listeners:
            queue.put_nowait(outgoing)

    def emit(self, event_type: type[Event], **fields: Any) -> Event:
        event = self.make(event_type, **fields)
        self.send(self.record(event))
        return event

    @property
    def has_unstored(self) -> bool:
        return bool(self._durable)

    def take_durable(self) -> list[OutgoingEvent]:
        taken, self._durable = self._durable, []
        return taken

    def close(self) -> None:
        self._closed = True
        for queue in self._listeners:
            queue.put_nowait(None)

    def _subscribe(self, *, after_seq: int) -> asyncio.Queue[OutgoingEvent | None]:
        queue: asyncio.Queue[OutgoingEvent | None] = asyncio.Queue()
        for outgoing in self._history:
            if outgoing.seq > after_seq:
                queue.put_nowait(outgoing)
        if self._closed:
            queue.put_nowait(None)
        self._listeners.add(queue)
        return queue

    def detach(self) -> None:
        """The client that started the run went away: stop queueing for it (the run goes on)."""
        self._listeners.discard(self._main)

    async def listen(self) -> AsyncIterator[OutgoingEvent]:
        """The stream of the request that started the run: every event, until ``final``."""
        while (item := await self._main.get()) is not None:
            yield item

    async def join(self, *, after_seq: int) -> AsyncIterator[OutgoingEvent]:
        """Another client joins: the durable events after ``after_seq`` sent so far, then every
        event as it comes, until ``final``."""
        queue = self._subscribe(after_seq=after_seq)
        try:
            while (item := await queue.get()) is not None:
                yield item
        finally:
            self._listeners.discard(queue)
