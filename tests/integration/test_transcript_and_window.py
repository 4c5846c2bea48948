"""A long conversation costs the same per turn as a short one: the graph keeps only a window of
its messages (``CONSENTRY_CONVERSATION_WINDOW``), the server keeps the whole transcript apart
(``GET /v1/threads/{id}/messages``), and each thread keeps only its newest checkpoint
(``CONSENTRY_CHECKPOINT_RETENTION=latest``). Threads from before the transcript table read
their messages from the checkpoint until their next message copies them over.

There is no endpoint that deletes a thread, so nothing here deletes one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from langchain_core.messages import HumanMessage
from pydantic import ValidationError

from consentry.schemas.events import ConsentEvent, Event, FinalEvent, MessageEvent, NoteEvent
from consentry.services import Services
from consentry.settings import Settings
from consentry.storage.tables import threads, transcript
from tests.sse import DRAFTED_NOTE as DRAFTED
from tests.sse import TUTOR_ASKED, chat, kinds

WAIT_SECONDS = 10.0
ANSWERED = ["run_started", "step", "step", "message", "final"]
ASKED = TUTOR_ASKED
DECIDED = ["run_started", "step", "step", "message", "final"]
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"

Transcript = list[tuple[str, str, str]]
"""(role, content, message_id) of each message, in order."""


def _services(client: httpx.AsyncClient) -> Services:
    services: Services = client.services  # type: ignore[attr-defined]
    return services


def _question(n: int) -> str:
    return f"What is retrieval, part {n}?"


def _said(events: list[Event]) -> list[MessageEvent]:
    return [e for e in events if isinstance(e, MessageEvent)]


def _reason(events: list[Event]) -> str:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final.reason


async def _settled(client: httpx.AsyncClient) -> None:
    """Wait until every run has ended, including what a run does after its ``final`` event
    (pruning its thread's older checkpoints)."""
    async with asyncio.timeout(WAIT_SECONDS):
        await _services(client).executor.wait_for_runs()


async def _ask(
    client: httpx.AsyncClient, text: str, thread_id: str | None = None, **fields: Any
) -> list[Event]:
    body: dict[str, Any] = {"message": text, **fields}
    if thread_id is not None:
        body["thread_id"] = thread_id
    return await chat(client, body)


async def _answered(client: httpx.AsyncClient, text: str, thread_id: str | None = None) -> str:
    """Send a question that is answered; the thread's id."""
    events = await _ask(client, text, thread_id)
    assert kinds(events) == ANSWERED
    assert _reason(events) == "completed"
    return events[0].thread_id


async def _decide(client: httpx.AsyncClient, consent: ConsentEvent, decision: str) -> list[Event]:
    return await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": decision},
        },
    )


async def _asked_to_create_a_note(
    client: httpx.AsyncClient, thread_id: str | None = None
) -> ConsentEvent:
    """The tutor asks to save a summary as a new note, in ``thread_id`` (else in a new thread
    that was asked ``_question(1)`` first: a summary needs a discussion)."""
    thread_id = thread_id or await _answered(client, _question(1))
    events = await _ask(client, ASK_FOR_SUMMARY, thread_id)
    assert kinds(events) == ASKED
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    assert consent.kind == "note_create"
    return consent


async def _transcript(client: httpx.AsyncClient, thread_id: str) -> Transcript:
    response = await client.get(f"/v1/threads/{thread_id}/messages")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["thread_id"] == thread_id
    return [(m["role"], m["content"], m["message_id"]) for m in body["messages"]]


def _texts(conversation: Transcript) -> list[tuple[str, str]]:
    return [(role, content) for role, content, _ in conversation]


async def _stored_transcript(client: httpx.AsyncClient, thread_id: str) -> Transcript:
    """The thread's rows of the ``transcript`` table, in order."""
    query = (
        sa.select(transcript.c.role, transcript.c.content, transcript.c.message_id)
        .where(transcript.c.thread_id == thread_id)
        .order_by(transcript.c.id)
    )
    async with _services(client).db.read() as conn:
        rows = await conn.execute(query)
        return [(row.role, row.content, row.message_id) for row in rows]


async def _transcript_kept(client: httpx.AsyncClient, thread_id: str) -> bool:
    async with _services(client).db.read() as conn:
        kept = await conn.scalar(
            sa.select(threads.c.transcript_kept).where(threads.c.id == thread_id)
        )
    return bool(kept)


async def _as_before_the_transcript_table(client: httpx.AsyncClient, thread_id: str) -> None:
    """Make the thread look like one from before migration 0011: no transcript rows, and
    ``transcript_kept`` false (its messages are only in its checkpoint)."""
    async with _services(client).db.write() as conn:
        await conn.execute(transcript.delete().where(transcript.c.thread_id == thread_id))
        await conn.execute(
            threads.update().where(threads.c.id == thread_id).values(transcript_kept=False)
        )
    assert await _stored_transcript(client, thread_id) == []
    assert not await _transcript_kept(client, thread_id)


async def _checkpoints(client: httpx.AsyncClient, thread_id: str) -> int:
    """The thread's rows in the checkpointer's ``graph_checkpoints`` table (Consentry's own
    checkpointer, in the app's database)."""
    count = sa.text("SELECT count(*) FROM graph_checkpoints WHERE thread_id = :thread_id")
    async with _services(client).db.read() as conn:
        found = await conn.scalar(count, {"thread_id": thread_id})
    return int(found)


async def _three_turns(client: httpx.AsyncClient) -> tuple[str, list[int]]:
    """A thread asked three questions, and its checkpoints after each answer."""
    thread_id = await _answered(client, _question(1))
    await _settled(client)
    counts = [await _checkpoints(client, thread_id)]
    for n in (2, 3):
        await _answered(client, _question(n), thread_id)
        await _settled(client)
        counts.append(await _checkpoints(client, thread_id))
    return thread_id, counts


async def _graph_messages(client: httpx.AsyncClient, thread_id: str) -> list[Any]:
    graph = _services(client).executor.graph("tutor")
    state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    return list(state.values.get("messages", []))


# The window and the transcript


async def test_transcript_keeps_every_message_past_the_window(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(conversation_window=4) as client:
        first = await _ask(client, _question(1))
        thread_id = first[0].thread_id
        answers = _said(first)
        for n in range(2, 6):
            events = await _ask(client, _question(n), thread_id)
            assert kinds(events) == ANSWERED
            answers += _said(events)

        conversation = await _transcript(client, thread_id)
        state = await _graph_messages(client, thread_id)

    assert len(answers) == 5
    assert [(role, content) for role, content, _ in conversation] == [
        pair
        for n, answer in enumerate(answers, start=1)
        for pair in (("user", _question(n)), ("assistant", answer.content))
    ]
    assert [m for role, _, m in conversation if role == "assistant"] == [
        a.message_id for a in answers
    ]
    assert len({m for _, _, m in conversation}) == 10
    assert 0 < len(state) <= 4
    assert isinstance(state[0], HumanMessage)
    # The state is the end of the transcript: the same messages, ids and all.
    kept = [(str(m.id), m.text) for m in state]
    assert kept == [(m, content) for _, content, m in conversation[-len(state) :]]
    assert [m.text for m in state] == [
        _question(4),
        answers[3].content,
        _question(5),
        answers[4].content,
    ]


async def test_the_default_window_keeps_a_short_conversation_whole_in_the_state(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    for n in (2, 3):
        await _answered(client, _question(n), thread_id)

    conversation = await _transcript(client, thread_id)
    state = await _graph_messages(client, thread_id)

    assert len(conversation) == 6
    assert [(str(m.id), m.text) for m in state] == [(m, c) for _, c, m in conversation]


async def test_an_approved_consent_puts_the_request_and_the_final_reply_in_the_transcript(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    consent = await _asked_to_create_a_note(client, thread_id)
    asked = await _transcript(client, thread_id)

    events = await _decide(client, consent, "approve")

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    assert _reason(events) == "completed"
    (done,) = _said(events)
    created = next(e for e in events if isinstance(e, NoteEvent))
    assert created.title in done.content
    assert _texts(asked)[2:] == [("user", ASK_FOR_SUMMARY), ("assistant", DRAFTED)]
    conversation = await _transcript(client, thread_id)
    assert conversation[:4] == asked
    assert conversation[4:] == [("assistant", done.content, done.message_id)]
    assert await _stored_transcript(client, thread_id) == conversation


async def test_a_rejected_consent_puts_the_request_and_the_final_reply_in_the_transcript(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    consent = await _asked_to_create_a_note(client, thread_id)

    events = await _decide(client, consent, "reject")

    assert kinds(events) == DECIDED
    assert _reason(events) == "completed"
    (reply,) = _said(events)
    assert reply.content.startswith("OK, I created no note.")
    conversation = await _transcript(client, thread_id)
    assert [role for role, _, _ in conversation] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
    ]
    assert conversation[2][:2] == ("user", ASK_FOR_SUMMARY)
    assert conversation[3][:2] == ("assistant", DRAFTED)
    assert conversation[4] == ("assistant", reply.content, reply.message_id)
    notes = await client.get(f"/v1/projects/{consent.proposal['project_id']}/notes")
    assert notes.json()["notes"] == []


async def test_a_message_that_rejects_the_pending_consent_comes_after_the_rejections_reply(
    client: httpx.AsyncClient,
) -> None:
    consent = await _asked_to_create_a_note(client)

    events = await _ask(client, _question(2), consent.thread_id, on_pending_consent="reject")

    rejected, answer = _said(events)
    assert rejected.content.startswith("OK, I created no note.")
    state = await _graph_messages(client, consent.thread_id)
    assert [m.text for m in state][-3:] == [rejected.content, _question(2), answer.content]
    assert _texts(await _transcript(client, consent.thread_id))[2:] == [
        ("user", ASK_FOR_SUMMARY),
        ("assistant", DRAFTED),
        ("assistant", rejected.content),
        ("user", _question(2)),
        ("assistant", answer.content),
    ]


# Checkpoint retention


async def test_with_retention_latest_only_the_newest_checkpoint_is_kept_after_each_run(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(checkpoint_retention="latest") as client:
        thread_id, counts = await _three_turns(client)

        assert counts == [1, 1, 1]
        assert _texts(await _transcript(client, thread_id))[::2] == [
            ("user", _question(n)) for n in (1, 2, 3)
        ]
        assert [m.text for m in await _graph_messages(client, thread_id)][::2] == [
            _question(n) for n in (1, 2, 3)
        ]


async def test_by_default_a_thread_keeps_one_checkpoint_a_run_each_the_parent_of_the_next(
    client: httpx.AsyncClient,
) -> None:
    """Retention ``turns``: a run's steps replace each other, and the checkpoint it started from
    stays (the thread's first run starts from its own input's); each kept checkpoint names the
    one before it as its parent, so the history is one unbroken chain of turns (what a fork
    starts from, the first message's edit included)."""
    thread_id, counts = await _three_turns(client)

    assert counts == [2, 3, 4]
    graph = _services(client).executor.graph("tutor")
    history = [
        s async for s in graph.aget_state_history({"configurable": {"thread_id": thread_id}})
    ]
    ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    parents = [
        s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None
        for s in history
    ]
    assert parents == [*ids[1:], None]
    questions = [
        [m.text for m in s.values["messages"] if isinstance(m, HumanMessage)] for s in history
    ]
    assert questions == [[_question(n) for n in range(1, k + 1)] for k in (3, 2, 1, 0)]


async def test_a_thread_waiting_for_a_consent_keeps_its_turn_until_the_decision_ran(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    await _settled(client)
    assert await _checkpoints(client, thread_id) == 2  # (its first run's input, its end)
    consent = await _asked_to_create_a_note(client, thread_id)
    await _settled(client)
    # Each step's write replaced the run's own before it: the newest (which holds the
    # interrupt) is what a decision resumes from, beside the turn before.
    assert await _checkpoints(client, thread_id) == 3

    events = await _decide(client, consent, "approve")
    await _settled(client)

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_create_consent",
        "create_note",
    ]
    assert _reason(events) == "completed"
    created = next(e for e in events if isinstance(e, NoteEvent))
    assert created.content == consent.proposal["content"]
    stored = (await client.get(f"/v1/notes/{created.note_id}")).json()
    assert (stored["title"], stored["content"], stored["version"]) == (
        created.title,
        created.content,
        1,
    )
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "completed",
        [],
    )
    assert await _checkpoints(client, thread_id) == 4
    # The thread goes on from the kept checkpoint.
    await _answered(client, _question(2), thread_id)
    assert _texts(await _transcript(client, thread_id))[-3:-1] == [
        ("assistant", _said(events)[0].content),
        ("user", _question(2)),
    ]


async def test_a_rejection_changes_nothing_ends_the_consent_and_prunes_the_thread(
    client: httpx.AsyncClient,
) -> None:
    consent = await _asked_to_create_a_note(client)
    await _settled(client)

    events = await _decide(client, consent, "reject")
    await _settled(client)

    # A turn each: the question, the request, the decision; and the first run's input.
    assert await _checkpoints(client, consent.thread_id) == 4

    assert kinds(events) == DECIDED
    assert _reason(events) == "completed"
    notes = await client.get(f"/v1/projects/{consent.proposal['project_id']}/notes")
    assert notes.json()["notes"] == []
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_with_retention_all_every_checkpoint_is_kept(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(checkpoint_retention="all") as client:
        _, counts = await _three_turns(client)

    # At least one checkpoint per step: the input, analyze_message, answer_question.
    assert counts[0] >= 3
    assert counts[0] < counts[1] < counts[2]


# Threads from before the transcript table


async def test_a_thread_from_before_the_transcript_table_reads_its_messages_from_the_checkpoint(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    await _answered(client, _question(2), thread_id)
    before = await _transcript(client, thread_id)

    await _as_before_the_transcript_table(client, thread_id)

    assert len(before) == 4
    assert await _transcript(client, thread_id) == before


async def test_the_next_message_on_an_older_thread_copies_its_checkpoint_into_the_transcript(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    await _answered(client, _question(2), thread_id)
    before = await _transcript(client, thread_id)
    await _as_before_the_transcript_table(client, thread_id)

    events = await _ask(client, _question(3), thread_id)

    assert kinds(events) == ANSWERED
    (answer,) = _said(events)
    stored = await _stored_transcript(client, thread_id)
    assert stored[:4] == before
    assert _texts(stored[4:]) == [("user", _question(3)), ("assistant", answer.content)]
    assert stored[5][2] == answer.message_id
    assert await _transcript_kept(client, thread_id)
    assert await _transcript(client, thread_id) == stored
    # Copied once: a later message adds only its own turn.
    await _answered(client, _question(4), thread_id)
    assert _texts(await _stored_transcript(client, thread_id))[:6] == _texts(stored)
    assert len(await _stored_transcript(client, thread_id)) == 8


async def test_an_older_thread_past_the_window_keeps_its_whole_conversation(
    open_client: Callable[..., Any],
) -> None:
    """Its checkpoint holds every message (it ran without a window); the copy is made before the
    next run lets the oldest go."""
    async with open_client() as client:
        thread_id = await _answered(client, _question(1))
        for n in (2, 3):
            await _answered(client, _question(n), thread_id)
        before = await _transcript(client, thread_id)
        await _as_before_the_transcript_table(client, thread_id)
    async with open_client(conversation_window=2) as client:
        await _answered(client, _question(4), thread_id)

        conversation = await _transcript(client, thread_id)
        state = await _graph_messages(client, thread_id)

    assert len(before) == 6
    assert conversation[:6] == before
    assert _texts(conversation)[6] == ("user", _question(4))
    assert [role for role, _, _ in conversation] == ["user", "assistant"] * 4
    assert [m.text for m in state] == [_question(4), conversation[7][1]]


async def test_a_decision_on_an_older_thread_is_listed_once_after_the_next_message(
    client: httpx.AsyncClient,
) -> None:
    thread_id = await _answered(client, _question(1))
    consent = await _asked_to_create_a_note(client, thread_id)
    await _as_before_the_transcript_table(client, thread_id)
    decided = await _decide(client, consent, "reject")
    (rejected,) = _said(decided)
    assert _texts(await _transcript(client, thread_id))[2:] == [
        ("user", ASK_FOR_SUMMARY),
        ("assistant", DRAFTED),
        ("assistant", rejected.content),
    ]

    events = await _ask(client, _question(2), thread_id)

    (answer,) = _said(events)
    conversation = await _transcript(client, thread_id)
    assert _texts(conversation)[2:] == [
        ("user", ASK_FOR_SUMMARY),
        ("assistant", DRAFTED),
        ("assistant", rejected.content),
        ("user", _question(2)),
        ("assistant", answer.content),
    ]
    assert len({m for _, _, m in conversation}) == len(conversation)


# Settings


def test_a_window_of_fewer_than_two_messages_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="conversation_window"):
        Settings(conversation_window=1)
    monkeypatch.setenv("CONSENTRY_CONVERSATION_WINDOW", "1")
    with pytest.raises(ValidationError, match="conversation_window"):
        Settings()
    monkeypatch.setenv("CONSENTRY_CONVERSATION_WINDOW", "2")
    assert Settings().conversation_window == 2


def test_checkpoint_retention_is_turns_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().checkpoint_retention == "turns"
    monkeypatch.setenv("CONSENTRY_CHECKPOINT_RETENTION", "latest")
    assert Settings().checkpoint_retention == "latest"
    monkeypatch.setenv("CONSENTRY_CHECKPOINT_RETENTION", "all")
    assert Settings().checkpoint_retention == "all"
    with pytest.raises(ValidationError, match="checkpoint_retention"):
        Settings(checkpoint_retention="none")
