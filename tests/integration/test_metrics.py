"""``GET /metrics``: what an operator sees after real conversations, on SQLite and PostgreSQL.

Each test reads the exposition before and after what it does and asserts the exact change of
every series it is about (a fresh app starts at zero, but the start-up sweep and takeover may
count things, so deltas say exactly what the conversation added)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from consentry.schemas.events import ConsentEvent, FinalEvent
from tests.conftest import ManualClock
from tests.openai_stub import OpenAIStub
from tests.sse import ASK_FOR_SUMMARY, a_note_asked_about, after_a_question, chat, kinds

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
OFFLINE = "consentry-offline"


async def _samples(client: httpx.AsyncClient, **headers: str) -> Samples:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _delta(before: Samples, after: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Every labelled value of ``name`` that changed, by how much."""
    changed = {}
    for (sample, labels), value in after.items():
        if sample == name and value != before.get((sample, labels), 0.0):
            changed[labels] = value - before.get((sample, labels), 0.0)
    return changed


def _labels(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


async def test_a_conversation_through_a_consent_shows_in_every_series_it_touches(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    note, answered = await a_note_asked_about(client, content="R.")
    before = await _samples(client)  # from the summary's request on (a summary needs a question)

    events = await chat(
        client,
        {
            "thread_id": answered[0].thread_id,
            "message": ASK_FOR_SUMMARY,
            "note_id": note["note_id"],
        },
    )
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    clock.advance(minutes=20)  # the person reads the proposal for 20 minutes
    decided = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    assert isinstance(decided[-1], FinalEvent)
    assert decided[-1].reason == "completed"
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    after = await _samples(client)

    assert _delta(before, after, "consentry_runs_started_total") == {
        _labels(graph="tutor", trigger="message"): 1,
        _labels(graph="tutor", trigger="resume"): 1,
    }
    assert _delta(before, after, "consentry_runs_ended_total") == {
        _labels(graph="tutor", reason="interrupted"): 1,
        _labels(graph="tutor", reason="completed"): 1,
    }
    assert _delta(before, after, "consentry_run_duration_seconds_count") == {
        _labels(graph="tutor", reason="interrupted"): 1,
        _labels(graph="tutor", reason="completed"): 1,
    }
    assert _delta(before, after, "consentry_consents_requested_total") == {
        _labels(graph="tutor", kind="note_edit"): 1
    }
    assert _delta(before, after, "consentry_decisions_total") == {
        _labels(kind="note_edit", decision="approve", decider="person"): 1
    }
    # 20 minutes of waiting (plus the clock's microsecond ticks): above the 15-minute bucket,
    # within the 30-minute one.
    wait = _delta(before, after, "consentry_approval_wait_seconds_bucket")
    person = {"kind": "note_edit", "decider": "person"}
    assert _labels(**person, le="900.0") not in wait
    assert wait[_labels(**person, le="1800.0")] == 1
    waited = _delta(before, after, "consentry_approval_wait_seconds_sum")
    assert waited[_labels(**person)] == pytest.approx(1200, abs=1)
    assert _delta(before, after, "consentry_consents_expired_total") == {}

    steps = [e.node for e in [*events, *decided] if e.type == "step"]  # type: ignore[union-attr]
    timed = _delta(before, after, "consentry_node_duration_seconds_count")
    assert timed == {
        _labels(graph="tutor", node=node): float(steps.count(node)) for node in set(steps)
    }
    calls = _delta(before, after, "consentry_model_calls_total")
    assert calls == {
        _labels(model=OFFLINE, outcome="ok"): 2
    }  # classify the message, draft the edit
    assert _delta(before, after, "consentry_model_call_duration_seconds_count") == {
        _labels(model=OFFLINE): 2
    }
    tokens = _delta(before, after, "consentry_model_tokens_total")
    assert set(tokens) == {
        _labels(model=OFFLINE, kind="prompt"),
        _labels(model=OFFLINE, kind="completion"),
    }
    usage = [e.usage for e in [events[-1], decided[-1]] if isinstance(e, FinalEvent)]
    assert tokens[_labels(model=OFFLINE, kind="prompt")] == sum(u.input_tokens for u in usage)
    assert tokens[_labels(model=OFFLINE, kind="completion")] == sum(u.output_tokens for u in usage)
    assert after[("consentry_open_streams", frozenset())] == 0
    assert after[("consentry_active_runs", frozenset())] == 0
    assert note["version"] == 1


async def test_decisions_are_labelled_by_who_decided_and_expirations_are_counted_apart(
    open_client: Callable[..., Any], clock: ManualClock
) -> None:
    async with open_client(consent_ttl_seconds=600) as client:
        before = await _samples(client)
        # A policy decides one, a new message rejects a second, the clock expires a third.
        projects = (await client.get("/v1/projects")).json()["projects"]
        notes = [
            (
                await client.post(
                    f"/v1/projects/{projects[0]['project_id']}/notes",
                    json={"title": f"Note {i}", "content": "Retrieval first."},
                )
            ).json()
            for i in range(3)
        ]
        by_policy = await after_a_question(
            client,
            {
                "message": ASK_FOR_SUMMARY,
                "note_id": notes[0]["note_id"],
                "consent_policy": "auto_approve",
            },
        )
        assert isinstance(by_policy[-1], FinalEvent)
        assert by_policy[-1].reason == "completed"
        rejected = await after_a_question(
            client, {"message": ASK_FOR_SUMMARY, "note_id": notes[1]["note_id"]}
        )
        await chat(
            client,
            {
                "thread_id": rejected[0].thread_id,
                "message": "Never mind.",
                "on_pending_consent": "reject",
            },
        )
        expiring = await after_a_question(
            client, {"message": ASK_FOR_SUMMARY, "note_id": notes[2]["note_id"]}
        )
        assert kinds(expiring)[-2:] == ["consent", "final"]
        clock.advance(seconds=601)
        await client.services.expiry.sweep()  # type: ignore[attr-defined]  # (or its timer did)
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        after = await _samples(client)

    assert _delta(before, after, "consentry_decisions_total") == {
        _labels(kind="note_edit", decision="approve", decider="policy"): 1,
        _labels(kind="note_edit", decision="reject", decider="person"): 1,
    }
    assert _delta(before, after, "consentry_consents_expired_total") == {
        _labels(kind="note_edit"): 1
    }
    assert _delta(before, after, "consentry_consents_requested_total") == {
        _labels(graph="tutor", kind="note_edit"): 3
    }
    assert _delta(before, after, "consentry_approval_wait_seconds_count") == {
        _labels(kind="note_edit", decider="policy"): 1,
        _labels(kind="note_edit", decider="person"): 1,
    }
    ended = _delta(before, after, "consentry_runs_ended_total")
    assert ended == {
        # the three questions before the summaries, the policy's run, "Never mind."
        _labels(graph="tutor", reason="completed"): 5,
        _labels(graph="tutor", reason="interrupted"): 2,
        _labels(graph="tutor", reason="expired"): 1,
    }
    assert (
        _delta(before, after, "consentry_runs_started_total")[
            _labels(graph="tutor", trigger="expiry")
        ]
        == 1
    )


async def test_rejoins_resyncs_and_idempotent_replays_are_counted(
    client: httpx.AsyncClient,
) -> None:
    before = await _samples(client)
    first = await client.post(
        "/v1/chat", json={"message": "What is retrieval?"}, headers={"Idempotency-Key": "k-1"}
    )
    again = await client.post(
        "/v1/chat", json={"message": "What is retrieval?"}, headers={"Idempotency-Key": "k-1"}
    )
    assert first.status_code == again.status_code == 200
    thread_id = first.headers["X-Thread-Id"]
    rejoined = await client.get(f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "1"})
    assert rejoined.status_code == 200, rejoined.text
    after = await _samples(client)

    assert _delta(before, after, "consentry_event_replays_total") == {
        _labels(kind="idempotent"): 1,
        _labels(kind="join"): 1,
    }
    assert _delta(before, after, "consentry_runs_started_total") == {
        _labels(graph="tutor", trigger="message"): 1
    }


async def test_model_retries_and_failed_calls_are_counted_by_the_providers_model_name(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "retrieval"}')
    stub.fail(503)
    stub.fail(503)
    stub.fail(503)
    settings = stub.app_settings(llm_max_attempts=3, llm_retry_base_seconds=0.01)
    async with open_client(**settings, llm_retry_max_seconds=0.02) as client:
        before = await _samples(client)
        events = await chat(client, {"message": "What is retrieval?"})
        after = await _samples(client)

    assert kinds(events)[-2:] == ["error", "final"]
    model = settings["llm_model"]
    assert _delta(before, after, "consentry_model_retries_total") == {
        _labels(model=model, code="model_unavailable"): 2
    }
    assert _delta(before, after, "consentry_model_calls_total") == {
        _labels(model=model, outcome="ok"): 1,
        _labels(model=model, outcome="error"): 1,
    }
    assert _delta(before, after, "consentry_runs_ended_total") == {
        _labels(graph="tutor", reason="failed"): 1
    }


async def test_with_a_metrics_token_set_a_scrape_without_it_is_refused(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(metrics_token="scrape-me") as client:
        refused = await client.get("/metrics")
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        scraped = await _samples(client, Authorization="Bearer scrape-me")

    assert (refused.status_code, wrong.status_code) == (401, 401)
    assert refused.json()["error"]["code"] == "unauthorized"
    assert ("consentry_open_streams", frozenset()) in scraped


async def test_the_gauges_count_the_streams_and_runs_open_at_the_scrape(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("Held until the scrape is done.")
    async with open_client(**stub.app_settings()) as client:
        running = asyncio.create_task(client.post("/v1/chat", json={"message": "What is x?"}))
        await asyncio.wait_for(stub.holding.wait(), 10)
        during = await _samples(client)
        stub.release()
        assert (await running).status_code == 200
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        after = await _samples(client)

    gauges = ("consentry_open_streams", "consentry_active_runs")
    assert [during[(g, frozenset())] for g in gauges] == [1, 1]
    assert [after[(g, frozenset())] for g in gauges] == [0, 0]


async def test_refusals_by_a_limit_are_counted_by_code_whether_middleware_or_route_refused(
    open_client: Callable[..., Any],
) -> None:
    limits = {
        "max_body_bytes": 2048,
        "rate_limit_messages_per_minute": 1,
        "rate_limit_messages_burst": 1,
    }
    async with open_client(**limits) as client:
        before = await _samples(client)
        too_large = await client.post("/v1/chat", json={"message": "x" * 4096})
        too_many = await client.get("/v1/threads", params={"limit": 10_000})
        first = await client.post("/v1/chat", json={"message": "What is retrieval?"})
        second = await client.post("/v1/chat", json={"message": "What is retrieval?"})
        unknown = await client.get("/v1/threads/00000000-0000-4000-8000-000000000000")
        after = await _samples(client)

    statuses = [r.status_code for r in (too_large, too_many, first, second, unknown)]
    assert statuses == [413, 422, 200, 429, 404]
    assert _delta(before, after, "consentry_limit_refusals_total") == {
        _labels(code="body_too_large"): 1,
        _labels(code="limit_exceeded"): 1,
        _labels(code="rate_limited"): 1,
    }
