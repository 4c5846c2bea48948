"""Cross-origin requests, for a frontend served from its own dev server
(``CONSENTRY_CORS_ORIGINS``; docs/frontend.md).

Off by default: the built-in web app is served by the API itself (same origin), and a browser
page of any other origin cannot read a response. With origins listed, Starlette's
``CORSMiddleware`` answers their preflights (``OPTIONS`` with ``Access-Control-Request-Method``)
before any route or key check, and marks every response to them readable, including refusals
(401, 413, 429) and event streams, with the headers a client of the protocol reads.

It runs outside the request limits (body size, JSON shape, NUL in the URL), so those still
apply to every cross-origin request, and their refusals carry the CORS headers a page needs to
read them. Requests are never credentialed: Consentry sets no cookie, and a key travels in
``Authorization``, a header like any other. So ``*`` (any origin) is possible with API keys (a
page must still hold a key); without keys it would let any web page act as the local user, and
the settings refuse it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALLOWED_HEADERS", "ALLOWED_METHODS", "EXPOSED_HEADERS", "cors_options"]

ALLOWED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
ALLOWED_HEADERS: tuple[str, ...] = (
    "Authorization",
    "X-Api-Key",  # the LangGraph SDK's header for the key
    "Content-Type",
    "Last-Event-ID",
    "Idempotency-Key",
    "X-Request-ID",
)
"""Request headers a page may send: the key, JSON, rejoining a stream, a safe retry, its own id."""
EXPOSED_HEADERS: tuple[str, ...] = (
    "Content-Location",  # where the LangGraph SDK finds a run again
    "Location",
    "X-Run-Id",
    "X-Thread-Id",
    "X-Request-ID",
    "Idempotent-Replayed",
    "Retry-After",
)
"""Response headers a page may read besides the CORS-safelisted ones (``Content-Type``...)."""
PREFLIGHT_MAX_AGE_SECONDS = 600


def cors_options(origins: list[str]) -> dict[str, Any]:
    """The keyword arguments of ``CORSMiddleware`` for ``origins`` (exact origins, or ``*``)."""
    return {
        "allow_origins": origins,
        "allow_methods": ALLOWED_METHODS,
        "allow_headers": ALLOWED_HEADERS,
        "expose_headers": EXPOSED_HEADERS,
        "allow_credentials": False,
        "max_age": PREFLIGHT_MAX_AGE_SECONDS,
    }
