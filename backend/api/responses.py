"""OpenAPI descriptions of the error responses every route may return."""

from __future__ import annotations

from typing import Any

from backend.schemas.errors import ErrorBody

__all__ = ["ERROR_RESPONSES"]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or unknown API key."},
    404: {"model": ErrorBody, "description": "Unknown id, or one owned by somebody else."},
    409: {"model": ErrorBody, "description": "The thread, consent or note is in another state."},
    422: {"model": ErrorBody, "description": "The request is malformed or not allowed."},
}
