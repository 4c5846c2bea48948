"""A cap on the event streams one principal holds open in this process
(``CONSENTRY_MAX_STREAMS_PER_PRINCIPAL``).

A streaming route takes a slot before it does anything (before a run starts), and gives it back
when its stream is over, however it ended, or at once when the request is refused. A request
past the cap gets 429 ``too_many_streams`` and nothing runs. Every stream counts: a run's stream
(``POST /v1/chat``, ``…/retry``), a replayed one (``Idempotency-Key``) and a joined one
(``GET /v1/threads/{id}/stream``). The count is per replica: a principal may hold the cap on each
replica its streams land on (docs/limits.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

from consentry.errors import TooManyRequestsError
from consentry.principal import Principal

__all__ = [
    "STREAM_RETRY_AFTER_SECONDS",
    "EndableStream",
    "OpenStreams",
    "StreamSlot",
    "StreamSlots",
]

STREAM_RETRY_AFTER_SECONDS = 5
"""The ``Retry-After`` of ``too_many_streams``: a hint, since only the client can end a stream."""


class ClosingStream(Protocol):
    """A response that runs callbacks once it is over
    (``api.http.sse_response.EventStreamResponse``)."""

    def also_on_close(self, callback: Callable[[], None]) -> None: ...


Stream = TypeVar("Stream", bound=ClosingStream)


class StreamSlots:
    def __init__(self, max_per_principal: int) -> None:
        """``max_per_principal``: 0 for no cap."""
        self._max = max_per_principal
        self._open: dict[Principal, int] = {}

    def count(self, owner: Principal) -> int:
        """The streams ``owner`` holds open (or is opening) in this process."""
        return self._open.get(owner, 0)

    def __len__(self) -> int:
        """Principals holding a stream (what the slots take in memory)."""
        return len(self._open)

    @contextmanager
    def held(self, owner: Principal) -> Iterator[StreamSlot]:
        """One of ``owner``'s slots, for the block that makes a stream: 429
        ``too_many_streams`` (before the block runs) when ``owner`` holds them all. The stream
        the block hands to :meth:`StreamSlot.keeps` holds the slot until it is over; a block
        that raises or hands nothing gives it back at once."""
        slot = StreamSlot(self._reserve(owner))
        try:
            yield slot
        finally:
            if not slot.kept:
                slot.release()

    def _reserve(self, owner: Principal) -> Callable[[], None]:
        held = self._open.get(owner, 0)
        if self._max and held >= self._max:
            raise TooManyRequestsError(
                f"You have {held} event streams open, the most allowed at once: close one "
                "(or wait for a run to end) and try again.",
                code="too_many_streams",
                retry_after=STREAM_RETRY_AFTER_SECONDS,
                details={"limit": "max_streams_per_principal", "max": self._max},
            )
        self._open[owner] = held + 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            left = self._open.get(owner, 0) - 1
            if left > 0:
                self._open[owner] = left
            else:
                self._open.pop(owner, None)

        return release


class StreamSlot:
    """A slot taken by :meth:`StreamSlots.held`."""

    def __init__(self, release: Callable[[], None]) -> None:
        self.release = release
        self.kept = False

    def keeps(self, stream: Stream) -> Stream:
        """``stream`` holds this slot until it is over."""
        stream.also_on_close(self.release)
        self.kept = True
        return stream


class EndableStream(Protocol):
    """A stream that can be ended from outside (``api.http.sse_response.EventStreamResponse``)."""

    def end_with_reconnect_hint(self) -> None: ...


class OpenStreams:
    """The event streams this process is sending, so that a shutdown can end them at once (a
    stream that follows a thread or the approvals feed never ends on its own)."""

    def __init__(self) -> None:
        self._streams: set[EndableStream] = set()
        self._ending = False

    def __len__(self) -> int:
        return len(self._streams)

    def add(self, stream: EndableStream) -> None:
        """Count ``stream`` as open; once :meth:`end_all` was called, it is ended at once."""
        self._streams.add(stream)
        if self._ending:
            stream.end_with_reconnect_hint()

    def discard(self, stream: EndableStream) -> None:
        self._streams.discard(stream)

    def end_all(self) -> None:
        """End every open stream, and every stream opened from now on, with a reconnect hint."""
        self._ending = True
        for stream in list(self._streams):
            stream.end_with_reconnect_hint()
