"""How a run starts, ends and fails, as a client sees it: one run per thread, failures that end
the stream with ``error`` + ``final`` and leave the thread usable, a decided consent whose run
stopped half-way, notes that moved on under a pending consent, and ``seq`` numbering across runs.

Runs that must stay mid-way use the scripted OpenAI-compatible stub (``hold`` + ``holding``);
the others use the offline model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa

import consentry.runtime.runs.execute._executor
import consentry.runtime.runs.start._launcher
import consentry.storage.runs._lifecycle
from consentry.app import create_app
from consentry.runtime.notes import OwnerNotesStore
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    NoteEvent,
    RunStartedEvent,
    StepEvent,
    TokenEvent,
)
from consentry.services import Services
from consentry.settings import Settings
from consentry.storage.tables import approvals, audit, runs, threads
from tests.conftest import ManualClock
from tests.lifespan import running
from tests.openai_stub import OpenAIStub
from tests.sse import TUTOR_ASKED, assert_numbered, chat, kinds, parse_events

WAIT_SECONDS = 10.0
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
ANSWERED = ["run_started", "step", "step", "message", "final"]
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
NOTE_CONTENT = "Retrieval-augmented generation uses documents."
ALREADY_DECIDED = "already_decided"  # docs/protocol.md, Errors


@dataclass(frozen=True)
class RunningApp:
    client: httpx.AsyncClient
    services: Services


AppOpener = Callable[..., Any]


@pytest.fixture
def open_app(db_url: str, clock: ManualClock) -> AppOpener:
    """``async with open_app(**settings) as app``: the client and the app's ``Services``."""

    @asynccontextmanager
    async def _open(**overrides: Any) -> AsyncIterator[RunningApp]:
        fastapi_app = create_app(Settings(database_url=db_url, **overrides), clock=clock)
        async with running(fastapi_app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield RunningApp(client, fastapi_app.state.services)

    return _open


@pytest_asyncio.fixture
async def app(open_app: AppOpener) -> AsyncIterator[RunningApp]:
    """The app on the offline model."""
    async with open_app() as running:
        yield running


@pytest_asyncio.fixture
async def stub_app(open_app: AppOpener, stub: OpenAIStub) -> AsyncIterator[RunningApp]:
    """The app with ``ChatOpenAI`` pointed at the stub, without client-side retries."""
    async with open_app(**stub.app_settings()) as running:
        yield running


async def _within(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(WAIT_SECONDS):
        return await awaitable


def _fail_once(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    """Make the async callable ``owner.name`` raise on its first call only; count the calls."""
    original = getattr(owner, name)
    calls: list[int] = []

    async def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected failure")
        return await original(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing_once)
    return calls


def _nodes(events: list[Event]) -> list[str]:
    return [e.node for e in events if isinstance(e, StepEvent)]


def _final(events: list[Event]) -> FinalEvent:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


def _only(events: list[Event], event_type: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, event_type)]
    assert len(found) == 1, found
    return found[0]


def _assert_numbered_from(events: list[Event], first: int) -> None:
    assert_numbered(events, first=first)


async def _thread(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/threads/{thread_id}")
    assert response.status_code == 200, response.text
    thread: dict[str, Any] = response.json()
    return thread


async def _versions(client: httpx.AsyncClient, note_id: str) -> list[tuple[Any, ...]]:
    response = await client.get(f"/v1/notes/{note_id}/versions")
    assert response.status_code == 200, response.text
    return [
        (v["version"], v["title"], v["author"], v["approval_id"])
        for v in response.json()["versions"]
    ]


async def _approval_status(services: Services, approval_id: str) -> str:
    async with services.db.read() as conn:
        status = await conn.scalar(
            sa.select(approvals.c.status).where(approvals.c.id == approval_id)
        )
    return str(status)


@dataclass(frozen=True)
class Asked:
    thread_id: str
    project_id: str
    note: dict[str, Any]
    consent: ConsentEvent
    events: list[Event]

    def resume(self, decision: str, **fields: Any) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "resume": {"approval_id": self.consent.approval_id, "decision": decision, **fields},
        }


async def _ask_for_summary(client: httpx.AsyncClient) -> Asked:
    """A project with the note "RAG" (version 1), one answered question, then a pending consent
    to add a summary to that note. Returns every event of both runs, in order."""
    project = (await client.post("/v1/projects", json={"name": "Learning"})).json()
    note = (
        await client.post(
            f"/v1/projects/{project['project_id']}/notes",
            json={"title": "RAG", "content": NOTE_CONTENT},
        )
    ).json()
    answered = await chat(
        client,
        {
            "message": "What is retrieval?",
            "project_id": project["project_id"],
            "note_id": note["note_id"],
        },
    )
    thread_id = answered[0].thread_id
    asked = await chat(
        client, {"thread_id": thread_id, "message": ASK_FOR_SUMMARY, "note_id": note["note_id"]}
    )
    assert kinds(asked) == TUTOR_ASKED
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    assert consent.proposal["base_version"] == 1
    return Asked(thread_id, project["project_id"], note, consent, [*answered, *asked])


async def _failed_approval(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> tuple[Asked, list[Event]]:
    """A consent approved in a run whose apply step fails (once)."""
    asked = await _ask_for_summary(app.client)
    _fail_once(monkeypatch, OwnerNotesStore, "apply_note_edit")
    failed = await chat(app.client, asked.resume("approve"))
    assert kinds(failed) == ["run_started", "step", "step", "error", "final"]
    assert _nodes(failed) == ["request_note_edit_consent", "apply_note_edit"]
    return asked, failed


# One run per thread


async def test_a_message_while_a_run_is_active_is_run_in_progress_and_both_threads_of_work_go_on(
    stub_app: RunningApp, stub: OpenAIStub
) -> None:
    client = stub_app.client
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    first = asyncio.create_task(client.post("/v1/chat", json={"message": "What is retrieval?"}))
    await _within(stub.holding.wait())
    (listed,) = (await client.get("/v1/threads")).json()["threads"]
    thread_id = listed["thread_id"]
    assert listed["status"] == "running"

    busy = await client.post("/v1/chat", json={"thread_id": thread_id, "message": "Hello?"})

    assert busy.status_code == 409
    assert busy.json()["error"]["code"] == "run_in_progress"
    assert busy.json()["error"]["details"] == {"thread_id": thread_id}
    assert len(stub.requests) == 2  # the refused message never reached the model
    stub.release()
    response = await _within(first)
    assert response.status_code == 200, response.text
    events = parse_events(response.text)
    assert kinds(events) == ANSWERED
    assert _only(events, MessageEvent).content == ANSWER
    assert _final(events).reason == "completed"

    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply("Yes, still here.")
    later = await chat(client, {"thread_id": thread_id, "message": "Hello?"})

    assert kinds(later) == ANSWERED
    assert later[0].seq == events[-1].seq + 1
    assert _final(later).reason == "completed"
    assert (stub.unscripted, list(stub.script)) == (0, [])
    thread = await _thread(client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
    transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
    assert [(m["role"], m["content"]) for m in transcript] == [
        ("user", "What is retrieval?"),
        ("assistant", ANSWER),
        ("user", "Hello?"),
        ("assistant", "Yes, still here."),
    ]


async def test_a_claim_that_finds_the_thread_changed_is_run_in_progress_and_writes_nothing(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim is its transaction's last statement (on PostgreSQL sent with the commit, after
    the run's row and audit record): refused, none of what went before it is stored."""
    first = await chat(app.client, {"message": "What is retrieval?"})
    thread_id = first[0].thread_id
    check_cap = consentry.runtime.runs.start._launcher.refuse_if_tenant_at_cap

    async def another_run_claims_first(conn: Any, *args: Any, **kwargs: Any) -> None:
        await check_cap(conn, *args, **kwargs)
        # What another replica's claim would have done between this request's read and its
        # claim (in this transaction, so that SQLite's single writer can have it too).
        await conn.execute(
            sa.update(threads).where(threads.c.id == thread_id).values(status="running")
        )

    monkeypatch.setattr(
        consentry.runtime.runs.start._launcher, "refuse_if_tenant_at_cap", another_run_claims_first
    )
    busy = await app.client.post("/v1/chat", json={"thread_id": thread_id, "message": "Hello?"})
    monkeypatch.undo()

    assert busy.status_code == 409
    assert busy.json()["error"]["code"] == "run_in_progress"
    async with app.services.db.read() as conn:
        runs_of_thread = await conn.scalar(
            sa.select(sa.func.count()).select_from(runs).where(runs.c.thread_id == thread_id)
        )
        started = await conn.scalar(
            sa.select(sa.func.count())
            .select_from(audit)
            .where(audit.c.thread_id == thread_id, audit.c.action == "run_started")
        )
    assert (runs_of_thread, started) == (1, 1)
    assert (await _thread(app.client, thread_id))["status"] == "idle"
    again = await chat(app.client, {"thread_id": thread_id, "message": "What is retrieval?"})
    assert _final(again).reason == "completed"
    assert again[0].seq == first[-1].seq + 1


# Failures that end a run


async def test_a_storage_failure_at_the_end_of_a_run_ends_the_stream_as_failed_and_frees_the_thread(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fail_once(monkeypatch, consentry.storage.runs._lifecycle, "end_run")

    events = await chat(app.client, {"message": "What is retrieval?"})

    assert kinds(events) == ["run_started", "step", "step", "message", "error", "final"]
    assert any(isinstance(e, TokenEvent) for e in events)
    _assert_numbered_from(events, 1)  # no gap where the lost end was
    error = events[-2]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.retryable) == ("storage_error", True)
    assert error.message == "The run's result could not be stored."
    assert _final(events).reason == "failed"
    assert len(calls) == 2  # the failed end, then the smaller one recording the failure
    thread_id = events[0].thread_id
    thread = await _thread(app.client, thread_id)
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "failed",
        [],
    )

    retry = await chat(app.client, {"thread_id": thread_id, "message": "What is retrieval?"})

    assert kinds(retry) == ANSWERED
    assert retry[0].seq == events[-1].seq + 1
    assert _final(retry).reason == "completed"
    thread = await _thread(app.client, thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


# A decided consent whose run stopped half-way


async def test_a_resume_whose_apply_fails_ends_failed_and_the_approval_stays_decided(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked, failed = await _failed_approval(app, monkeypatch)

    started = failed[0]
    assert isinstance(started, RunStartedEvent)
    assert started.trigger == "resume"
    error = failed[-2]
    assert isinstance(error, ErrorEvent)
    assert error.code == "internal_error"
    assert _final(failed).reason == "failed"
    assert failed[0].seq == asked.consent.seq + 2
    _assert_numbered_from(failed, failed[0].seq)
    assert await _approval_status(app.services, asked.consent.approval_id) == "approved"
    thread = await _thread(app.client, asked.thread_id)
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "failed",
        [],
    )
    assert await _versions(app.client, asked.note["note_id"]) == [(1, "RAG", "user", None)]


async def test_the_same_decision_sent_again_after_a_failed_apply_continues_and_writes_once(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked, failed = await _failed_approval(app, monkeypatch)

    retried = await chat(app.client, asked.resume("approve"))

    assert kinds(retried, tokens=True) == ["run_started", "step", "note", "message", "final"]
    assert _nodes(retried) == ["apply_note_edit"]
    started = retried[0]
    assert isinstance(started, RunStartedEvent)
    assert started.trigger == "resume"
    _assert_numbered_from(retried, failed[-1].seq + 1)
    note = _only(retried, NoteEvent)
    assert (note.note_id, note.version, note.content) == (
        asked.note["note_id"],
        2,
        asked.consent.proposal["proposed_content"],
    )
    assert _only(retried, MessageEvent).content == "Done: I updated \u201cRAG\u201d (version 2)."
    assert _final(retried).reason == "completed"
    assert await _versions(app.client, asked.note["note_id"]) == [
        (1, "RAG", "user", None),
        (2, "RAG", "assistant", asked.consent.approval_id),
    ]
    thread = await _thread(app.client, asked.thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")

    again = await app.client.post("/v1/chat", json=asked.resume("approve"))

    assert again.status_code == 409  # the continued run completed: nothing left to continue
    assert again.json()["error"]["code"] == ALREADY_DECIDED
    assert len(await _versions(app.client, asked.note["note_id"])) == 2


@pytest.mark.parametrize(
    "decision",
    [
        pytest.param({"decision": "reject"}, id="reject"),
        pytest.param({"decision": "edit", "edited": {"content": "Mine instead."}}, id="edit"),
    ],
)
async def test_a_different_decision_after_a_failed_apply_is_already_decided(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch, decision: dict[str, Any]
) -> None:
    asked, _ = await _failed_approval(app, monkeypatch)

    response = await app.client.post("/v1/chat", json=asked.resume(**decision))

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == ALREADY_DECIDED
    assert (error["details"]["approval_id"], error["details"]["status"]) == (
        asked.consent.approval_id,
        "approved",
    )
    assert await _approval_status(app.services, asked.consent.approval_id) == "approved"
    assert await _versions(app.client, asked.note["note_id"]) == [(1, "RAG", "user", None)]
    thread = await _thread(app.client, asked.thread_id)
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")


async def test_a_message_after_a_failed_apply_first_applies_the_decided_edit_then_answers(
    app: RunningApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked, failed = await _failed_approval(app, monkeypatch)

    events = await chat(app.client, {"thread_id": asked.thread_id, "message": "What is RAG?"})

    assert kinds(events) == [
        "run_started",
        "step",
        "note",
        "message",
        "step",
        "step",
        "message",
        "final",
    ]
    assert _nodes(events) == ["apply_note_edit", "analyze_message", "answer_question"]
    assert len({e.run_id for e in events}) == 1
    started = events[0]
    assert isinstance(started, RunStartedEvent)
    assert started.trigger == "message"
    _assert_numbered_from(events, failed[-1].seq + 1)
    note = _only(events, NoteEvent)
    assert (note.version, note.content) == (2, asked.consent.proposal["proposed_content"])
    done, answer = [e for e in events if isinstance(e, MessageEvent)]  # (run after the draft)
    assert done.content == "Done: I updated \u201cRAG\u201d (version 2)."
    assert "offline model" in answer.content
    assert _final(events).reason == "completed"
    assert await _versions(app.client, asked.note["note_id"]) == [
        (1, "RAG", "user", None),
        (2, "RAG", "assistant", asked.consent.approval_id),
    ]
    transcript = (await app.client.get(f"/v1/threads/{asked.thread_id}/messages")).json()
    assert [(m["role"], m["content"]) for m in transcript["messages"][2:]] == [
        ("user", ASK_FOR_SUMMARY),
        ("assistant", "I drafted an edit of your note \u201cRAG\u201d."),
        ("assistant", "Done: I updated \u201cRAG\u201d (version 2)."),
        ("user", "What is RAG?"),
        ("assistant", answer.content),
    ]


# The note moved on while its consent was pending


async def test_approving_an_edit_of_a_deleted_note_writes_nothing_and_says_so(
    app: RunningApp,
) -> None:
    asked = await _ask_for_summary(app.client)
    deleted = await app.client.delete(f"/v1/notes/{asked.note['note_id']}")
    assert deleted.status_code == 204

    events = await chat(app.client, asked.resume("approve"))

    assert kinds(events, tokens=True) == ["run_started", "step", "step", "message", "final"]
    assert _nodes(events) == ["request_note_edit_consent", "apply_note_edit"]
    assert _only(events, MessageEvent).content == (
        "Nothing was written: \u201cRAG\u201d no longer exists."
    )
    assert _final(events).reason == "completed"
    notes = (await app.client.get(f"/v1/projects/{asked.project_id}/notes")).json()["notes"]
    assert notes == []
    assert (await app.client.get(f"/v1/notes/{asked.note['note_id']}")).status_code == 404


async def test_approving_an_edit_of_a_note_the_user_changed_writes_nothing_and_names_the_versions(
    app: RunningApp,
) -> None:
    asked = await _ask_for_summary(app.client)
    changed = await app.client.put(
        f"/v1/notes/{asked.note['note_id']}", json={"version": 1, "content": "My own rewrite."}
    )
    assert changed.status_code == 200, changed.text

    events = await chat(app.client, asked.resume("approve"))

    assert kinds(events, tokens=True) == ["run_started", "step", "step", "message", "final"]
    assert _only(events, MessageEvent).content == (
        "Nothing was written: \u201cRAG\u201d changed since I drafted this edit "
        "(version 1 \u2192 2). Ask me again to draft it on the current version."
    )
    assert _final(events).reason == "completed"
    assert await _versions(app.client, asked.note["note_id"]) == [
        (1, "RAG", "user", None),
        (2, "RAG", "user", None),
    ]
    current = (await app.client.get(f"/v1/notes/{asked.note['note_id']}")).json()
    assert (current["version"], current["content"]) == (2, "My own rewrite.")


async def test_an_edit_with_only_a_new_title_keeps_the_proposed_content_and_renames_the_note(
    app: RunningApp,
) -> None:
    asked = await _ask_for_summary(app.client)

    events = await chat(app.client, asked.resume("edit", edited={"title": "Retrieval notes"}))

    assert kinds(events, tokens=True) == ["run_started", "step", "step", "note", "message", "final"]
    note = _only(events, NoteEvent)
    proposed = asked.consent.proposal["proposed_content"]
    assert (note.title, note.content, note.version) == ("Retrieval notes", proposed, 2)
    assert _only(events, MessageEvent).content == (
        "Done: I saved your edit to \u201cRetrieval notes\u201d (version 2)."
    )
    stored = (await app.client.get(f"/v1/notes/{asked.note['note_id']}")).json()
    assert (stored["title"], stored["content"], stored["version"]) == (
        "Retrieval notes",
        proposed,
        2,
    )
    assert await _versions(app.client, asked.note["note_id"]) == [
        (1, "RAG", "user", None),
        (2, "Retrieval notes", "assistant", asked.consent.approval_id),
    ]


# Numbering and status across runs


async def test_seq_grows_by_one_per_event_across_the_runs_of_a_thread_tokens_included(
    app: RunningApp,
) -> None:
    asked = await _ask_for_summary(app.client)
    approved = await chat(app.client, asked.resume("approve"))

    events = [*asked.events, *approved]

    assert any(isinstance(e, TokenEvent) for e in asked.events)
    _assert_numbered_from(events, 1)
    runs = [e.run_id for e in events if isinstance(e, RunStartedEvent)]
    assert len(set(runs)) == 3
    assert [e.reason for e in events if isinstance(e, FinalEvent)] == [
        "completed",
        "interrupted",
        "completed",
    ]
    assert {e.thread_id for e in events} == {asked.thread_id}


async def test_thread_list_and_thread_detail_both_say_idle_once_the_consent_expired(
    app: RunningApp, clock: ManualClock
) -> None:
    asked = await _ask_for_summary(app.client)
    detail = await _thread(app.client, asked.thread_id)
    (listed,) = (await app.client.get("/v1/threads")).json()["threads"]
    assert (listed["status"], detail["status"]) == ("awaiting_consent", "awaiting_consent")

    clock.advance(seconds=app.services.settings.consent_ttl_seconds + 1)

    detail = await _thread(app.client, asked.thread_id)
    (listed,) = (await app.client.get("/v1/threads")).json()["threads"]
    assert (detail["status"], detail["pending_consents"]) == ("idle", [])
    assert listed == {
        key: value
        for key, value in detail.items()
        if key not in ("pending_consents", "tokens_used")
    }
