"""The built-in web app: ``/`` serves its page, ``/web/`` its modules and styles.

Everything the page loads comes from this server (no CDN, no build step); the Content Security
Policy says so to the browser, which refuses anything else. The files live in
``backend/consentry/web/``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["WEB_DIRECTORY", "WebFiles", "router"]

WEB_DIRECTORY = Path(__file__).resolve().parent.parent / "web"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    """The app's page. It is the same for everybody: the data comes from the API."""
    return FileResponse(
        WEB_DIRECTORY / "index.html",
        headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
    )


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    """What a browser asks for on a page that names no icon (``/docs``, a JSON document)."""
    return FileResponse(
        WEB_DIRECTORY / "favicon.svg",
        media_type="image/svg+xml",
        headers={**SECURITY_HEADERS, "Cache-Control": "max-age=86400"},
    )


class WebFiles(StaticFiles):
    """``backend/consentry/web/`` with the security headers, revalidated on every load (ETag), so a
    page never mixes modules of two releases."""

    def __init__(self) -> None:
        super().__init__(directory=WEB_DIRECTORY)

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update({**SECURITY_HEADERS, "Cache-Control": "no-cache"})
        return response
