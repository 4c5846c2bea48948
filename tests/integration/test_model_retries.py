"""The retry layer of model calls (``graphs/consentry_graphs/models/retrying.py``), seen from a
client: a real ``ChatOpenAI`` talks to a scripted OpenAI-compatible server, and every test checks
the whole event sequence and the exact number of requests the server received, so the attempt cap
shows.

A tutor turn whose intent is "answer" makes two model calls: ``classify`` (JSON, never streamed
to the client), then the answer (streamed as ``token`` events). Each call is tried at most
``llm_max_attempts`` times (3 by default); every retry is announced by a ``model_retry`` event.
Backoff waits are kept tiny (``llm_retry_base_seconds=0.01``) except where a test is about waiting.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa

from consentry.schemas.events import (
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    ModelRetryEvent,
    TokenEvent,
)
from consentry.services import Services
from consentry.storage.tables import runs
from tests.openai_stub import OpenAIStub, assert_nothing_leaked, words
from tests.sse import chat, chat_raw, kinds

CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
SECOND_ANSWER = "Then it ranks them."
QUESTION = "What is retrieval?"
SEARCH_REQUEST = "search my notes for kana"
NO_KANA_NOTES = "I found no notes matching \u201ckana\u201d in this project."

START = ["run_started", "step", "step"]  # analyze_message, then answer_question
ANSWERED = [*START, *["token"] * len(words(ANSWER)), "message", "final"]
FAILED = [*START, "error", "final"]

OpenApp = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def open_app(open_client: Callable[..., Any], stub: OpenAIStub) -> OpenApp:
    """``async with open_app(**settings) as client``: the app with ``ChatOpenAI`` pointed at the
    stub, the default 3 attempts per call, and backoff waits of a few milliseconds."""

    def _open(**overrides: Any) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        retries = {"llm_max_attempts": 3, "llm_retry_base_seconds": 0.01}
        settings = stub.app_settings(**{**retries, "llm_retry_max_seconds": 0.05, **overrides})
        opened: AbstractAsyncContextManager[httpx.AsyncClient] = open_client(**settings)
        return opened

    return _open


@pytest_asyncio.fixture
async def client(open_app: OpenApp) -> AsyncIterator[httpx.AsyncClient]:
    async with open_app() as app_client:
        yield app_client


def _retries(events: list[Event]) -> list[ModelRetryEvent]:
    return [e for e in events if isinstance(e, ModelRetryEvent)]


def _tokens(events: list[Event]) -> list[TokenEvent]:
    return [e for e in events if isinstance(e, TokenEvent)]


def _steps(events: list[Event]) -> list[str]:
    return [e.node for e in events if e.type == "step"]


def _message(events: list[Event]) -> MessageEvent:
    (message,) = [e for e in events if isinstance(e, MessageEvent)]
    return message


def _error(events: list[Event]) -> ErrorEvent:
    error = events[-2]
    assert isinstance(error, ErrorEvent)
    return error


def _final(events: list[Event]) -> FinalEvent:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


async def _transcript(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str, str]]:
    response = await client.get(f"/v1/threads/{thread_id}/messages")
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"]) for m in response.json()["messages"]]


async def _thread(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/threads/{thread_id}")
    assert response.status_code == 200, response.text
    thread: dict[str, Any] = response.json()
    return thread


# --- transient faults are retried, up to the cap --------------------------------------------


async def test_a_500_then_a_503_are_retried_with_growing_backoff_and_the_answer_completes(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)
    stub.fail(503)
    stub.reply(ANSWER)

    body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [
        *START,
        "model_retry",
        "model_retry",
        *["token"] * len(words(ANSWER)),
        "message",
        "final",
    ]
    assert _steps(events) == ["analyze_message", "answer_question"]
    retries = _retries(events)
    assert [(r.code, r.attempt, r.max_attempts, r.discard_message_id) for r in retries] == [
        ("model_unavailable", 1, 3, None),
        ("model_unavailable", 2, 3, None),
    ]
    # Equal jitter: half the backoff fixed, half random; the backoff doubles (0.01 s, 0.02 s).
    assert 0.005 <= retries[0].retry_in_seconds <= 0.01
    assert 0.01 <= retries[1].retry_in_seconds <= 0.02
    message = _message(events)
    assert [t.delta for t in _tokens(events)] == words(ANSWER)
    assert {t.message_id for t in _tokens(events)} == {message.message_id}
    assert message.content == ANSWER
    assert _final(events).reason == "completed"
    assert_nothing_leaked(body)
    stub.assert_calls(4)  # classify + 3 answer attempts
    assert stub.requests[1] == stub.requests[2] == stub.requests[3]  # the same request, resent
    assert await _transcript(client, events[0].thread_id) == [
        ("user", QUESTION),
        ("assistant", ANSWER),
    ]


async def test_a_model_failing_every_attempt_gives_up_after_three_attempts_with_an_error(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    for _ in range(3):
        stub.fail(500)

    body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [*START, "model_retry", "model_retry", "error", "final"]
    assert [(r.code, r.attempt, r.max_attempts) for r in _retries(events)] == [
        ("model_unavailable", 1, 3),
        ("model_unavailable", 2, 3),
    ]
    error, final = _error(events), _final(events)
    assert (error.code, error.retryable, final.reason) == ("model_unavailable", True, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(4)  # classify + 3 answer attempts, no 4th
    thread_id = events[0].thread_id
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")
    assert await _transcript(client, thread_id) == [("user", QUESTION)]


async def test_one_max_attempt_means_a_single_try_and_no_model_retry(
    open_app: OpenApp, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)

    async with open_app(llm_max_attempts=1) as client:
        body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == FAILED
    error, final = _error(events), _final(events)
    assert (error.code, error.retryable, final.reason) == ("model_unavailable", True, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(2)


async def test_a_failing_classify_call_is_retried_too_and_discards_no_message(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.fail(502)
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    events = await chat(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "model_retry",
        "step",
        *["token"] * len(words(ANSWER)),
        "message",
        "final",
    ]
    (retry,) = _retries(events)
    assert (retry.code, retry.attempt, retry.discard_message_id) == ("model_unavailable", 1, None)
    assert _message(events).content == ANSWER
    stub.assert_calls(3)
    assert stub.requests[0] == stub.requests[1]


# --- Retry-After -----------------------------------------------------------------------------


async def test_a_429_with_retry_after_waits_that_long_before_the_next_attempt(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(429, retry_after="1")
    stub.reply(ANSWER)

    events = await chat(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [*START, "model_retry", *ANSWERED[len(START) :]]
    (retry,) = _retries(events)
    assert (retry.code, retry.attempt, retry.max_attempts) == ("model_rate_limited", 1, 3)
    assert retry.retry_in_seconds == 1.0  # the provider's wait beats a 0.01 s backoff
    stub.assert_calls(3)
    assert stub.arrivals[2] - stub.arrivals[1] >= 1.0
    assert _final(events).reason == "completed"


async def test_a_huge_retry_after_is_capped(open_app: OpenApp, stub: OpenAIStub) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(429, retry_after="3600")
    stub.reply(ANSWER)

    async with open_app(llm_retry_after_cap_seconds=0.2) as client:
        started = time.monotonic()
        events = await chat(client, {"message": QUESTION})
        elapsed = time.monotonic() - started

    assert kinds(events, tokens=True) == [*START, "model_retry", *ANSWERED[len(START) :]]
    (retry,) = _retries(events)
    # max(backoff of at most 0.01 s, min(3600 s, the 0.2 s cap))
    assert (retry.code, retry.retry_in_seconds) == ("model_rate_limited", 0.2)
    stub.assert_calls(3)
    assert stub.arrivals[2] - stub.arrivals[1] >= 0.2
    assert elapsed < 5.0
    assert _final(events).reason == "completed"


# --- faults another attempt cannot fix are not retried --------------------------------------


@pytest.mark.parametrize(
    ("status", "provider_code", "code"),
    [
        pytest.param(400, None, "model_rejected", id="400-is-model_rejected"),
        pytest.param(404, None, "model_rejected", id="404-is-model_rejected"),
        pytest.param(401, None, "model_auth_failed", id="401-is-model_auth_failed"),
        pytest.param(403, None, "model_auth_failed", id="403-is-model_auth_failed"),
        pytest.param(
            429, "insufficient_quota", "model_quota_exhausted", id="429-quota-is-exhausted"
        ),
    ],
)
async def test_a_fault_that_another_attempt_cannot_fix_fails_at_once_without_retrying(
    client: httpx.AsyncClient,
    stub: OpenAIStub,
    status: int,
    provider_code: str | None,
    code: str,
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(status, code=provider_code)

    body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == FAILED
    error, final = _error(events), _final(events)
    assert (error.code, error.retryable, final.reason) == (code, False, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(2)  # one answer request only
    thread = await _thread(client, events[0].thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")


# --- a provider that hangs ------------------------------------------------------------------

# The per-call timeout the hang tests set. It also bounds the replies that must NOT time out, and
# under CI load (the stub shares the test's event loop, and two cores with a browser) a plain reply
# once took longer than 0.5 s; 2 s leaves a wide margin and costs each hang 2 s of waiting.
HANG_TIMEOUT = 2.0


async def test_a_hung_request_times_out_and_is_retried(open_app: OpenApp, stub: OpenAIStub) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hang()
    stub.reply(ANSWER)

    async with open_app(llm_timeout_seconds=HANG_TIMEOUT) as client:
        events = await chat(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [*START, "model_retry", *ANSWERED[len(START) :]]
    (retry,) = _retries(events)
    assert (retry.code, retry.attempt, retry.discard_message_id) == ("model_unavailable", 1, None)
    assert _message(events).content == ANSWER
    stub.assert_calls(3)
    assert stub.arrivals[2] - stub.arrivals[1] >= HANG_TIMEOUT  # the client waited out its timeout


async def test_a_model_hanging_on_every_attempt_fails_after_three_timeouts(
    open_app: OpenApp, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    for _ in range(3):
        stub.hang()

    async with open_app(llm_timeout_seconds=HANG_TIMEOUT) as client:
        body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [*START, "model_retry", "model_retry", "error", "final"]
    assert [(r.code, r.attempt) for r in _retries(events)] == [
        ("model_unavailable", 1),
        ("model_unavailable", 2),
    ]
    error, final = _error(events), _final(events)
    assert (error.code, error.retryable, final.reason) == ("model_unavailable", True, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(4)


# --- a stream cut mid-answer ----------------------------------------------------------------


async def test_a_stream_cut_mid_answer_is_discarded_and_streamed_again_under_the_same_id(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.cut(ANSWER, words_sent=2)
    stub.reply(ANSWER)

    events = await chat(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [
        *START,
        "token",
        "token",
        "model_retry",
        *ANSWERED[len(START) :],
    ]
    retry_at = kinds(events, tokens=True).index("model_retry")
    partial, full = _tokens(events[:retry_at]), _tokens(events[retry_at:])
    assert [t.delta for t in partial] == words(ANSWER)[:2]
    assert [t.delta for t in full] == words(ANSWER)
    (retry,) = _retries(events)
    message = _message(events)
    assert (retry.code, retry.attempt) == ("model_unavailable", 1)
    assert retry.discard_message_id == message.message_id
    assert {t.message_id for t in partial + full} == {message.message_id}
    assert message.content == ANSWER
    assert _final(events).reason == "completed"
    stub.assert_calls(3)
    assert await _transcript(client, events[0].thread_id) == [
        ("user", QUESTION),
        ("assistant", ANSWER),
    ]


async def test_a_stream_cut_on_every_attempt_fails_and_stores_no_half_answer(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    for _ in range(3):
        stub.cut(ANSWER, words_sent=2)

    body, events = await chat_raw(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == [
        *START,
        *["token", "token", "model_retry"] * 2,
        "token",
        "token",
        "error",
        "final",
    ]
    message_ids = {t.message_id for t in _tokens(events)}
    assert len(message_ids) == 1
    assert [r.discard_message_id for r in _retries(events)] == [*message_ids] * 2
    error, final = _error(events), _final(events)
    assert (error.code, error.retryable, final.reason) == ("model_unavailable", True, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(4)
    assert await _transcript(client, events[0].thread_id) == [("user", QUESTION)]


# --- JSON mode and the validated intent -----------------------------------------------------


@pytest.mark.parametrize("json_mode", [True, False], ids=["json-mode-on", "json-mode-off"])
async def test_the_classify_call_asks_for_json_only_in_json_mode(
    open_app: OpenApp, stub: OpenAIStub, json_mode: bool
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    async with open_app(llm_json_mode=json_mode) as client:
        events = await chat(client, {"message": QUESTION})

    assert kinds(events, tokens=True) == ANSWERED
    stub.assert_calls(2)
    classify_request, answer_request = stub.requests
    expected = {"type": "json_object"} if json_mode else None
    assert classify_request.get("response_format") == expected
    assert "response_format" not in answer_request  # the answer is prose


@pytest.mark.parametrize(
    "intent_reply",
    [
        pytest.param("Sure, that's a search!", id="prose"),
        pytest.param('{"intent": "dance"}', id="unknown-intent"),
        pytest.param('{"intent": "search", "query": 7}', id="query-not-a-string"),
    ],
)
async def test_an_invalid_intent_falls_back_to_keyword_rules(
    client: httpx.AsyncClient, stub: OpenAIStub, intent_reply: str
) -> None:
    stub.reply(intent_reply)

    events = await chat(client, {"message": SEARCH_REQUEST})

    assert kinds(events, tokens=True) == ["run_started", "step", "step", "step", "message", "final"]
    assert _steps(events) == ["analyze_message", "search_notes", "report_search_results"]
    assert _message(events).content == NO_KANA_NOTES  # the keyword rules' query: "kana"
    assert _final(events).reason == "completed"
    stub.assert_calls(1)  # no second model call


async def test_a_valid_intent_routes_even_against_the_keyword_rules(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    """The counterpart of the fallback: a valid answer is followed (here, a code fence around
    it is tolerated), so the fallback above is the validation's doing."""
    stub.reply(f"```json\n{CLASSIFIED_AS_ANSWER}\n```")
    stub.reply(ANSWER)

    events = await chat(client, {"message": SEARCH_REQUEST})

    assert kinds(events, tokens=True) == ANSWERED
    assert _steps(events) == ["analyze_message", "answer_question"]
    stub.assert_calls(2)


# --- token usage ----------------------------------------------------------------------------


def _stub_usage(*replies: str) -> tuple[int, int]:
    """What the stub reports for successful calls: 10 prompt tokens each, a token per word."""
    return 10 * len(replies), sum(len(words(reply)) for reply in replies)


async def test_each_run_reports_the_providers_usage_of_its_successful_attempts(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)
    first = await chat(client, {"message": QUESTION})
    thread_id = first[0].thread_id
    # The second turn's answer fails twice first: a failed attempt (a 500, a cut stream after two
    # words) reports no usage, so it adds nothing.
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)
    stub.cut(SECOND_ANSWER, words_sent=2)
    stub.reply(SECOND_ANSWER)
    second = await chat(client, {"thread_id": thread_id, "message": "And then?"})

    assert kinds(first, tokens=True) == ANSWERED
    assert kinds(second) == [*START, "model_retry", "model_retry", "message", "final"]
    stub.assert_calls(6)
    first_usage = _stub_usage(CLASSIFIED_AS_ANSWER, ANSWER)
    second_usage = _stub_usage(CLASSIFIED_AS_ANSWER, SECOND_ANSWER)
    assert first_usage == (20, 10)
    assert second_usage == (20, 8)
    usages = [(f.usage.input_tokens, f.usage.output_tokens) for f in map(_final, (first, second))]
    assert usages == [first_usage, second_usage]
    assert (await _thread(client, thread_id))["tokens_used"] == sum(first_usage + second_usage)
    audit = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    ended = [r["data"] for r in audit if r["action"] == "run_ended"]
    assert ended == [
        {"reason": "completed", "input_tokens": 20, "output_tokens": 10},
        {"reason": "completed", "input_tokens": 20, "output_tokens": 8},
    ]
    services: Services = client.services  # type: ignore[attr-defined]
    async with services.db.read() as conn:
        stored = await conn.execute(
            sa.select(runs.c.id, runs.c.input_tokens, runs.c.output_tokens)
            .where(runs.c.thread_id == thread_id)
            .order_by(runs.c.started_at)
        )
        assert [tuple(row) for row in stored] == [
            (first[0].run_id, *first_usage),
            (second[0].run_id, *second_usage),
        ]


async def test_the_providers_usage_feeds_the_thread_token_budget(
    open_app: OpenApp, stub: OpenAIStub
) -> None:
    first_turn = sum(_stub_usage(CLASSIFIED_AS_ANSWER, ANSWER))  # 30 tokens
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)
    stub.reply(CLASSIFIED_AS_ANSWER)

    async with open_app(thread_token_budget=first_turn + 1) as client:
        first = await chat(client, {"message": QUESTION})
        thread_id = first[0].thread_id
        # 30 of 31 used: the next classify call is allowed; it brings the thread past the budget,
        # so the answer's call is refused before it is made.
        second = await chat(client, {"thread_id": thread_id, "message": "And then?"})
        thread = await _thread(client, thread_id)

    assert kinds(first, tokens=True) == ANSWERED
    assert _final(first).reason == "completed"
    assert kinds(second, tokens=True) == [*START, "final"]
    assert _steps(second) == ["analyze_message", "answer_question"]
    final = _final(second)
    assert final.reason == "budget_exhausted"
    assert (final.usage.input_tokens, final.usage.output_tokens) == _stub_usage(
        CLASSIFIED_AS_ANSWER
    )
    stub.assert_calls(3)
    assert thread["tokens_used"] == first_turn + sum(_stub_usage(CLASSIFIED_AS_ANSWER))
