"""The HTTP/1.1 protocol ``consentry serve`` runs: uvicorn's httptools protocol with the limits a
server exposed without a proxy needs (docs/limits.md#http-limits).

uvicorn (0.54) bounds none of these with httptools: a head of any size is parsed (one 64 MB
header took 4.7 s and stalled every other request), and a partial head or body waits forever
(150 slowloris connections were all still open after 20 s). Per connection, this subclass adds:

- **Head size and header count.** The bytes of a request's head (request line and headers) are
  counted as they are read, and the parser is never given more than
  ``CONSENTRY_MAX_HEADER_BYTES`` of them: one byte more is answered 431 ``headers_too_large``,
  and so is header number ``CONSENTRY_MAX_HEADER_COUNT`` + 1. Nothing past the limit is kept.
  httptools does not say where in a read a message ended, so the bytes that follow a message in
  the same read are not counted: the head of a request pipelined behind another, and a chunked
  body's framing and trailers (httptools buffers a trailer whole, like a header), which get a
  budget of their own, may each reach twice the limit, never more.
- **Deadlines.** A head must be complete ``CONSENTRY_HTTP_HEADER_TIMEOUT_SECONDS`` after its first
  byte (the first request's: after the connection opened; a connection that sent nothing is
  closed without a word). A body may go ``CONSENTRY_HTTP_BODY_IDLE_TIMEOUT_SECONDS`` without a
  byte and take ``CONSENTRY_HTTP_BODY_TIMEOUT_SECONDS`` in all. Past a deadline the answer is 408
  ``request_timeout``, and the app, which has a request whose body is cut, sees the client go
  away. While the server itself stops reading (the app has not taken what came, or a pipelined
  request waits its turn) the body's clocks start again: that time is not the client's.
- **Keep-alive.** uvicorn closes a connection idle for ``CONSENTRY_HTTP_KEEPALIVE_TIMEOUT_SECONDS``
  after a response; request number ``CONSENTRY_MAX_REQUESTS_PER_CONNECTION`` is answered with
  ``Connection: close``.
- **Refusals** (400 ``malformed_request`` for what is not HTTP/1.1, 408, 431) carry the project's
  error body and ``Connection: close``. One is written only where the client expects a response
  and none is under way; then the connection is half-closed and what the client still sends is
  read and dropped for up to :data:`LINGER_SECONDS` (closing with unread bytes would make the
  kernel reset the connection, and the client could lose the answer before reading it).

The access log: a head refused before the app saw it gets its own line
(``api.http.request_ids.log_refused_head``). When the app has the request (a body timed out or
malformed, a connection lost before the response was complete), the protocol says so in the
request's scope (``api.http.request_ids.SERVER_REPORT``) and the app's line reports it.

Cost: per read, a clock read and a few comparisons; per request a few attribute updates and no
timer. One timer per connection watches the phase it is in; it is armed when a head or a body is
left incomplete by a read, and when it fires early (the phase moved on, or bytes came) it is set
again for the phase's deadline rather than cancelled and re-created on every read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.server import ServerState

from consentry.api.http.request_ids import SERVER_REPORT, Outcome, log_refused_head
from consentry.errors import (
    BadRequestError,
    ConsentryError,
    HeadersTooLargeError,
    RequestTimeoutError,
)
from consentry.schemas.errors import ErrorBody, ErrorDetail
from consentry.settings import Settings

__all__ = ["LINGER_SECONDS", "BoundedHttpProtocol", "HttpLimits", "bounded_http_protocol"]

LINGER_SECONDS = 2.0
"""How long a refused connection, half-closed, drains what its client still sends."""


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_header_bytes: int
    max_header_count: int
    header_timeout: float
    body_idle_timeout: float
    body_timeout: float
    max_requests_per_connection: int

    @classmethod
    def of(cls, settings: Settings) -> HttpLimits:
        return cls(
            max_header_bytes=settings.max_header_bytes,
            max_header_count=settings.max_header_count,
            header_timeout=settings.http_header_timeout_seconds,
            body_idle_timeout=settings.http_body_idle_timeout_seconds,
            body_timeout=settings.http_body_timeout_seconds,
            max_requests_per_connection=settings.max_requests_per_connection,
        )


def bounded_http_protocol(limits: HttpLimits) -> type[BoundedHttpProtocol]:
    """The protocol class for uvicorn (``http=``), bound to ``limits``."""

    class Bound(BoundedHttpProtocol):
        pass

    Bound.limits = limits
    return Bound


class _TooManyHeadersError(Exception):
    """Raised in the parser's ``on_header`` callback to stop the parser at once."""


class BoundedHttpProtocol(HttpToolsProtocol):
    limits: ClassVar[HttpLimits]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._head_budget: int | None = self.limits.max_header_bytes
        """Bytes the current head may still take; None while a body is read."""
        self._frame_budget = 0
        """Bytes of a body's framing and trailers the current body may still take."""
        self._header_count = 0
        self._requests = 0
        self._phase: Literal["head", "body"] | None = None
        self._phase_since = 0.0
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._closing = False

    # The connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._phase, self._phase_since = "head", self.loop.time()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and not self._closing:
            report: dict[object, object] = {"outcome": "client_disconnected"}
            if not cycle.response_started:
                report["status"] = 499
            _report(cycle, report)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # answered and half-closed: what still comes is dropped
        self._unset_keepalive_if_required()
        self._last_read = self.loop.time()
        if self._phase is None and self._head_budget is not None:
            self._phase, self._phase_since = "head", self._last_read
        chunk: bytes | memoryview = data
        while (budget := self._head_budget) is not None and len(chunk) > budget:
            # The head may end within its budget: parse that much, and the rest only if it did.
            view = memoryview(chunk)
            self._head_budget = 0
            if not self._parse(view[:budget]):
                return
            if self._head_budget == 0:
                self._refuse(self._too_large("headers"), outcome="rejected")
                return
            chunk = view[budget:]
        if budget is not None:
            self._head_budget = budget - len(chunk)
        elif self._phase == "body":
            self._frame_budget -= len(chunk)  # on_body gives back what was body
        if not self._parse(chunk):
            return
        if self._phase == "body" and self._frame_budget < 0:
            self._refuse(self._too_large("chunk framing and trailers"), outcome="rejected")
        elif self._phase is not None:
            self._arm()

    def _parse(self, data: bytes | memoryview) -> bool:
        """Feed the parser; False when it stopped (a refusal, an upgrade)."""
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self._phase = None
                self._stop_timer()
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _TooManyHeadersError):
                limit = self.limits.max_header_count
                error: ConsentryError = HeadersTooLargeError(
                    f"The request has more than {limit} headers (max_header_count).",
                    details={"limit": "max_header_count", "max": limit},
                )
            else:
                error = BadRequestError(
                    "The request is not valid HTTP/1.1.", code="malformed_request"
                )
            self._refuse(error, outcome="rejected")
            return False
        return True

    # Parser callbacks (uvicorn's, with the counts)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_header_count:
            raise _TooManyHeadersError
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_budget = None
        self._frame_budget = self.limits.max_header_bytes
        self._header_count = 0
        self._phase, self._phase_since = "body", self._last_read
        previous = self.cycle
        super().on_headers_complete()
        if self.cycle is previous:
            return  # an upgrade: the WebSocket protocol takes the connection
        self._requests += 1
        if self._requests >= self.limits.max_requests_per_connection:
            self.cycle.keep_alive = False

    def on_body(self, body: bytes) -> None:
        self._frame_budget += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._head_budget = self.limits.max_header_bytes
        self._phase = None
        super().on_message_complete()

    # Deadlines

    def _deadline(self) -> float:
        limits = self.limits
        if self._phase == "head":
            return self._phase_since + limits.header_timeout
        idle_until = self._last_read + limits.body_idle_timeout
        return min(idle_until, self._phase_since + limits.body_timeout)

    def _arm(self) -> None:
        deadline = self._deadline()
        if self._timer is None or deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_at(deadline, self._on_deadline)
            self._timer_at = deadline

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_deadline(self) -> None:
        self._timer = None
        if self._phase is None or self._closing:
            return
        now = self.loop.time()
        if self._phase == "body" and self.flow.read_paused:
            self._phase_since = self._last_read = now  # the server does not read: not the client
        if now < self._deadline():
            self._arm()
        elif self._phase == "head":
            self._head_timed_out()
        else:
            self._body_timed_out(idle=now >= self._last_read + self.limits.body_idle_timeout)

    def _head_timed_out(self) -> None:
        if self._head_budget == self.limits.max_header_bytes:  # a new connection, nothing sent
            self._close(lingering=False)
            return
        timeout = self.limits.header_timeout
        error = RequestTimeoutError(
            f"The request's headers did not arrive within {timeout:g} s "
            "(http_header_timeout_seconds).",
            details={"limit": "http_header_timeout_seconds", "max": timeout},
        )
        self._refuse(error, outcome="timed_out")

    def _body_timed_out(self, *, idle: bool) -> None:
        if idle:
            timeout = self.limits.body_idle_timeout
            message = f"The request body stalled: no bytes for {timeout:g} s"
            limit = "http_body_idle_timeout_seconds"
        else:
            timeout = self.limits.body_timeout
            message = f"The request body did not arrive within {timeout:g} s"
            limit = "http_body_timeout_seconds"
        error = RequestTimeoutError(
            f"{message} ({limit}).", details={"limit": limit, "max": timeout}
        )
        self._refuse(error, outcome="timed_out")

    # Refusals

    def _too_large(self, what: str) -> HeadersTooLargeError:
        limit = self.limits.max_header_bytes
        return HeadersTooLargeError(
            f"The request's {what} are larger than {limit} bytes (max_header_bytes).",
            details={"limit": "max_header_bytes", "max": limit},
        )

    def _refuse(self, error: ConsentryError, *, outcome: Outcome) -> None:
        """Answer ``error`` if the client awaits a response and none is under way, tell the app
        when it has the request, and close."""
        cycle = self.cycle
        answered = False
        if cycle is not None and not cycle.response_complete:
            # The app has the request (or one before it still answers): it sees the client go.
            report: dict[object, object] = {"outcome": outcome}
            if self._phase == "body" and not cycle.response_started and not self.pipeline:
                self._write_error(error)
                report.update(status=error.status_code, code=error.code)
                answered = True
            _report(cycle, report)
            cycle.disconnected = True  # its sends are dropped from now on
            cycle.waiting_for_100_continue = False
            cycle.message_event.set()
        elif self._phase == "head":  # a head the app never saw
            self._write_error(error)
            answered = True
            log_refused_head(
                status=error.status_code,
                code=error.code,
                outcome=outcome,
                duration_ms=(self.loop.time() - self._phase_since) * 1000,
            )
        self._close(lingering=answered)

    def _write_error(self, error: ConsentryError) -> None:
        body = (
            ErrorBody(
                error=ErrorDetail(code=error.code, message=error.message, details=error.details)
            )
            .model_dump_json()
            .encode()
        )
        content = [STATUS_LINE[error.status_code]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(content))

    def _close(self, *, lingering: bool) -> None:
        """Close; after an answer, half-close first and drop what the client still sends for up
        to :data:`LINGER_SECONDS`, so that it reads the answer rather than a reset."""
        self._closing = True
        self._phase = None
        self._stop_timer()
        self._unset_keepalive_if_required()
        transport = self.transport
        if transport.is_closing():
            return
        if not (lingering and transport.can_write_eof()):
            transport.close()
            return
        transport.write_eof()  # the answer, then FIN; the client's own close ends it sooner
        self.flow.resume_reading()
        self._timer = self.loop.call_later(LINGER_SECONDS, transport.close)

    def handle_websocket_upgrade(self) -> None:
        self._phase = None
        self._stop_timer()
        super().handle_websocket_upgrade()


def _report(cycle: RequestResponseCycle, report: dict[object, object]) -> None:
    """Tell the app's access line (``api.http.request_ids``) what the server did; the first word
    stands."""
    cycle.scope.setdefault("extensions", {}).setdefault(SERVER_REPORT, report)
