"""What a failed model call means: a stable code, whether another attempt may succeed, and how
long the provider asked us to wait.

One table for the whole product: the retry layer (``consentry_graphs.models.retrying``) decides from
it whether to try again, and the server reports the same code to the client when it gives up.

==========================  =====================================================  =========
code                        provider answer                                        retryable
==========================  =====================================================  =========
``model_rate_limited``      429                                                    yes
``model_quota_exhausted``   429 whose error code is ``insufficient_quota``         no
``model_unavailable``       5xx, 408, 409, a timeout, a refused or cut connection  yes
``model_auth_failed``       401, 403                                               no
``model_rejected``          400, 404, 413, 422 (and any other 4xx)                 no
==========================  =====================================================  =========
"""

from __future__ import annotations

import email.utils
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelPermissionDeniedError,
    ModelRateLimitError,
    ModelTimeoutError,
)

from consentry_graphs.wire_types import ModelFaultCode

__all__ = ["ModelFault", "ModelFaultCode", "classify_fault"]

_RETRYABLE_STATUSES = frozenset({408, 409})  # besides 5xx; 429 is decided above
_QUOTA_CODES = frozenset({"insufficient_quota", "quota_exceeded", "billing_hard_limit_reached"})


@dataclass(frozen=True)
class ModelFault:
    code: ModelFaultCode
    retryable: bool
    """Whether the same request may succeed if sent again."""
    retry_after: float | None = None
    """Seconds the provider asked us to wait (``Retry-After`` / ``retry-after-ms``), if it did."""


def classify_fault(exc: BaseException) -> ModelFault | None:
    """The fault ``exc`` reports, or None when it is not a model provider's failure."""
    status = _status(exc)
    if isinstance(exc, ModelRateLimitError) or status == 429:
        if _quota_exhausted(exc):
            return ModelFault("model_quota_exhausted", retryable=False)
        return ModelFault("model_rate_limited", retryable=True, retry_after=_retry_after(exc))
    if isinstance(exc, ModelAuthenticationError | ModelPermissionDeniedError) or status in (
        401,
        403,
    ):
        return ModelFault("model_auth_failed", retryable=False)
    if (
        isinstance(exc, ModelAPIError | ModelConnectionError | ModelTimeoutError)
        or (status is not None and (status >= 500 or status in _RETRYABLE_STATUSES))
        or isinstance(exc, httpx.TransportError)
        or _is_openai_error(exc, "APIConnectionError")
    ):
        return ModelFault("model_unavailable", retryable=True, retry_after=_retry_after(exc))
    if isinstance(exc, ModelError) or status is not None:
        return ModelFault("model_rejected", retryable=False)
    return None


def _is_openai_error(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is the OpenAI SDK's error class ``name``. The SDK is looked up, not
    imported: its errors exist only once something loaded it, and importing it costs about a
    second of start-up in a server that never calls a model provider (the offline model)."""
    sdk = sys.modules.get("openai")
    return sdk is not None and isinstance(exc, getattr(sdk, name))


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code
    return None


def _quota_exhausted(exc: BaseException) -> bool:
    """Whether the provider's machine-readable error code (OpenAI's ``error.code`` or
    ``error.type``) says the account is out of quota: waiting will not help."""
    values: list[Any] = []
    if _is_openai_error(exc, "APIError"):
        values += [getattr(exc, "code", None), getattr(exc, "type", None)]
    body: Any = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        values += [error.get("code"), error.get("type")]
    return any(isinstance(value, str) and value in _QUOTA_CODES for value in values)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())
