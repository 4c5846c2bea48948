"""Text no database can store, outside the body: a NUL character (U+0000) in the URL path
(``%00`` in an id), in the query string (``?q=%00``) or in a header value, refused by ASGI
middleware with 422 ``unstorable_text`` before any route runs. The body is checked by the request
models (``schemas.requests``) and ``json_limits``.

PostgreSQL refuses NUL in text, so such an id or search would fail there and work on SQLite;
refused here, it fails the same way on both. HTTP servers refuse NUL in header values already
(RFC 9110); the check holds for any other way a request arrives (an in-process client, a proxy).
A percent-escape that is not UTF-8 decodes to U+FFFD, which is storable, so it is left to the
route (an unknown id is 404).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from consentry.api.http.middleware_errors import send_error
from consentry.errors import InvalidRequestError
from consentry.schemas.requests import UNSTORABLE_TEXT

__all__ = ["UnstorableTextInUrl"]


class UnstorableTextInUrl:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            where = _where_nul(scope)
            if where is not None:
                error = InvalidRequestError(
                    f"The {where} contains a NUL character (U+0000), which cannot be stored.",
                    code=UNSTORABLE_TEXT,
                    details={"where": where},
                )
                await send_error(error, scope, receive, send)
                return
        await self.app(scope, receive, send)


def _where_nul(scope: Scope) -> str | None:
    if "\x00" in scope["path"]:
        return "URL path"
    query: bytes = scope.get("query_string", b"")
    if b"\x00" in query or b"%00" in query:
        return "query string"
    for name, value in scope["headers"]:
        if b"\x00" in value:
            return f"header {name.decode('latin-1')}"
    return None
