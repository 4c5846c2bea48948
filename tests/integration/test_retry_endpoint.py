"""``POST /v1/threads/{thread_id}/retry``: a thread whose last run failed (the model provider gave
up) continues from its last good checkpoint, streamed like ``POST /v1/chat`` with trigger
``retry``: only the step that failed and what follows run, nothing is sent twice. Refused with 409
``nothing_to_retry``, 409 ``run_in_progress`` or 404 ``thread_not_found``; ``Idempotency-Key``
replays the first retry.

The app talks to the scripted OpenAI-compatible stub without client-side retries (one model call
is one request); the consent case uses the offline model. A tutor answer is two model calls:
classify (JSON, not streamed), then the answer (streamed as ``token`` events).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest_asyncio

from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    RunStartedEvent,
    StepEvent,
    TokenEvent,
    TokenUsage,
)
from tests.openai_stub import OpenAIStub, words
from tests.sse import ask_for_note_edit, assert_numbered, chat, kinds, parse_events

T = TypeVar("T")

WAIT_SECONDS = 10.0
QUESTION = "What is retrieval?"
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}
API_KEYS = "ka=acme:alice,kb=acme:bob"

ANSWER_FAILED = ["run_started", "step", "step", "error", "final"]
CLASSIFY_FAILED = ["run_started", "step", "error", "final"]
RETRIED_ANSWER = [
    "run_started",
    "step",
    *["token"] * len(words(ANSWER)),
    "message",
    "final",
]
RETRY_FAILED_AGAIN = ["run_started", "step", "error", "final"]
_RUN_ACTIONS = {"run_started": "trigger", "run_ended": "reason", "error": "code"}
"""The audit actions of a run, with the ``data`` field each is compared by."""


@pytest_asyncio.fixture
async def client(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on the stub, one request per model call."""
    async with open_client(**stub.app_settings()) as app_client:
        yield app_client


@pytest_asyncio.fixture
async def offline_client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    """The app on the offline model."""
    async with open_client() as app_client:
        yield app_client


async def _within(awaitable: Coroutine[Any, Any, T] | asyncio.Task[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT_SECONDS)


def _nodes(events: list[Event]) -> list[str]:
    return [e.node for e in events if isinstance(e, StepEvent)]


def _final(events: list[Event]) -> FinalEvent:
    final = events[-1]
    assert isinstance(final, FinalEvent), events
    return final


def _started(events: list[Event]) -> RunStartedEvent:
    started = events[0]
    assert isinstance(started, RunStartedEvent), events
    return started


def _error_code(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


async def _fail_the_answer(
    client: httpx.AsyncClient, stub: OpenAIStub, headers: dict[str, str] | None = None
) -> list[Event]:
    """A new thread whose run classified the question, then failed on the answer call."""
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)
    events = await chat(client, {"message": QUESTION}, headers)
    assert kinds(events, tokens=True) == ANSWER_FAILED
    assert _nodes(events) == ["analyze_message", "answer_question"]
    error = events[-2]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.retryable) == ("model_unavailable", True)
    assert _final(events).reason == "failed"
    return events


async def _retry(
    client: httpx.AsyncClient, thread_id: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    return await client.post(f"/v1/threads/{thread_id}/retry", headers=headers)


async def _retry_events(
    client: httpx.AsyncClient, thread_id: str, headers: dict[str, str] | None = None
) -> list[Event]:
    response = await _retry(client, thread_id, headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_events(response.text)
    assert {(e.thread_id, e.run_id) for e in events} == {(thread_id, response.headers["X-Run-Id"])}
    return events


def _assert_seqs_follow(events: list[Event], previous: list[Event]) -> None:
    assert_numbered(events, first=previous[-1].seq + 1)


async def _thread(
    client: httpx.AsyncClient, thread_id: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    response = await client.get(f"/v1/threads/{thread_id}", headers=headers)
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()
    return detail


async def _transcript(
    client: httpx.AsyncClient, thread_id: str, headers: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    response = await client.get(f"/v1/threads/{thread_id}/messages", headers=headers)
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"]) for m in response.json()["messages"]]


async def _run_records(
    client: httpx.AsyncClient, thread_id: str, headers: dict[str, str] | None = None
) -> list[tuple[str, str, str | None]]:
    """The audit's run records: (action, trigger or reason or error code, run id)."""
    response = await client.get(f"/v1/threads/{thread_id}/audit", headers=headers)
    assert response.status_code == 200, response.text
    records = [r for r in response.json()["records"] if r["action"] in _RUN_ACTIONS]
    return [(r["action"], r["data"][_RUN_ACTIONS[r["action"]]], r["run_id"]) for r in records]


def _failed_run_records(run_id: str) -> list[tuple[str, str, str | None]]:
    return [
        ("run_started", "message", run_id),
        ("error", "model_unavailable", run_id),
        ("run_ended", "failed", run_id),
    ]


async def test_a_retry_after_a_failed_answer_runs_only_the_answer_step_and_completes_the_thread(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    failed = await _fail_the_answer(client, stub)
    thread_id = failed[0].thread_id
    stub.reply(ANSWER)

    events = await _retry_events(client, thread_id)

    assert kinds(events, tokens=True) == RETRIED_ANSWER
    started = _started(events)
    assert (started.trigger, started.graph) == ("retry", "tutor")
    assert started.run_id != failed[0].run_id
    assert _nodes(events) == ["answer_question"]  # analyze_message is not run again
    _assert_seqs_follow(events, failed)
    message = events[-2]
    assert isinstance(message, MessageEvent)
    assert message.content == ANSWER
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert [t.delta for t in tokens] == words(ANSWER)
    assert {t.message_id for t in tokens} == {message.message_id}
    final = _final(events)
    assert final.reason == "completed"
    assert final.usage == TokenUsage(input_tokens=10, output_tokens=len(words(ANSWER)))
    stub.assert_calls(3)  # classify + failed answer, then only the answer again
    answer_request = stub.requests[2]
    assert answer_request["stream"] is True
    assert [m["role"] for m in answer_request["messages"]] == ["system", "user"]
    assert answer_request["messages"][-1] == {"role": "user", "content": QUESTION}
    assert await _transcript(client, thread_id) == [("user", QUESTION), ("assistant", ANSWER)]
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "completed",
        [],
    )
    assert await _run_records(client, thread_id) == [
        *_failed_run_records(failed[0].run_id),
        ("run_started", "retry", started.run_id),
        ("run_ended", "completed", started.run_id),
    ]


async def test_a_retry_after_a_failed_classify_call_runs_the_analysis_and_the_answer(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.fail(500)
    failed = await chat(client, {"message": QUESTION})
    assert kinds(failed, tokens=True) == CLASSIFY_FAILED
    assert _nodes(failed) == ["analyze_message"]
    assert _final(failed).reason == "failed"
    stub.assert_calls(1)
    thread_id = failed[0].thread_id
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    events = await _retry_events(client, thread_id)

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert _started(events).trigger == "retry"
    assert _nodes(events) == ["analyze_message", "answer_question"]
    _assert_seqs_follow(events, failed)
    assert _final(events).reason == "completed"
    stub.assert_calls(3)  # the failed classify, then classify + answer
    for request in stub.requests[1:]:
        assert request["messages"][-1] == {"role": "user", "content": QUESTION}
    assert await _transcript(client, thread_id) == [("user", QUESTION), ("assistant", ANSWER)]
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


async def test_a_retry_that_fails_again_ends_failed_and_a_later_retry_succeeds(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    failed = await _fail_the_answer(client, stub)
    thread_id = failed[0].thread_id
    stub.fail(500)

    again = await _retry_events(client, thread_id)

    assert kinds(again, tokens=True) == RETRY_FAILED_AGAIN
    assert _started(again).trigger == "retry"
    assert _nodes(again) == ["answer_question"]
    error = again[-2]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.retryable) == ("model_unavailable", True)
    assert _final(again).reason == "failed"
    _assert_seqs_follow(again, failed)
    stub.assert_calls(3)
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")
    assert await _transcript(client, thread_id) == [("user", QUESTION)]
    stub.reply(ANSWER)

    later = await _retry_events(client, thread_id)

    assert kinds(later, tokens=True) == RETRIED_ANSWER
    assert _started(later).trigger == "retry"
    assert _nodes(later) == ["answer_question"]
    assert _final(later).reason == "completed"
    _assert_seqs_follow(later, again)
    stub.assert_calls(4)
    assert stub.requests[3]["messages"][-1] == {"role": "user", "content": QUESTION}
    assert await _transcript(client, thread_id) == [("user", QUESTION), ("assistant", ANSWER)]
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
    assert await _run_records(client, thread_id) == [
        *_failed_run_records(failed[0].run_id),
        ("run_started", "retry", again[0].run_id),
        ("error", "model_unavailable", again[0].run_id),
        ("run_ended", "failed", again[0].run_id),
        ("run_started", "retry", later[0].run_id),
        ("run_ended", "completed", later[0].run_id),
    ]


async def test_a_thread_whose_last_run_completed_has_nothing_to_retry(
    offline_client: httpx.AsyncClient,
) -> None:
    events = await chat(offline_client, {"message": "What is RAG?"})
    assert _final(events).reason == "completed"
    thread_id = events[0].thread_id
    records = await _run_records(offline_client, thread_id)

    response = await _retry(offline_client, thread_id)

    assert _error_code(response) == (409, "nothing_to_retry")
    assert response.json()["error"]["details"] == {
        "thread_id": thread_id,
        "last_reason": "completed",
    }
    assert await _run_records(offline_client, thread_id) == records  # no run was started
    thread = await _thread(offline_client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


async def test_a_thread_waiting_for_a_consent_has_nothing_to_retry_and_the_consent_still_works(
    offline_client: httpx.AsyncClient,
) -> None:
    note, asked = await ask_for_note_edit(offline_client)
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    assert _final(asked).reason == "interrupted"
    thread_id = consent.thread_id
    records = await _run_records(offline_client, thread_id)

    response = await _retry(offline_client, thread_id)

    assert _error_code(response) == (409, "nothing_to_retry")
    assert response.json()["error"]["details"] == {
        "thread_id": thread_id,
        "last_reason": "interrupted",
    }
    assert await _run_records(offline_client, thread_id) == records
    thread = await _thread(offline_client, thread_id)
    assert thread["status"] == "awaiting_consent"
    assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
    decided = await chat(
        offline_client,
        {
            "thread_id": thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    assert _started(decided).trigger == "resume"
    assert kinds(decided) == ["run_started", "step", "step", "note", "message", "final"]
    assert _final(decided).reason == "completed"
    _assert_seqs_follow(decided, asked)
    updated = (await offline_client.get(f"/v1/notes/{note['note_id']}")).json()
    assert updated["version"] == note["version"] + 1


async def test_a_retry_of_an_unknown_or_another_users_thread_is_thread_not_found(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    async with open_client(api_keys=API_KEYS, **stub.app_settings()) as client:
        failed = await _fail_the_answer(client, stub, ALICE)
        thread_id = failed[0].thread_id
        unknown_id = "00000000-0000-4000-8000-000000000000"

        theirs = await _retry(client, thread_id, BOB)
        unknown = await _retry(client, unknown_id, ALICE)

        assert _error_code(theirs) == _error_code(unknown) == (404, "thread_not_found")
        assert json.loads(theirs.text.replace(thread_id, "<id>")) == json.loads(
            unknown.text.replace(unknown_id, "<id>")
        )
        stub.assert_calls(2)  # Bob's attempt reached no model
        thread = await _thread(client, thread_id, ALICE)
        assert (thread["status"], thread["last_reason"]) == ("idle", "failed")
        assert await _run_records(client, thread_id, ALICE) == _failed_run_records(failed[0].run_id)
        stub.reply(ANSWER)

        events = await _retry_events(client, thread_id, ALICE)

        assert kinds(events, tokens=True) == RETRIED_ANSWER
        assert _started(events).trigger == "retry"
        assert _final(events).reason == "completed"
        _assert_seqs_follow(events, failed)
        stub.assert_calls(3)
        assert await _transcript(client, thread_id, ALICE) == [
            ("user", QUESTION),
            ("assistant", ANSWER),
        ]


async def test_a_retry_while_the_thread_runs_is_run_in_progress(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    failed = await _fail_the_answer(client, stub)
    thread_id = failed[0].thread_id
    stub.hold(ANSWER)
    first = asyncio.create_task(_retry(client, thread_id))
    await _within(stub.holding.wait())
    assert (await _thread(client, thread_id))["status"] == "running"

    busy = await _retry(client, thread_id)

    assert _error_code(busy) == (409, "run_in_progress")
    assert busy.json()["error"]["details"] == {"thread_id": thread_id}
    stub.assert_calls(3)  # the held answer only: the refused retry asked nothing
    stub.release()
    response = await _within(first)
    assert response.status_code == 200, response.text
    events = parse_events(response.text)
    assert kinds(events, tokens=True) == RETRIED_ANSWER
    assert _started(events).trigger == "retry"
    assert _final(events).reason == "completed"
    _assert_seqs_follow(events, failed)
    stub.assert_calls(3)
    assert await _transcript(client, thread_id) == [("user", QUESTION), ("assistant", ANSWER)]
    assert [r for r in await _run_records(client, thread_id) if r[0] == "run_started"] == [
        ("run_started", "message", failed[0].run_id),
        ("run_started", "retry", events[0].run_id),
    ]
    assert _error_code(await _retry(client, thread_id)) == (409, "nothing_to_retry")


async def test_the_same_idempotency_key_replays_the_first_retry_without_asking_the_model(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    failed = await _fail_the_answer(client, stub)
    thread_id = failed[0].thread_id
    stub.reply(ANSWER)
    key = {"Idempotency-Key": "retry-1"}

    first = await _retry(client, thread_id, key)
    again = await _retry(client, thread_id, key)

    assert (first.status_code, again.status_code) == (200, 200), (first.text, again.text)
    original = parse_events(first.text)
    replayed = parse_events(again.text)
    assert kinds(original, tokens=True) == RETRIED_ANSWER
    assert _started(original).trigger == "retry"
    assert kinds(replayed, tokens=True) == kinds(original)  # token events are not stored
    assert [e.model_dump() for e in replayed] == [
        e.model_dump() for e in original if e.type != "token"
    ]
    assert again.headers["X-Run-Id"] == first.headers["X-Run-Id"] == original[0].run_id
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    stub.assert_calls(3)  # the replay made no model request
    assert [r for r in await _run_records(client, thread_id) if r[0] == "run_started"] == [
        ("run_started", "message", failed[0].run_id),
        ("run_started", "retry", original[0].run_id),
    ]
    assert await _transcript(client, thread_id) == [("user", QUESTION), ("assistant", ANSWER)]


async def test_a_refused_retry_is_not_stored_under_its_idempotency_key(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)
    completed = await chat(client, {"message": QUESTION})
    thread_id = completed[0].thread_id
    key = {"Idempotency-Key": "retry-2"}
    assert _error_code(await _retry(client, thread_id, key)) == (409, "nothing_to_retry")
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.fail(500)
    failed = await chat(client, {"thread_id": thread_id, "message": "And generation?"})
    assert kinds(failed, tokens=True) == ANSWER_FAILED
    stub.reply("Generation writes the answer.")

    events = await _retry_events(client, thread_id, key)

    assert kinds(events) == ["run_started", "step", "message", "final"]
    assert _started(events).trigger == "retry"
    assert _nodes(events) == ["answer_question"]
    assert _final(events).reason == "completed"
    _assert_seqs_follow(events, failed)
    stub.assert_calls(5)
    assert await _transcript(client, thread_id) == [
        ("user", QUESTION),
        ("assistant", ANSWER),
        ("user", "And generation?"),
        ("assistant", "Generation writes the answer."),
    ]


async def test_a_new_message_after_a_failed_run_runs_without_retrying_the_failed_answer(
    client: httpx.AsyncClient, stub: OpenAIStub
) -> None:
    failed = await _fail_the_answer(client, stub)
    thread_id = failed[0].thread_id
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    events = await chat(client, {"thread_id": thread_id, "message": "Retrieval, please?"})

    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "step",
        *["token"] * len(words(ANSWER)),
        "message",
        "final",
    ]
    assert _started(events).trigger == "message"
    assert _nodes(events) == ["analyze_message", "answer_question"]  # each once
    assert _final(events).reason == "completed"
    _assert_seqs_follow(events, failed)
    stub.assert_calls(4)  # classify + answer of the new message, nothing before them
    assert stub.requests[2]["messages"][-1] == {"role": "user", "content": "Retrieval, please?"}
    answer_request = stub.requests[3]
    assert [(m["role"], m["content"]) for m in answer_request["messages"][1:]] == [
        ("user", QUESTION),
        ("user", "Retrieval, please?"),
    ]
    assert await _transcript(client, thread_id) == [
        ("user", QUESTION),
        ("user", "Retrieval, please?"),
        ("assistant", ANSWER),
    ]
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
    assert _error_code(await _retry(client, thread_id)) == (409, "nothing_to_retry")
    stub.assert_calls(4)
