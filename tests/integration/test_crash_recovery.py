"""A process that dies mid-run loses nothing the graph reached, and one ``Idempotency-Key`` stays
one request across the crash (``runtime.dead_runs``, ``runtime.continuation``).

A death is simulated in process, at the exact moment each test names: the executor's run task
stops there, storing nothing more and leaving its thread ``running`` under its lease, as a
SIGKILLed process would. Then a new app starts on the same database and takes the run over
(on PostgreSQL once the lease expired, as another replica would). The real SIGKILLs are in
``tests/system/test_kill_points.py`` and ``tests/system/test_replicas.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest

from consentry.runtime.runs import RunExecutor
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    RunStartedEvent,
)
from tests.integration import replayed_writes_graph
from tests.sse import assert_numbered, chat, kinds, parse_events

LEASE_SECONDS = 30


@contextmanager
def _dying(monkeypatch: pytest.MonkeyPatch, where: str) -> Iterator[None]:
    """Within the block, every run's process 'dies' at ``where``: ``before_the_graph`` (the
    run was claimed, its graph never started) or ``before_the_end`` (the graph ran to its end or
    its interrupt; the run's closing transaction never happened). Nothing more is stored."""

    async def before_the_graph(self: RunExecutor, run: Any, graph_inputs: Any) -> None:
        run.events.close(suspended=True)

    async def before_the_end(self: RunStore, run: Any, outcome: Any) -> None:
        await run.progress.settle()
        run.events.close(suspended=True)

    with monkeypatch.context() as patched:
        if where == "before_the_graph":
            patched.setattr(RunExecutor, "_execute", before_the_graph)
        else:
            patched.setattr(RunStore, "finish", before_the_end)
        yield


@asynccontextmanager
async def _after_the_crash(
    open_client: Callable[..., Any], clock: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A new app on the same database, started once the dead process's leases expired."""
    clock.advance(seconds=LEASE_SECONDS + 1)
    async with open_client() as client:
        yield client


async def _stream(client: httpx.AsyncClient, thread_id: str, after: int = 0) -> list[Event]:
    response = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": after})
    assert response.status_code == 200, response.text
    return parse_events(response.text)


async def _thread_id(client: httpx.AsyncClient) -> str:
    threads = (await client.get("/v1/threads")).json()["threads"]
    assert len(threads) == 1, threads
    return str(threads[0]["thread_id"])


async def _note(client: httpx.AsyncClient) -> dict[str, Any]:
    project = (await client.get("/v1/projects")).json()["projects"][0]
    response = await client.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "RAG", "content": "Retrieval-augmented generation."},
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


def _reason(event: Event) -> str:
    assert isinstance(event, FinalEvent)
    return event.reason


def _trigger(event: Event) -> str:
    assert isinstance(event, RunStartedEvent)
    return event.trigger


def _error_code(event: Event) -> str:
    assert isinstance(event, ErrorEvent)
    return event.code


async def _discussed(client: httpx.AsyncClient, note: dict[str, Any]) -> tuple[str, int]:
    """A thread about ``note`` that answered a question (a summary needs a discussion): its id
    and the seq of its last event."""
    answered = await chat(client, {"message": "What is RAG?", "note_id": note["note_id"]})
    assert _reason(answered[-1]) == "completed"
    return answered[0].thread_id, answered[-1].seq


def _ask(note: dict[str, Any], thread_id: str) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "message": "Add a summary of our discussion to my note",
        "note_id": note["note_id"],
    }


async def test_a_consent_the_graph_asked_before_the_process_died_is_pending_after_restart(
    open_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_client() as client:
        note = await _note(client)
        thread_id, discussed = await _discussed(client, note)
        with _dying(monkeypatch, "before_the_end"):
            response = await client.post("/v1/chat", json=_ask(note, thread_id))
        assert response.status_code == 200
        # Told what was stored with each step's checkpoint (the steps that ran), nothing of the
        # consent: the stream ends with a retry hint.
        told = parse_events(response.text)
        assert kinds(told) == ["run_started", "step", "step", "message"]
        run_id = response.headers["X-Run-Id"]
        assert await _thread_id(client) == thread_id

    async with _after_the_crash(open_client, clock) as client:
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("awaiting_consent", "interrupted")
        [consent] = [ConsentEvent.model_validate(c) for c in thread["pending_consents"]]
        assert consent.kind == "note_edit"
        inbox = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        assert [a["approval_id"] for a in inbox["approvals"]] == [consent.approval_id]

        # The run reads as it happened: it started and stepped, then its process died. The step
        # that asked stored nothing (its interrupt goes in the closing transaction, with the
        # consent), so the recovery runs that step again, which asks; numbered with no gap.
        history = await _stream(client, thread_id, after=discussed)
        assert history[: len(told)] == told
        dead, recovery = history[: len(told) + 2], history[len(told) + 2 :]
        assert kinds(dead[len(told) :]) == ["error", "final"]
        assert _error_code(dead[-2]) == "server_restarted"
        assert {e.run_id for e in dead} == {run_id}
        assert kinds(recovery) == ["run_started", "step", "consent", "final"]
        assert _trigger(recovery[0]) == "recovery"
        assert recovery[-2] == consent
        assert _reason(recovery[-1]) == "interrupted"
        assert_numbered(history, first=discussed + 1)
        audit = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
        assert [r["action"] for r in audit if r["approval_id"] == consent.approval_id] == [
            "consent_requested"
        ]

        decided = await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
        assert kinds(decided)[-3:] == ["note", "message", "final"]
        versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
        assert [v["approval_id"] for v in versions].count(consent.approval_id) == 1


async def test_a_message_whose_graph_never_started_is_run_by_the_recovery(
    open_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_client() as client:
        with _dying(monkeypatch, "before_the_graph"):
            response = await client.post("/v1/chat", json={"message": "What is RAG?"})
        assert response.status_code == 200  # acknowledged: it must not be dropped
        run_id = response.headers["X-Run-Id"]
        thread_id = await _thread_id(client)

    async with _after_the_crash(open_client, clock) as client:
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        history = await _stream(client, thread_id)

        assert kinds(history) == [
            *["run_started", "error", "final"],  # the dead run: how it started, how it ended
            *["run_started", "step", "step", "message", "final"],  # the recovery answers
        ]
        dead, recovery = history[:3], history[3:]
        assert _trigger(dead[0]) == "message"
        assert {e.run_id for e in dead} == {run_id}
        assert _error_code(dead[1]) == "server_restarted"
        assert _trigger(recovery[0]) == "recovery"
        assert _reason(recovery[-1]) == "completed"
        assert_numbered(history, first=1)
        messages = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
        assert [(m["role"], m["content"][:12]) for m in messages] == [
            ("user", "What is RAG?"),
            ("assistant", recovery[-2].content[:12]),  # type: ignore[union-attr]
        ]


async def test_a_decision_run_whose_graph_finished_is_recorded_as_it_ended(
    open_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_client() as client:
        note = await _note(client)
        asked = await chat(client, _ask(note, (await _discussed(client, note))[0]))
        consent = asked[-2]
        assert isinstance(consent, ConsentEvent)
        with _dying(monkeypatch, "before_the_end"):
            response = await client.post(
                "/v1/chat",
                json={
                    "thread_id": consent.thread_id,
                    "resume": {"approval_id": consent.approval_id, "decision": "approve"},
                },
            )
        decision_run = response.headers["X-Run-Id"]

    async with _after_the_crash(open_client, clock) as client:
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
        history = await _stream(client, consent.thread_id, after=asked[-1].seq)
        assert kinds(history) == ["run_started", "step", "step", "note", "message", "final"]
        assert {e.run_id for e in history} == {decision_run}  # no second run was needed
        assert _reason(history[-1]) == "completed"
        retry = await client.post(f"/v1/threads/{consent.thread_id}/retry")
        assert retry.json()["error"]["code"] == "nothing_to_retry"
        versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
        assert [v["approval_id"] for v in versions].count(consent.approval_id) == 1


async def test_a_keyed_message_retried_after_the_crash_replays_its_run(
    open_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Idempotency-Key": "ask-once"}
    async with open_client() as client:
        note = await _note(client)
        thread_id, _ = await _discussed(client, note)
        with _dying(monkeypatch, "before_the_end"):
            first = await client.post("/v1/chat", json=_ask(note, thread_id), headers=headers)
        run_id = first.headers["X-Run-Id"]

    async with _after_the_crash(open_client, clock) as client:
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        again = await client.post("/v1/chat", json=_ask(note, thread_id), headers=headers)

        assert again.status_code == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == run_id
        replayed = parse_events(again.text)
        assert kinds(replayed) == [
            *["run_started", "step", "step", "message", "error", "final"],  # the dead run
            *["run_started", "step", "consent", "final"],  # its recovery asks
        ]
        assert replayed[0].run_id == run_id
        assert _trigger(replayed[6]) == "recovery"
        assert await _thread_id(client) == thread_id  # the request did not run twice
        pending = (await client.get(f"/v1/threads/{thread_id}")).json()["pending_consents"]
        assert [c["approval_id"] for c in pending] == [replayed[-2].approval_id]  # type: ignore[union-attr]


async def test_a_keyed_decision_retried_after_the_crash_replays_it_and_its_recovery(
    open_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Idempotency-Key": "approve-once"}
    async with open_client() as client:
        note = await _note(client)
        asked = await chat(client, _ask(note, (await _discussed(client, note))[0]))
        consent = asked[-2]
        assert isinstance(consent, ConsentEvent)
        body = {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        }
        with _dying(monkeypatch, "before_the_graph"):
            first = await client.post("/v1/chat", json=body, headers=headers)
        run_id = first.headers["X-Run-Id"]

    async with _after_the_crash(open_client, clock) as client:
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        again = await client.post("/v1/chat", json=body, headers=headers)

        assert again.status_code == 200, again.text
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == run_id
        replayed = parse_events(again.text)
        assert kinds(replayed) == [
            *["run_started", "error", "final"],
            *["run_started", "step", "step", "note", "message", "final"],
        ]
        assert replayed[0].run_id == run_id
        assert _trigger(replayed[3]) == "recovery"
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "approved"
        versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
        assert [v["approval_id"] for v in versions].count(consent.approval_id) == 1


async def test_a_retry_does_not_tell_again_what_the_failed_run_told(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed run's step stored ``say_hello``'s writes (its message was told); the retry
    runs only ``look_up``, and LangGraph replays the stored writes: the message is not told (nor
    added to the transcript) a second time."""
    monkeypatch.setitem(replayed_writes_graph.FAILURES, "look_up", 1)
    graphs = {"replayed": "tests.integration.replayed_writes_graph:graph_spec"}
    async with open_client(graphs=graphs) as client:
        failed = await chat(client, {"graph": "replayed", "message": "Hi"})
        assert kinds(failed) == ["run_started", "step", "step", "message", "error", "final"]
        said = failed[3]
        assert isinstance(said, MessageEvent)

        response = await client.post(f"/v1/threads/{said.thread_id}/retry")
        retried = parse_events(response.text)

        assert "message" not in kinds(retried), retried
        assert _reason(retried[-1]) == "completed"
        history = await _stream(client, said.thread_id)
        assert [e.message_id for e in history if isinstance(e, MessageEvent)] == [said.message_id]
        messages = (await client.get(f"/v1/threads/{said.thread_id}/messages")).json()
        assert [m["message_id"] for m in messages["messages"]] == [
            messages["messages"][0]["message_id"],
            said.message_id,
        ]
