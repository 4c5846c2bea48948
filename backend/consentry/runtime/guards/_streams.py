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

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from consentry.errors import TooManyRequestsError
from consentry.principal import Principal

__all__ = ["STREAM_RETRY_AFTER_SECONDS", "EndableStream", "OpenStreams", "StreamSlots"]

STREAM_RETRY_AFTER_SECONDS = 5
"""The ``Retry-After`` of ``too_many_streams``: a hint, since only the client can end a stream."""


class ClosingStream(Protocol):
    """A response that runs callbacks once it is over (``api.sse_response.EventStreamResponse``)."""

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

    async def open(self, owner: Principal, make: Callable[[], Awaitable[Stream]]) -> Stream:
        """The stream ``make`` returns, holding one of ``owner``'s slots until it is over; 429
        ``too_many_streams`` (and ``make`` is not called) when ``owner`` holds them all."""
        release = self._reserve(owner)
        try:
            stream = await make()
        except BaseException:
            release()
            raise
        stream.also_on_close(release)
        return stream

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


class EndableStream(Protocol):
    """A stream that can be ended from outside (``api.sse_response.EventStreamResponse``)."""

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
