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
        self._queue: asyncio.Queue[OutgoingEvent | None] = asyncio.Queue()
        self._listening = True

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
        if self._listening:
            self._queue.put_nowait(outgoing)

    def emit(self, event_type: type[Event], **fields: Any) -> Event:
        event = self.make(event_type, **fields)
        self.send(self.record(event))
        return event

    def take_durable(self) -> list[OutgoingEvent]:
        taken, self._durable = self._durable, []
        return taken

    def close(self) -> None:
        self._queue.put_nowait(None)

    def detach(self) -> None:
        """The listener went away: stop queueing (the run goes on)."""
        self._listening = False

    async def listen(self) -> AsyncIterator[OutgoingEvent]:
        """Yield events as the run makes them, until the run has ended."""
        while (item := await self._queue.get()) is not None:
            yield item
