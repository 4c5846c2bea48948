"""Error responses sent by the ASGI middleware (``body_limit``, ``url_text``), which answer
before FastAPI's exception handlers are reached: the same body, ``{"error": {"code", "message",
"details"}}``, and the error's headers."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from consentry.errors import ConsentryError
from consentry.schemas.errors import ErrorBody, ErrorDetail

__all__ = ["send_error"]


async def send_error(error: ConsentryError, scope: Scope, receive: Receive, send: Send) -> None:
    services = getattr(scope["app"].state, "services", None)  # absent only before start-up
    if services is not None:
        services.metrics.refused(error.code, error.status_code)
    body = ErrorBody(
        error=ErrorDetail(code=error.code, message=error.message, details=error.details)
    )
    response = JSONResponse(
        body.model_dump(mode="json"), status_code=error.status_code, headers=error.headers
    )
    await response(scope, receive, send)
