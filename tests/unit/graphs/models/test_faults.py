"""What a failed model call means (``graphs/consentry_graphs/models/faults.py``), how long the retry
layer waits before the next attempt (``RetryPolicy.delay``), and how a run reports the fault
(``consentry.runtime.runs.execute._failures.describe_failure``). Real exceptions, no network."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import openai
import pytest
from langchain_core.exceptions import ModelRefusalError
from langchain_openai.chat_models.base import (
    OpenAIAPIContextOverflowError,
    OpenAIAPIError,
    OpenAIAuthenticationError,
    OpenAIConnectionError,
    OpenAIContextOverflowError,
    OpenAIInvalidRequestError,
    OpenAIModelNotFoundError,
    OpenAIPermissionDeniedError,
    OpenAIRateLimitError,
    OpenAITimeoutError,
)

from consentry.errors import ConflictError, ConsentryError, InvalidRequestError, NotFoundError
from consentry.runtime.runs.execute._failures import describe_failure
from consentry_graphs.models import ModelFault, RetryPolicy, classify_fault

SECRET = "provider-internals: shard 7 exploded, key sk-live-leak"
REQUEST = httpx.Request("POST", "http://provider.test/v1/chat/completions")


def _body(*, code: str | None = None, kind: str = "server_error") -> dict[str, Any]:
    """OpenAI's error object, as its client passes it to the exception (``error`` unwrapped)."""
    return {"message": SECRET, "type": kind, "param": None, "code": code}


def _response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=REQUEST)


def _status_error(
    cls: type[openai.APIStatusError],
    status: int,
    *,
    headers: dict[str, str] | None = None,
    body: object = None,
) -> openai.APIStatusError:
    return cls(
        SECRET,
        response=_response(status, headers),  # type: ignore[arg-type]
        body=_body() if body is None else body,
    )


def _rate_limited(headers: dict[str, str]) -> openai.APIStatusError:
    return _status_error(openai.RateLimitError, 429, headers=headers)


ExceptionFactory = Callable[[], BaseException]

MODEL_FAULTS: list[Any] = [
    # 429: another attempt may work
    pytest.param(
        lambda: _status_error(openai.RateLimitError, 429),
        "model_rate_limited",
        True,
        id="openai-429",
    ),
    pytest.param(
        lambda: _status_error(OpenAIRateLimitError, 429),
        "model_rate_limited",
        True,
        id="langchain-429",
    ),
    pytest.param(
        lambda: httpx.HTTPStatusError(SECRET, request=REQUEST, response=_response(429)),
        "model_rate_limited",
        True,
        id="httpx-status-429",
    ),
    # 429 with the quota used up: waiting will not help
    pytest.param(
        lambda: _status_error(
            openai.RateLimitError, 429, body=_body(code="insufficient_quota", kind="requests")
        ),
        "model_quota_exhausted",
        False,
        id="openai-429-insufficient-quota-code",
    ),
    pytest.param(
        lambda: _status_error(
            OpenAIRateLimitError, 429, body=_body(code=None, kind="insufficient_quota")
        ),
        "model_quota_exhausted",
        False,
        id="langchain-429-insufficient-quota-type",
    ),
    pytest.param(
        lambda: _status_error(
            openai.RateLimitError,
            429,
            headers={"Retry-After": "2"},
            body={"error": _body(code="insufficient_quota")},
        ),
        "model_quota_exhausted",
        False,
        id="openai-429-insufficient-quota-wrapped-body",
    ),
    pytest.param(
        lambda: _status_error(
            OpenAIRateLimitError, 429, body=_body(code="billing_hard_limit_reached")
        ),
        "model_quota_exhausted",
        False,
        id="langchain-429-billing-hard-limit",
    ),
    # the provider did not answer: 5xx, 408, 409, timeouts, refused or cut connections
    pytest.param(
        lambda: _status_error(openai.InternalServerError, 500),
        "model_unavailable",
        True,
        id="openai-500",
    ),
    pytest.param(
        lambda: _status_error(OpenAIAPIError, 502),
        "model_unavailable",
        True,
        id="langchain-502",
    ),
    pytest.param(
        lambda: _status_error(openai.InternalServerError, 503),
        "model_unavailable",
        True,
        id="openai-503",
    ),
    pytest.param(
        lambda: _status_error(openai.APIStatusError, 504),
        "model_unavailable",
        True,
        id="openai-status-504",
    ),
    pytest.param(
        lambda: _status_error(openai.APIStatusError, 408),
        "model_unavailable",
        True,
        id="openai-status-408",
    ),
    pytest.param(
        lambda: _status_error(openai.ConflictError, 409),
        "model_unavailable",
        True,
        id="openai-409",
    ),
    pytest.param(
        lambda: _status_error(openai.APIStatusError, 409),
        "model_unavailable",
        True,
        id="openai-status-409",
    ),
    pytest.param(
        lambda: httpx.HTTPStatusError(SECRET, request=REQUEST, response=_response(503)),
        "model_unavailable",
        True,
        id="httpx-status-503",
    ),
    pytest.param(
        lambda: openai.APITimeoutError(REQUEST),  # type: ignore[arg-type]
        "model_unavailable",
        True,
        id="openai-timeout",
    ),
    pytest.param(
        lambda: OpenAITimeoutError(REQUEST),  # type: ignore[arg-type]
        "model_unavailable",
        True,
        id="langchain-timeout",
    ),
    pytest.param(
        lambda: openai.APIConnectionError(message=SECRET, request=REQUEST),  # type: ignore[arg-type]
        "model_unavailable",
        True,
        id="openai-connection",
    ),
    pytest.param(
        lambda: OpenAIConnectionError(message=SECRET, request=REQUEST),  # type: ignore[arg-type]
        "model_unavailable",
        True,
        id="langchain-connection",
    ),
    pytest.param(
        lambda: httpx.ReadTimeout(SECRET, request=REQUEST),
        "model_unavailable",
        True,
        id="httpx-read-timeout",
    ),
    pytest.param(
        lambda: httpx.ConnectTimeout(SECRET, request=REQUEST),
        "model_unavailable",
        True,
        id="httpx-connect-timeout",
    ),
    pytest.param(
        lambda: httpx.ConnectError(SECRET, request=REQUEST),
        "model_unavailable",
        True,
        id="httpx-connect-refused",
    ),
    pytest.param(
        lambda: httpx.RemoteProtocolError(SECRET, request=REQUEST),
        "model_unavailable",
        True,
        id="httpx-connection-cut",
    ),
    pytest.param(
        lambda: httpx.ReadError(SECRET, request=REQUEST),
        "model_unavailable",
        True,
        id="httpx-read-error",
    ),
    # the credentials were refused
    pytest.param(
        lambda: _status_error(openai.AuthenticationError, 401),
        "model_auth_failed",
        False,
        id="openai-401",
    ),
    pytest.param(
        lambda: _status_error(OpenAIAuthenticationError, 401),
        "model_auth_failed",
        False,
        id="langchain-401",
    ),
    pytest.param(
        lambda: _status_error(openai.PermissionDeniedError, 403),
        "model_auth_failed",
        False,
        id="openai-403",
    ),
    pytest.param(
        lambda: _status_error(OpenAIPermissionDeniedError, 403),
        "model_auth_failed",
        False,
        id="langchain-403",
    ),
    pytest.param(
        lambda: httpx.HTTPStatusError(SECRET, request=REQUEST, response=_response(401)),
        "model_auth_failed",
        False,
        id="httpx-status-401",
    ),
    # the request itself was refused
    pytest.param(
        lambda: _status_error(openai.BadRequestError, 400),
        "model_rejected",
        False,
        id="openai-400",
    ),
    pytest.param(
        lambda: _status_error(OpenAIInvalidRequestError, 400),
        "model_rejected",
        False,
        id="langchain-400",
    ),
    pytest.param(
        lambda: _status_error(OpenAIContextOverflowError, 400),
        "model_rejected",
        False,
        id="langchain-400-context-overflow",
    ),
    pytest.param(
        lambda: OpenAIAPIContextOverflowError(SECRET, REQUEST, body=_body()),  # type: ignore[arg-type]
        "model_rejected",
        False,
        id="langchain-context-overflow-without-status",
    ),
    pytest.param(
        lambda: _status_error(openai.NotFoundError, 404),
        "model_rejected",
        False,
        id="openai-404",
    ),
    pytest.param(
        lambda: _status_error(OpenAIModelNotFoundError, 404),
        "model_rejected",
        False,
        id="langchain-404",
    ),
    pytest.param(
        lambda: _status_error(openai.APIStatusError, 413),
        "model_rejected",
        False,
        id="openai-status-413",
    ),
    pytest.param(
        lambda: _status_error(openai.UnprocessableEntityError, 422),
        "model_rejected",
        False,
        id="openai-422",
    ),
    pytest.param(
        lambda: _status_error(openai.APIStatusError, 422),
        "model_rejected",
        False,
        id="openai-status-422",
    ),
    pytest.param(
        lambda: ModelRefusalError(SECRET),
        "model_rejected",
        False,
        id="langchain-refusal",
    ),
]

NOT_MODEL_FAULTS: list[Any] = [
    pytest.param(lambda: ValueError(SECRET), id="value-error"),
    pytest.param(lambda: RuntimeError(SECRET), id="runtime-error"),
    pytest.param(lambda: KeyError(SECRET), id="key-error"),
    pytest.param(lambda: asyncio.CancelledError(), id="cancelled"),
]


# --- classify_fault ---------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "code", "retryable"), MODEL_FAULTS)
def test_each_provider_failure_maps_to_its_code_and_retryability(
    make: ExceptionFactory, code: str, retryable: bool
) -> None:
    fault = classify_fault(make())

    assert fault is not None
    assert (fault.code, fault.retryable) == (code, retryable)


@pytest.mark.parametrize("make", NOT_MODEL_FAULTS)
def test_a_failure_that_is_not_the_providers_is_not_a_model_fault(make: ExceptionFactory) -> None:
    assert classify_fault(make()) is None


def test_an_exhausted_quota_is_not_retried_even_when_the_provider_sends_retry_after() -> None:
    exc = _status_error(
        openai.RateLimitError,
        429,
        headers={"Retry-After": "5"},
        body=_body(code="insufficient_quota"),
    )

    assert classify_fault(exc) == ModelFault("model_quota_exhausted", retryable=False)


def test_a_429_for_another_reason_than_quota_stays_a_rate_limit() -> None:
    exc = _status_error(openai.RateLimitError, 429, body=_body(code="rate_limit_exceeded"))

    assert classify_fault(exc) == ModelFault("model_rate_limited", retryable=True)


# --- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        pytest.param({"Retry-After": "2"}, 2.0, id="seconds"),
        pytest.param({"retry-after": "0.25"}, 0.25, id="fractional-seconds"),
        pytest.param({"Retry-After": " 3 "}, 3.0, id="seconds-with-spaces"),
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="milliseconds"),
        pytest.param(
            {"retry-after-ms": "250", "Retry-After": "9"}, 0.25, id="milliseconds-win-over-seconds"
        ),
        pytest.param(
            {"retry-after-ms": "soon", "Retry-After": "4"}, 4.0, id="bad-milliseconds-fall-back"
        ),
        pytest.param({"Retry-After": "-3"}, 0.0, id="negative-is-no-wait"),
        pytest.param({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, id="date-in-the-past"),
    ],
)
def test_a_rate_limit_carries_the_wait_the_provider_asked_for(
    headers: dict[str, str], seconds: float
) -> None:
    fault = classify_fault(_rate_limited(headers))

    assert fault == ModelFault("model_rate_limited", retryable=True, retry_after=seconds)


def test_a_retry_after_http_date_in_the_future_is_the_seconds_until_then() -> None:
    moment = datetime.now(UTC) + timedelta(seconds=120)

    fault = classify_fault(_rate_limited({"Retry-After": format_datetime(moment, usegmt=True)}))

    assert fault is not None
    assert fault.retry_after is not None
    assert 118.0 <= fault.retry_after <= 120.0  # the date has whole seconds


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="absent"),
        pytest.param({"Retry-After": "soon"}, id="garbage"),
        pytest.param({"Retry-After": ""}, id="empty"),
        pytest.param({"retry-after-ms": "later"}, id="garbage-milliseconds-only"),
    ],
)
def test_a_missing_or_unreadable_retry_after_means_no_requested_wait(
    headers: dict[str, str],
) -> None:
    fault = classify_fault(_rate_limited(headers))

    assert fault == ModelFault("model_rate_limited", retryable=True, retry_after=None)


def test_a_503_with_retry_after_carries_the_wait_too() -> None:
    exc = _status_error(openai.InternalServerError, 503, headers={"Retry-After": "7"})

    assert classify_fault(exc) == ModelFault("model_unavailable", retryable=True, retry_after=7.0)


def test_a_fault_without_a_response_has_no_requested_wait() -> None:
    fault = classify_fault(OpenAIConnectionError(message=SECRET, request=REQUEST))  # type: ignore[arg-type]

    assert fault == ModelFault("model_unavailable", retryable=True, retry_after=None)


# --- RetryPolicy.delay ------------------------------------------------------------------------

NO_WAIT_ASKED = ModelFault("model_unavailable", retryable=True)
# base 0.5 s doubling per failed attempt, capped at 8 s (the defaults)
BACKOFFS = {1: 0.5, 2: 1.0, 3: 2.0, 4: 4.0, 5: 8.0, 6: 8.0, 9: 8.0, 30: 8.0}


@pytest.mark.parametrize(("attempt", "backoff"), sorted(BACKOFFS.items()))
def test_the_wait_lies_between_half_the_backoff_and_the_backoff(
    attempt: int, backoff: float
) -> None:
    policy = RetryPolicy(base_delay_seconds=0.5, max_delay_seconds=8.0)

    waits = [policy.delay(attempt, NO_WAIT_ASKED) for _ in range(2000)]

    assert all(backoff / 2 <= wait <= backoff for wait in waits)
    # jittered: the samples spread over the whole range, not one fixed value
    assert min(waits) < backoff * 0.55
    assert max(waits) > backoff * 0.95


@pytest.mark.parametrize(
    ("jitter", "expected"), [("none", [0.5, 1, 2, 4, 8, 8]), ("full", [1, 2, 4, 8, 16, 16])]
)
def test_the_backoff_doubles_per_attempt_up_to_the_cap(
    monkeypatch: pytest.MonkeyPatch, jitter: str, expected: list[float]
) -> None:
    """The random half pinned to its lowest and highest value: exactly half the backoff, or all
    of it."""
    monkeypatch.setattr(random, "uniform", lambda low, high: low if jitter == "none" else high)
    policy = RetryPolicy(base_delay_seconds=1.0, max_delay_seconds=16.0)

    assert [policy.delay(attempt, NO_WAIT_ASKED) for attempt in range(1, 7)] == expected


def test_a_retry_after_longer_than_the_backoff_is_waited_out() -> None:
    policy = RetryPolicy(base_delay_seconds=0.5, max_delay_seconds=8.0)
    fault = ModelFault("model_rate_limited", retryable=True, retry_after=5.0)

    assert {policy.delay(1, fault) for _ in range(200)} == {5.0}


def test_a_retry_after_is_capped() -> None:
    policy = RetryPolicy(base_delay_seconds=0.5, max_delay_seconds=8.0, retry_after_cap_seconds=30)
    fault = ModelFault("model_rate_limited", retryable=True, retry_after=3600.0)

    assert {policy.delay(1, fault) for _ in range(200)} == {30.0}


@pytest.mark.parametrize("retry_after", [0.0, 0.1, 1.9])
def test_a_retry_after_shorter_than_the_backoff_does_not_shorten_the_wait(
    retry_after: float,
) -> None:
    policy = RetryPolicy(base_delay_seconds=1.0, max_delay_seconds=8.0)
    fault = ModelFault("model_rate_limited", retryable=True, retry_after=retry_after)

    waits = [policy.delay(3, fault) for _ in range(2000)]  # backoff 4 s

    assert all(2.0 <= wait <= 4.0 for wait in waits)
    assert min(waits) < 2.2
    assert max(waits) > 3.8


def test_a_backoff_above_the_retry_after_cap_is_not_cut_by_the_cap() -> None:
    policy = RetryPolicy(base_delay_seconds=10.0, max_delay_seconds=40.0, retry_after_cap_seconds=1)
    fault = ModelFault("model_rate_limited", retryable=True, retry_after=3600.0)

    waits = [policy.delay(3, fault) for _ in range(500)]  # backoff 40 s

    assert all(20.0 <= wait <= 40.0 for wait in waits)


# --- describe_failure -------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "code", "retryable"), MODEL_FAULTS)
def test_a_run_reports_a_model_fault_with_its_code_and_never_the_providers_text(
    make: ExceptionFactory, code: str, retryable: bool
) -> None:
    exc = make()
    fault = classify_fault(exc)
    assert fault is not None

    failure = describe_failure(exc)

    assert (failure.code, failure.retryable) == (fault.code, fault.retryable) == (code, retryable)
    assert failure.message
    assert SECRET not in failure.message
    assert "sk-live-leak" not in failure.message
    assert str(exc) not in failure.message


@pytest.mark.parametrize("make", NOT_MODEL_FAULTS[:3])
def test_a_run_reports_any_other_failure_as_internal_without_its_text(
    make: ExceptionFactory,
) -> None:
    failure = describe_failure(make())

    assert (failure.code, failure.retryable) == ("internal_error", False)
    assert SECRET not in failure.message


@pytest.mark.parametrize(
    ("error", "code", "retryable"),
    [
        (
            ConflictError("The note is at version 2, not 1.", code="version_conflict"),
            "version_conflict",
            True,
        ),
        (NotFoundError.of("note", "n-1"), "note_not_found", False),
        (InvalidRequestError("Not a note edit.", code="invalid_edit"), "invalid_edit", False),
    ],
)
def test_a_run_reports_one_of_consentrys_own_errors_as_itself_not_as_a_model_fault(
    error: ConsentryError, code: str, retryable: bool
) -> None:
    """Its HTTP status (409 for a note's version that moved on) says nothing of a model: a run
    that met one was reported ``model_unavailable`` (found by a chaos freeze trial)."""
    failure = describe_failure(error)

    assert (failure.code, failure.message, failure.retryable) == (code, error.message, retryable)
