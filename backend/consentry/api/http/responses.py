"""OpenAPI descriptions of the error responses every route may return."""

from __future__ import annotations

from typing import Any

from consentry.schemas.errors import ErrorBody

__all__ = ["ERROR_RESPONSES"]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or unknown API key."},
    404: {"model": ErrorBody, "description": "Unknown id, or one owned by somebody else."},
    409: {"model": ErrorBody, "description": "The thread, consent or note is in another state."},
    413: {
        "model": ErrorBody,
        "description": "The body is larger than `CONSENTRY_MAX_BODY_BYTES` (docs/limits.md).",
    },
    415: {
        "model": ErrorBody,
        "description": "A body that is not sent as JSON (`Content-Type: application/json`).",
    },
    422: {"model": ErrorBody, "description": "The request is malformed or not allowed."},
    429: {
        "model": ErrorBody,
        "description": "Rate limited, or at a cap on open streams or active runs "
        "(docs/limits.md); retry after `Retry-After` seconds.",
        "headers": {
            "Retry-After": {
                "description": "Seconds to wait before trying again.",
                "schema": {"type": "integer", "minimum": 1},
            }
        },
    },
}
