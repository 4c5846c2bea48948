"""A run's events, in order, to its ``final``, even across a cut stream.

When the stream ends before the run's ``final`` (the server restarted, another process took the
run over, a proxy cut the connection), :class:`RunStream` waits the stream's ``retry:`` (2 s if
none came) and rejoins the thread's stream with the id of the last stored event it received as
``Last-Event-ID`` (docs/protocol.md), so the caller sees every stored event once; ``token``
events are not stored (nor named as the last id), so a rejoined run's answer comes whole with its
``message``. A stream cut before its first event rejoins from the thread's start and skips the
runs before its own (``X-Run-Id``). A rejoined stream is read to its end: after a dead run's
``final`` comes the run that continues it. It gives up after :data:`REJOIN_ATTEMPTS` rejoins in a
row that brought nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
from pydantic import ValidationError

from consentry.schemas.events import EVENT_ADAPTER, Event
from consentry.terminal.errors import ServerUnreachableError
from consentry.terminal.sse import SseFrame, SseParser

if TYPE_CHECKING:
    from consentry.terminal.api_client import ConsentryClient

__all__ = ["REJOIN_ATTEMPTS", "RunStream"]

REJOIN_ATTEMPTS = 15
"""How often a cut stream is rejoined in a row before giving up (``retry:`` apart, 2 s)."""
DEFAULT_RETRY_MS = 2000


class RunStream:
    """The events of one run, in order, ending with its ``final``; ``thread_id`` once known."""

    def __init__(self, client: ConsentryClient, request: httpx.Request) -> None:
        self._client = client
        self._request = request
        self.thread_id: str | None = None

    def __iter__(self) -> Iterator[Event]:
        parser = SseParser()
        request, rejoins = self._request, 0
        last_id: int | None = None  # of the last stored event: tokens are not stored
        skip_until_run: str | None = None
        while True:
            try:
                response = self._client.open_stream(request)
            except ServerUnreachableError:
                if request is self._request or rejoins >= REJOIN_ATTEMPTS:
                    raise
                rejoins += 1
                time.sleep((parser.retry_ms or DEFAULT_RETRY_MS) / 1000)
                continue
            self.thread_id = self.thread_id or response.headers.get("X-Thread-Id")
            if request is self._request:
                skip_until_run = response.headers.get("X-Run-Id")  # until its first event
            last_type: str | None = None
            try:
                for frame in parser.frames(response.iter_lines()):
                    event = _parse_event(frame)
                    if event is None:
                        continue
                    if skip_until_run is not None:
                        # a rejoin from the thread's start: the runs before this one are not ours
                        if event.run_id != skip_until_run:
                            continue
                        skip_until_run = None
                    rejoins, last_type = 0, event.type
                    if event.type != "token":
                        last_id = event.seq
                    self.thread_id = event.thread_id or self.thread_id
                    yield event
            except httpx.TransportError:
                pass  # cut in the middle: rejoin below
            finally:
                response.close()
            if last_type == "final":
                # The stream ends after its run's final; a rejoined stream may carry the run
                # that continues a dead one after its final, so it is read to its end.
                return
            if self.thread_id is None:
                raise ServerUnreachableError(
                    f"the stream from {self._client.base_url} ended before the run started"
                )
            rejoins += 1
            if rejoins > REJOIN_ATTEMPTS:
                raise ServerUnreachableError(
                    f"the stream from {self._client.base_url} keeps ending before the run's end"
                )
            time.sleep((parser.retry_ms or DEFAULT_RETRY_MS) / 1000)
            request = self._client.rejoin_request(self.thread_id, last_id)


def _parse_event(frame: SseFrame) -> Event | None:
    """The frame's event; ``None`` for one this client does not know (a newer server's)."""
    try:
        return EVENT_ADAPTER.validate_json(frame.data)
    except ValidationError:
        return None
