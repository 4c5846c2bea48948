"""Consentry's errors: one small hierarchy, one JSON body.

Every error a client sees has the body ``{"error": {"code", "message", "details"}}``; ``code`` is a
stable machine-readable string (see docs/protocol.md), ``message`` is for people. Inside an SSE
stream the same information arrives as an ``error`` event followed by the run's ``final`` event.

    ConsentryError                 500 internal_error
    ├── BadRequestError            400 invalid_last_event_id, malformed_request
    ├── UnauthorizedError          401 unauthorized
    ├── NotFoundError              404 <thing>_not_found (another owner's id answers the same)
    ├── RequestTimeoutError        408 request_timeout
    ├── ConflictError              409 run_in_progress, consent_pending, no_pending_consent,
    │                                  assistant_exists, assistant_read_only,
    │                                  approval_not_pending, already_decided,
    │                                  request_in_progress, version_conflict
    ├── GoneError                  410 consent_expired
    ├── PayloadTooLargeError       413 body_too_large
    ├── UnsupportedMediaTypeError  415 unsupported_media_type
    ├── InvalidRequestError        422 request_invalid, malformed_json, empty_message,
    │                                  unknown_decision, decision_not_allowed, invalid_edit,
    │                                  duplicate_decision, unknown_graph, graph_mismatch,
    │                                  policy_mismatch, message_too_long, invalid_input,
    │                                  idempotency_key_reused, limit_exceeded, unstorable_text,
    │                                  no_new_message, unsupported_content, invalid_context,
    │                                  invalid_config, webhook_invalid, webhook_not_allowed
    ├── TooManyRequestsError       429 rate_limited, too_many_streams, too_many_active_runs
    │                                  (with ``Retry-After``)
    └── HeadersTooLargeError       431 headers_too_large

An error may carry response ``headers`` (``Retry-After``); the app sends them with the body.
``malformed_request``, 408 and 431 come from below the app, from the HTTP protocol
(``backend/consentry/http_protocol.py``), with the same body.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BadRequestError",
    "ConflictError",
    "ConsentryError",
    "GoneError",
    "HeadersTooLargeError",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RequestTimeoutError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
]


class ConsentryError(Exception):
    """Base of every error Consentry reports to a client."""

    status_code: ClassVar[int] = 500
    default_code: ClassVar[str] = "internal_error"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.details = details or {}

    @property
    def headers(self) -> dict[str, str]:
        """Response headers that go with the error body."""
        return {}


class BadRequestError(ConsentryError):
    status_code = 400
    default_code = "bad_request"


class UnauthorizedError(ConsentryError):
    status_code = 401
    default_code = "unauthorized"


class NotFoundError(ConsentryError):
    status_code = 404
    default_code = "not_found"

    @classmethod
    def of(cls, thing: str, ident: str) -> NotFoundError:
        return cls(
            f"No {thing.replace('_', ' ')} with id {ident!r}.",
            code=f"{thing}_not_found",
            details={f"{thing}_id": ident},
        )


class RequestTimeoutError(ConsentryError):
    status_code = 408
    default_code = "request_timeout"


class ConflictError(ConsentryError):
    status_code = 409
    default_code = "conflict"


class GoneError(ConsentryError):
    status_code = 410
    default_code = "gone"


class InvalidRequestError(ConsentryError):
    status_code = 422
    default_code = "request_invalid"


class PayloadTooLargeError(ConsentryError):
    status_code = 413
    default_code = "body_too_large"


class UnsupportedMediaTypeError(ConsentryError):
    """A body in a format the route does not read (every body of the API is JSON)."""

    status_code = 415
    default_code = "unsupported_media_type"


class TooManyRequestsError(ConsentryError):
    """Refused for now: the client may try again after ``retry_after`` seconds."""

    status_code = 429
    default_code = "rate_limited"

    def __init__(
        self,
        message: str,
        *,
        retry_after: int,
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, code=code, details=details)
        self.retry_after = max(1, retry_after)

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class HeadersTooLargeError(ConsentryError):
    status_code = 431
    default_code = "headers_too_large"
