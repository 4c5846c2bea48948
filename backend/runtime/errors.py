"""How a failure inside a run is reported: a stable code, a safe message, and whether to retry."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
)

from backend.storage.database import is_database_unavailable

__all__ = ["RunFailure", "describe_failure"]


@dataclass(frozen=True)
class RunFailure:
    code: str
    message: str
    retryable: bool


def describe_failure(exc: BaseException) -> RunFailure:
    """Never expose ``str(exc)``: provider messages can carry prompts, keys or internals."""
    if isinstance(exc, ModelRateLimitError):
        return RunFailure("model_rate_limited", "The model provider is rate limiting us.", True)
    if isinstance(exc, ModelConnectionError | ModelTimeoutError):
        return RunFailure("model_unavailable", "The model provider could not be reached.", True)
    if isinstance(exc, ModelAPIError):
        return RunFailure("model_error", "The model provider failed to answer.", True)
    if isinstance(exc, ModelError):
        return RunFailure(
            "model_rejected_request", "The model provider refused the request.", False
        )
    if is_database_unavailable(exc):
        return RunFailure("database_unavailable", "The database could not be reached.", True)
    return RunFailure("internal_error", "The run failed unexpectedly.", False)
