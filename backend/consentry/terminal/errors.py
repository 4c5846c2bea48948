"""The terminal client's errors: one tree, one exit code each.

    ClientError                  anything the client reports as one line on stderr
    ├── ServerUnreachableError   no connection, no answer, or a stream cut for good (exit 2)
    ├── ApiError                 the server refused the request: its ``{"error": …}`` body (exit 1)
    ├── InvalidInputError        what was typed does not fit the request schema, not sent (exit 1)
    └── UnexpectedResponseError  an answer that is not the protocol (exit 1)

None of them is shown with a traceback: ``consentry.terminal.commands`` prints
``error: <code>: <message>`` (``render.format_error``) and exits with :attr:`exit_code`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "ClientError",
    "InvalidInputError",
    "ServerUnreachableError",
    "UnexpectedResponseError",
]


class ClientError(Exception):
    """Base of every error the terminal client expects (never shown as a traceback)."""

    exit_code = 1
    code = "client_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ServerUnreachableError(ClientError):
    """The server could not be reached, did not answer in time, or cut a stream for good."""

    exit_code = 2
    code = "unreachable"


class ApiError(ClientError):
    """A refused request: the HTTP status, and the error body's ``code``, ``message`` and
    ``details``."""

    def __init__(
        self, status: int, *, code: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.details = details or {}


class InvalidInputError(ClientError):
    """What was typed (an id, a comment) does not fit the request's wire model: nothing was sent."""

    code = "request_invalid"


class UnexpectedResponseError(ClientError):
    """The server answered something that is not Consentry's protocol (another service?)."""

    code = "unexpected_response"
