"""The tutor on a real ``ChatOpenAI`` talking to a scripted OpenAI-compatible server: tokens stream
through, and a failing model ends the run with a typed ``error`` event, then ``final`` (failed),
without leaking the provider's text, and leaves the thread usable.

Each tutor turn makes two model calls: ``classify`` (a JSON intent, never streamed to the client),
then the answer (streamed as ``token`` events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio

from consentry.schemas.events import ErrorEvent, FinalEvent, MessageEvent, TokenEvent
from tests.openai_stub import OpenAIStub, assert_nothing_leaked, words
from tests.sse import chat, chat_raw, kinds

CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
FAILED_RUN = ["run_started", "step", "step", "error", "final"]


@pytest_asyncio.fixture
async def client(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with ``ChatOpenAI`` pointed at the stub, without client-side retries."""
    async with open_client(**stub.app_settings()) as app_client:
        yield app_client


async def test_a_healthy_model_streams_its_tokens_then_the_message(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    events = await chat(client, {"message": "What is retrieval?"})

    assert words(ANSWER) == ["Retrieval ", "finds ", "the ", "relevant ", "documents ", "first."]
    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "step",
        *["token"] * len(words(ANSWER)),
        "message",
        "final",
    ]
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    message = events[-2]
    assert isinstance(message, MessageEvent)
    assert [t.delta for t in tokens] == words(ANSWER)  # the classify call streams nothing
    assert {t.message_id for t in tokens} == {message.message_id}
    assert message.content == ANSWER
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert final.reason == "completed"
    stub.assert_calls(2)
    answer_request = stub.requests[1]
    assert (answer_request["model"], answer_request["stream"]) == ("stub", True)
    assert answer_request["messages"][-1] == {"role": "user", "content": "What is retrieval?"}


async def test_a_model_failing_mid_run_ends_with_an_error_then_final_and_the_thread_recovers(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)

    body, events = await chat_raw(client, {"message": "What is retrieval?"})

    assert kinds(events, tokens=True) == FAILED_RUN
    assert [e.node for e in events if e.type == "step"] == ["analyze_message", "answer_question"]
    error, final = events[-2:]
    assert isinstance(error, ErrorEvent)
    assert isinstance(final, FinalEvent)
    assert (error.code, error.retryable) == ("model_unavailable", True)
    assert final.reason == "failed"
    assert_nothing_leaked(body)
    stub.assert_calls(2)  # no retry behind the client's back
    thread_id = events[0].thread_id
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "failed",
        [],
    )

    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)
    retry = await chat(client, {"thread_id": thread_id, "message": "What is retrieval, again?"})

    assert kinds(retry) == ["run_started", "step", "step", "message", "final"]
    assert retry[0].seq == final.seq + 1
    assert retry[-1].reason == "completed"  # type: ignore[union-attr]
    transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
    assert [(m["role"], m["content"]) for m in transcript[-2:]] == [
        ("user", "What is retrieval, again?"),
        ("assistant", ANSWER),
    ]
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        pytest.param(500, "model_unavailable", True, id="500-is-model_unavailable"),
        pytest.param(429, "model_rate_limited", True, id="429-is-model_rate_limited"),
        pytest.param(400, "model_rejected", False, id="400-is-model_rejected"),
    ],
)
async def test_a_provider_status_becomes_a_stable_error_code(
    client: httpx.AsyncClient, stub: OpenAIStub, status: int, code: str, retryable: bool
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(status)

    body, events = await chat_raw(client, {"message": "What is retrieval?"})

    assert kinds(events, tokens=True) == FAILED_RUN
    error, final = events[-2:]
    assert isinstance(error, ErrorEvent)
    assert isinstance(final, FinalEvent)
    assert (error.code, error.retryable, final.reason) == (code, retryable, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(2)
    thread = (await client.get(f"/v1/threads/{events[0].thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")


async def test_a_failing_classify_call_fails_the_run_before_any_answer(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.fail(500)

    body, events = await chat_raw(client, {"message": "What is retrieval?"})

    assert kinds(events, tokens=True) == ["run_started", "step", "error", "final"]
    error = events[-2]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.retryable) == ("model_unavailable", True)
    assert_nothing_leaked(body)
    stub.assert_calls(1)


async def test_a_stream_cut_mid_answer_is_model_unavailable_after_the_tokens_already_sent(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.cut(ANSWER, words_sent=2)

    body, events = await chat_raw(client, {"message": "What is retrieval?"})

    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "step",
        "token",
        "token",
        "error",
        "final",
    ]
    assert [e.delta for e in events if isinstance(e, TokenEvent)] == words(ANSWER)[:2]
    error, final = events[-2:]
    assert isinstance(error, ErrorEvent)
    assert isinstance(final, FinalEvent)
    assert (error.code, error.retryable, final.reason) == ("model_unavailable", True, "failed")
    assert_nothing_leaked(body)
    stub.assert_calls(2)
    transcript = (await client.get(f"/v1/threads/{events[0].thread_id}/messages")).json()
    assert [m["role"] for m in transcript["messages"]] == ["user"]  # no half answer is kept
