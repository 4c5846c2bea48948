"""The request body limit (``CONSENTRY_MAX_BODY_BYTES``), as ASGI middleware: a body larger
than the limit gets 413 ``body_too_large`` before anything parses it.

- A ``Content-Length`` above the limit is refused at once; nothing of the body is read.
- Any other body (chunked, or a ``Content-Length`` that understates it) is read as it comes, and
  refused as soon as the bytes received pass the limit: the middleware never holds more than
  ``CONSENTRY_MAX_BODY_BYTES`` of it.
- A body within the limit is read whole (FastAPI reads it whole anyway, before the route runs)
  and, when it is JSON, checked for UTF-8, nesting depth and array sizes (``json_limits``); then
  the app receives it as one message. Later ``receive`` calls (an event stream waiting for the
  client to go away) go to the server as before.

Requests without a body (``GET``, ``HEAD``, ``OPTIONS``) pass untouched: no route reads theirs.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from consentry.api.http.json_limits import json_body_problem
from consentry.api.http.middleware_errors import send_error
from consentry.errors import PayloadTooLargeError

__all__ = ["RequestBodyLimits"]

_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RequestBodyLimits:
    def __init__(
        self, app: ASGIApp, *, max_bytes: int, max_json_depth: int, max_list_items: int
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_depth = max_json_depth
        self.max_list_items = max_list_items

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODYLESS_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_error(self._too_large(), scope, receive, send)
            return
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away while sending: nobody to answer
            chunk: bytes = message.get("body", b"")
            received += len(chunk)
            if received > self.max_bytes:
                await send_error(self._too_large(), scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if _is_json(headers.get("content-type")):
            problem = json_body_problem(
                body, max_depth=self.max_json_depth, max_list_items=self.max_list_items
            )
            if problem is not None:
                await send_error(problem, scope, receive, send)
                return
        await self.app(scope, _replay(body, receive), send)

    def _too_large(self) -> PayloadTooLargeError:
        return PayloadTooLargeError(
            f"The request body is larger than {self.max_bytes} bytes (max_body_bytes).",
            details={"limit": "max_body_bytes", "max": self.max_bytes},
        )


def _is_json(content_type: str | None) -> bool:
    """Whether FastAPI parses the body as JSON: no content type, or ``application/json`` or
    ``application/*+json``."""
    if not content_type:
        return True
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the server's own ``receive``."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
