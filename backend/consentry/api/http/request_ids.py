"""Every request gets an id, and one log line when its response is over, saying what the client
got.

The id is the client's ``X-Request-ID`` when it sends a sane one (letters, digits, ``.-_:``, at
most 64), else a new one; it goes back in the response's ``X-Request-ID`` and onto every log line
written while the request is served, and onto the lines of the run it starts
(``observability.logs``). A pure ASGI middleware: a streamed response is not buffered, and its
line is written when the stream ends.

The line's ``status`` is the one the client was sent and its ``outcome`` how the exchange ended:

- ``completed``: the whole response was sent.
- ``client_disconnected``: the client went away first (the app's ``receive`` said
  ``http.disconnect``, or the server found the connection gone). ``status`` is what was sent
  before it left, or 499 (nginx's "client closed request") when nothing was.
- ``timed_out`` / ``rejected``: the HTTP protocol (``backend/consentry/http_protocol.py``) gave up
  on a slow body (408) or found it malformed (400), answered in the app's place and closed; it says
  so in the scope extension :data:`SERVER_REPORT`, with the error's ``code``. The protocol writes
  the lines of the requests it refuses before the app sees them (:func:`log_refused_head`).
- ``failed``: the app raised or ended without finishing its response (500 when nothing was sent).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Literal
from uuid import uuid4

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from consentry.observability.logs import bind_request

__all__ = ["SERVER_REPORT", "Outcome", "RequestIds", "log_refused_head"]

log = logging.getLogger("consentry.access")
_SANE = re.compile(rb"[A-Za-z0-9._:-]{1,64}")
_QUIET = frozenset({"/healthz", "/readyz", "/metrics"})
"""Probes and scrapes come every few seconds: their lines are debug, not info."""

Outcome = Literal["completed", "client_disconnected", "timed_out", "rejected", "failed"]
CLIENT_CLOSED_REQUEST = 499
SERVER_REPORT = "consentry.server_report"
"""The ASGI scope extension (``scope["extensions"]``) in which the server says what it did beside
the app: ``{"status": 408, "outcome": "timed_out", "code": "request_timeout"}`` when it answered
in the app's place, ``{"outcome": "client_disconnected", "status": 499}`` when it lost the
connection before a response started. Set only by ``consentry serve``'s protocol, when it
happens; the first word stands."""


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"x-request-id"), None)
        request_id = given.decode() if given and _SANE.fullmatch(given) else uuid4().hex
        bind_request(request_id)
        header = (b"x-request-id", request_id.encode())
        status: int | None = None
        complete = False
        client_left = False
        started = time.perf_counter()

        async def receive_watched() -> Message:
            nonlocal client_left
            message = await receive()
            if message["type"] == "http.disconnect" and not complete:
                client_left = True
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, complete
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive_watched, send_with_id)
        finally:
            report: dict[str, Any] = (scope.get("extensions") or {}).get(SERVER_REPORT, {})
            outcome: Outcome = report.get("outcome") or (
                "client_disconnected" if client_left else "completed" if complete else "failed"
            )
            if "status" in report:
                status = report["status"]
            elif status is None:  # nothing was sent: the server sends 500, unless nobody is there
                status = CLIENT_CLOSED_REQUEST if outcome == "client_disconnected" else 500
            _log_access(
                scope["method"],
                scope["path"],
                status=status,
                outcome=outcome,
                duration_ms=(time.perf_counter() - started) * 1000,
                code=report.get("code"),
            )


def log_refused_head(*, status: int, code: str, outcome: Outcome, duration_ms: float) -> None:
    """The line of a request the HTTP protocol refused before the app saw it (its head was too
    large, too slow or not HTTP): no method, path or id is known; ``code`` is the error's."""
    _log_access("-", "-", status=status, outcome=outcome, duration_ms=duration_ms, code=code)


def _log_access(
    method: str,
    path: str,
    *,
    status: int,
    outcome: Outcome,
    duration_ms: float,
    code: str | None = None,
) -> None:
    completed = outcome == "completed"
    log.log(
        logging.DEBUG if completed and path in _QUIET else logging.INFO,
        "%s %s %d%s",
        method,
        path,
        status,
        "" if completed else f" ({outcome})",
        extra={
            "method": None if method == "-" else method,
            "path": None if path == "-" else path,
            "status": status,
            "outcome": outcome,
            "code": code,
            "duration_ms": round(duration_ms, 1),
        },
    )
