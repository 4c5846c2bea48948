"""Step batching as served (``runtime.runs.execute._step_batching``): a run's events are stored in
the write of the step's checkpoint (``run_started`` and ``step`` events may go ahead of it, with
the first token), never in writes of their own, and the SSE stream still carries every event, in
seq order, with no gap; a rejoining client replays exactly what the stream sent.

Which rows one write stored is read from the ``events`` table: the test clock ticks 1 µs on every
call and a write stamps all its rows with one reading, so the rows of one write share one
``created_at`` and those of two writes never do.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

import consentry.runtime.runs.execute._executor
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.schemas.events import ConsentEvent, Event
from consentry.storage.tables import events as events_table
from tests.sse import (
    ASK_FOR_SUMMARY,
    QUESTION,
    a_note_asked_about,
    ask_for_note_edit,
    chat,
    kinds,
    numbering,
    parse_events,
)


@pytest.fixture(autouse=True)
def _progress_waits_for_the_next_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline model answers at once, but a loaded machine may take longer than
    ``PROGRESS_DELAY_SECONDS`` between two chunks, and the progress would then be stored on its
    own: give it a delay no run here reaches, so what goes in which write depends on the run only.
    (The delay itself: ``tests/unit/runtime/runs/execute/test_step_batching.py``.)"""
    monkeypatch.setattr(
        consentry.runtime.runs.execute._executor,
        "ProgressBatcher",
        partial(ProgressBatcher, delay=3600.0),
    )


async def _writes(client: httpx.AsyncClient, run_id: str) -> list[list[str]]:
    """The run's stored events, in seq order, grouped by the write that stored them."""
    query = (
        sa.select(events_table.c.type, events_table.c.created_at)
        .where(events_table.c.run_id == run_id)
        .order_by(events_table.c.seq)
    )
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        rows = list(await conn.execute(query))
    return [
        [row.type for row in group] for _, group in itertools.groupby(rows, lambda r: r.created_at)
    ]


def _numbered_without_gaps(events: list[Event]) -> bool:
    """Every stored event of the stream is the one after the one before it (``numbering``)."""
    return [e.seq for e in events] == numbering(events)


def _durable(events: list[Event]) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in events if e.type != "token"]


async def test_a_message_that_reaches_a_consent_stores_all_its_events_in_one_write(
    client: httpx.AsyncClient,
) -> None:
    _, events = await ask_for_note_edit(client)

    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "step",
        "message",
        "step",
        "consent",
        "final",
    ]
    assert _numbered_without_gaps(events)
    # Each step's events in its checkpoint's write; the step that asked (it has no checkpoint
    # of its own: the graph stopped in it) with the consent in the run's closing write.
    assert await _writes(client, events[0].run_id) == [
        ["run_started"],
        ["step"],
        ["step", "message"],
        ["step", "consent", "final"],
    ]


async def test_an_approved_decision_stores_its_progress_with_the_note_then_the_message_and_end(
    client: httpx.AsyncClient,
) -> None:
    _, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)

    events = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )

    assert kinds(events, tokens=True) == ["run_started", "step", "step", "note", "message", "final"]
    assert events[0].seq == asked[-1].seq + 1
    assert _numbered_without_gaps(events)
    assert await _writes(client, events[0].run_id) == [
        ["run_started", "step"],  # the input's checkpoint (the resume) and the step it starts
        # The next step's progress waits with what it told for its checkpoint: nothing of it
        # could be sent before that write (no token came between).
        ["step", "note", "message"],
        ["final"],
    ]


async def test_a_question_stores_its_progress_before_the_first_token_then_the_message_and_end(
    client: httpx.AsyncClient,
) -> None:
    events = await chat(client, {"message": QUESTION})

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    streamed = kinds(events, tokens=True)
    assert streamed[:4] == ["run_started", "step", "step", "token"]  # progress sent first
    assert set(streamed[3:-2]) == {"token"}
    assert _numbered_without_gaps(events)
    assert await _writes(client, events[0].run_id) == [
        ["run_started"],  # with the input's checkpoint
        ["step"],  # with the first step's
        ["step"],  # what the first token could not be sent before
        ["message"],  # with the answering step's checkpoint
        ["final"],
    ]


async def test_a_client_replaying_from_zero_gets_exactly_the_durable_events_the_streams_sent(
    client: httpx.AsyncClient,
) -> None:
    note, answered = await a_note_asked_about(client, content="R.")
    thread_id = answered[0].thread_id
    asked = await chat(
        client, {"thread_id": thread_id, "message": ASK_FOR_SUMMARY, "note_id": note["note_id"]}
    )
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    streams: list[Any] = [answered, asked]
    streams.append(
        await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
    )
    streams.append(await chat(client, {"thread_id": thread_id, "message": QUESTION}))
    sent = [event for stream in streams for event in stream if event.type != "token"]

    response = await client.get(f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "0"})

    assert response.status_code == 200, response.text
    replayed = parse_events(response.text)
    assert _durable(replayed) == _durable(sent)
    assert [e.model_dump() for e in replayed] == [e.model_dump() for e in sent]
