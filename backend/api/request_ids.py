"""Every request gets an id, and one log line when its response is over.

The id is the client's ``X-Request-ID`` when it sends a sane one (letters, digits, ``.-_:``, at
most 64), else a new one; it goes back in the response's ``X-Request-ID`` and onto every log line
written while the request is served, and onto the lines of the run it starts
(``observability.logs``). A pure ASGI middleware: a streamed response is not buffered, and its
line is written when the stream ends."""

from __future__ import annotations

import logging
import re
import time
from uuid import uuid4

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.observability.logs import bind_request

__all__ = ["RequestIds"]

log = logging.getLogger("consentry.access")
_SANE = re.compile(rb"[A-Za-z0-9._:-]{1,64}")
_QUIET = frozenset({"/healthz", "/readyz", "/metrics"})
"""Probes and scrapes come every few seconds: their lines are debug, not info."""


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
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            path: str = scope["path"]
            log.log(
                logging.DEBUG if path in _QUIET else logging.INFO,
                "%s %s %d",
                scope["method"],
                path,
                status,
                extra={
                    "method": scope["method"],
                    "path": path,
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
