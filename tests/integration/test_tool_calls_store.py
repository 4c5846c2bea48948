"""``storage.tool_calls``: a thread's tool calls, written from its ``tool_call`` and
``tool_result`` events. A call waits ``pending`` for its result; told again before it (its
arguments edited) it is updated, not doubled; a result completes it, or makes a row of its own
when its call was never told; a call id used again after its result is a new call. Each call is
read back with the transcript message said last before it. On both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest_asyncio

from consentry.principal import Principal
from consentry.storage.db.database import Database
from consentry.storage.tool_calls import (
    ToolCallAsked,
    ToolCallRecord,
    ToolResultGiven,
    list_tool_calls,
    record_tool_events,
)
from consentry.storage.transcript import TranscriptEntry, add_to_transcript
from tests.integration.stored_threads import add_thread

OWNER = Principal("acme", "ada")
THREAD_ID = "thread-1"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
WEATHER = ToolCallAsked("call-1", "get_weather", {"city": "Lisbon"}, "ai-1")


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest_asyncio.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    await database.open()
    try:
        await database.migrate()
        async with database.write() as conn:
            await add_thread(conn, OWNER, THREAD_ID, now=T0, graph="weather", title="Weather")
        yield database
    finally:
        await database.close()


async def _record(
    db: Database, *told: ToolCallAsked | ToolResultGiven, run_id: str = "run-1", at: int = 1
) -> None:
    async with db.write() as conn:
        await record_tool_events(conn, thread_id=THREAD_ID, run_id=run_id, told=told, now=_at(at))


async def _listed(db: Database) -> list[ToolCallRecord]:
    async with db.read() as conn:
        return await list_tool_calls(conn, THREAD_ID)


async def test_a_call_waits_pending_and_its_result_completes_it(db: Database) -> None:
    await _record(db, WEATHER, at=1)
    (pending,) = await _listed(db)
    assert pending == ToolCallRecord(
        tool_call_id="call-1",
        run_id="run-1",
        name="get_weather",
        args={"city": "Lisbon"},
        message_id="ai-1",
        status="pending",
        content=None,
        content_chars=None,
        created_at=_at(1),
        finished_at=None,
        after_message_id=None,
    )
    assert pending.truncated is False

    await _record(db, ToolResultGiven("call-1", "get_weather", "success", "sunny", 5), at=2)

    (done,) = await _listed(db)
    assert (done.status, done.content, done.content_chars, done.truncated) == (
        "success",
        "sunny",
        5,
        False,
    )
    assert (done.created_at, done.finished_at, done.run_id) == (_at(1), _at(2), "run-1")


async def test_a_call_told_again_before_its_result_is_updated_not_doubled(db: Database) -> None:
    await _record(db, WEATHER, at=1)

    edited = ToolCallAsked("call-1", "get_weather", {"city": "Oslo"}, "ai-1")
    await _record(db, edited, ToolResultGiven("call-1", "get_weather", "error", "x" * 3, 9), at=2)

    (call,) = await _listed(db)
    assert (call.args, call.status, call.content, call.content_chars) == (
        {"city": "Oslo"},
        "error",
        "xxx",
        9,
    )
    assert call.truncated is True  # 3 of 9 characters kept
    assert call.created_at == _at(1)


async def test_a_result_whose_call_was_never_told_has_a_row_of_its_own(db: Database) -> None:
    await _record(db, ToolResultGiven("call-9", "lookup", "success", "found", 5), run_id="run-2")

    (call,) = await _listed(db)
    assert (call.tool_call_id, call.name, call.args, call.message_id, call.run_id) == (
        "call-9",
        "lookup",
        {},
        None,
        "run-2",
    )
    assert (call.status, call.content) == ("success", "found")


async def test_a_call_id_used_again_after_its_result_is_a_new_call(db: Database) -> None:
    await _record(db, WEATHER, ToolResultGiven("call-1", "get_weather", "success", "a", 1), at=1)
    again = ToolCallAsked("call-1", "get_weather", {"city": "Tokyo"}, "ai-2")

    await _record(db, again, ToolResultGiven("call-1", "get_weather", "success", "b", 1), at=2)

    assert [(c.args, c.message_id, c.content) for c in await _listed(db)] == [
        ({"city": "Lisbon"}, "ai-1", "a"),
        ({"city": "Tokyo"}, "ai-2", "b"),
    ]


async def test_each_call_names_the_transcript_message_said_last_before_it(db: Database) -> None:
    async with db.write() as conn:
        await add_to_transcript(
            conn, THREAD_ID, [TranscriptEntry("u1", "user", "Weather?")], now=_at(1)
        )
        # a message and the calls stored in one transaction share its time: they come after it
        await add_to_transcript(
            conn, THREAD_ID, [TranscriptEntry("a1", "assistant", "Let me look.")], now=_at(2)
        )
        await record_tool_events(
            conn, thread_id=THREAD_ID, run_id="run-1", told=[WEATHER], now=_at(2)
        )
        await add_to_transcript(
            conn, THREAD_ID, [TranscriptEntry("a2", "assistant", "Sunny.")], now=_at(3)
        )
        await add_to_transcript(
            conn, THREAD_ID, [TranscriptEntry("u2", "user", "And Oslo?")], now=_at(4)
        )
        oslo = ToolCallAsked("call-2", "get_weather", {"city": "Oslo"}, "ai-3")
        await record_tool_events(conn, thread_id=THREAD_ID, run_id="run-2", told=[oslo], now=_at(4))

    assert [(c.tool_call_id, c.after_message_id) for c in await _listed(db)] == [
        ("call-1", "a1"),
        ("call-2", "u2"),
    ]
