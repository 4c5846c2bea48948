"""``runtime.runs.execute._step_batching.ProgressBatcher``: ``run_started`` and ``step`` events
wait for the run's next write, or for a short delay, instead of a write of their own; the events a
step's results produce wait for the step's checkpoint (``commit_step``) and are written in its
transaction; and still no event is sent before it is stored, nor before an earlier one.

Driven with a real :class:`RunEventStream`, a store that records what it is given (and can be held
or made to fail) and the run's client reading ``listen()``. Both write into one timeline, so a test
can check that the client never got an event before a store of it had returned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, cast

import pytest

from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.schemas.events import MessageEvent, RunStartedEvent, StepEvent, TokenEvent
from consentry.storage.checkpoints import CheckpointFence
from consentry.storage.db.database import Database
from consentry.storage.leases import LeaseLostError

DELAY = 0.01
WAIT_SECONDS = 5.0

T = TypeVar("T")

Seen = tuple[int, str]
"""An event as a test compares it: ``(seq, type)``."""

Timeline = list[tuple[Literal["stored", "sent"], int]]
"""``("stored", seq)`` once a store call holding the event returned; ``("sent", seq)`` once the
client got it."""


class FakeStore:
    """The run's write transaction: records the rows of every call, in order. ``hold()`` makes the
    next call wait until the returned event is set; ``failures`` makes that many calls raise."""

    def __init__(self, timeline: Timeline) -> None:
        self.calls: list[list[Seen]] = []
        self.called = asyncio.Event()
        self.failures = 0
        self.most_at_once = 0
        """The most calls in flight at the same time (a run's writes must not overlap)."""
        self._in_flight = 0
        self._timeline = timeline
        self._holds: list[asyncio.Event] = []
        self._changed = asyncio.Condition()

    def hold(self) -> asyncio.Event:
        release = asyncio.Event()
        self._holds.append(release)
        return release

    async def wait_for_calls(self, count: int) -> None:
        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: len(self.calls) >= count)

    async def __call__(self, rows: list[OutgoingEvent]) -> None:
        self._in_flight += 1
        self.most_at_once = max(self.most_at_once, self._in_flight)
        try:
            async with self._changed:
                self.calls.append([(row.seq, row.type) for row in rows])
                self.called.set()
                self._changed.notify_all()
            await asyncio.sleep(0)  # a real write awaits I/O: other tasks run meanwhile
            if self._holds:
                await self._holds.pop(0).wait()
            if self.failures:
                self.failures -= 1
                raise OSError("the database is gone")
            self._timeline.extend(("stored", row.seq) for row in rows)
        finally:
            self._in_flight -= 1


class Client:
    """The client that started the run: what ``RunEventStream.listen()`` gives it, as it comes."""

    def __init__(self, events: RunEventStream, timeline: Timeline) -> None:
        self.received: list[Seen] = []
        self._timeline = timeline
        self._arrived = asyncio.Condition()
        self._reader = asyncio.create_task(self._read(events))

    async def _read(self, events: RunEventStream) -> None:
        async for event in events.listen():
            self._timeline.append(("sent", event.seq))
            async with self._arrived:
                self.received.append((event.seq, event.type))
                self._arrived.notify_all()

    async def received_through(self, seq: int) -> list[Seen]:
        """Everything received once the event ``seq`` has arrived."""
        async with asyncio.timeout(WAIT_SECONDS), self._arrived:
            await self._arrived.wait_for(lambda: any(s >= seq for s, _ in self.received))
        return list(self.received)

    async def received_first(self, count: int) -> list[Seen]:
        """Everything received once ``count`` events have arrived."""
        async with asyncio.timeout(WAIT_SECONDS), self._arrived:
            await self._arrived.wait_for(lambda: len(self.received) >= count)
        return list(self.received)

    async def everything(self, events: RunEventStream) -> list[Seen]:
        """End the stream: everything the client received."""
        events.close()
        async with asyncio.timeout(WAIT_SECONDS):
            await self._reader
        return list(self.received)

    def stop(self) -> None:
        self._reader.cancel()


async def _within(awaitable: Awaitable[T]) -> T:
    async with asyncio.timeout(WAIT_SECONDS):
        return await awaitable


def _sent_before_stored(timeline: Timeline) -> list[int]:
    """Events the client got before a store of them (of the event before a token) returned:
    there must be none."""
    stored: set[int] = set()
    early = []
    for what, seq in timeline:
        if what == "stored":
            stored.add(seq)
        elif seq not in stored:
            early.append(seq)
    return early


def _stored(timeline: Timeline) -> list[int]:
    return [seq for what, seq in timeline if what == "stored"]


def _start(events: RunEventStream) -> None:
    events.record(events.make(RunStartedEvent, graph="tutor", trigger="message"))


def _step(events: RunEventStream, node: str) -> None:
    events.record(events.make(StepEvent, node=node, label=f"Running {node}"))


def _message(events: RunEventStream) -> None:
    events.record(events.make(MessageEvent, message_id="m1", content="Retrieval finds documents."))


def _token(events: RunEventStream) -> None:
    events.record(events.make(TokenEvent, message_id="m1", delta="Retrieval"))


STARTED: Seen = (1, "run_started")
STEP: Seen = (2, "step")


@pytest.fixture
def timeline() -> Timeline:
    return []


@pytest.fixture
def events() -> RunEventStream:
    return RunEventStream(
        thread_id="thread-1",
        run_id="run-1",
        last_seq=0,
        reserved_until=100,
        clock=lambda: datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
    )


@pytest.fixture
def store(timeline: Timeline) -> FakeStore:
    return FakeStore(timeline)


@pytest.fixture
async def client(events: RunEventStream, timeline: Timeline) -> AsyncIterator[Client]:
    client = Client(events, timeline)
    yield client
    client.stop()


class FakeDatabase:
    """``Database.write()``: one transaction, as a list the writes in it append to."""

    def __init__(self) -> None:
        self.transactions: list[list[str]] = []
        self.committed_early = False
        """Whether a write committed its transaction with its last statement (PostgreSQL)."""

    @asynccontextmanager
    async def write(self) -> AsyncIterator[list[str]]:
        transaction: list[str] = []
        yield transaction
        self.transactions.append(transaction)

    def committed_with_its_last_statement(self, _transaction: Any) -> bool:
        return self.committed_early


@pytest.fixture
def db() -> FakeDatabase:
    return FakeDatabase()


@pytest.fixture
async def batcher(
    events: RunEventStream, store: FakeStore, db: FakeDatabase
) -> AsyncIterator[ProgressBatcher]:
    async def store_in(
        transaction: Any, rows: list[OutgoingEvent], *, fence_checked: bool = False
    ) -> None:
        transaction.append("events")
        await store(rows)

    batcher = ProgressBatcher(
        events,
        store_in,
        db=cast(Database, db),
        fence=CheckpointFence("thread-1", "run-1", 1),
        latest_only=True,
        delay=DELAY,
    )
    yield batcher
    await _within(batcher.settle())  # no timer outlives the test


async def test_progress_alone_is_neither_stored_nor_sent_at_once(
    events: RunEventStream, store: FakeStore, client: Client, batcher: ProgressBatcher
) -> None:
    _start(events)
    _step(events, "analyze_message")

    await _within(batcher.after_chunk())

    assert store.calls == []
    assert events.unsent_waits_for_a_write
    assert await client.everything(events) == []


async def test_a_message_waits_for_its_steps_checkpoint_and_the_progress_before_it_waits_too(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    """Nothing of it could be sent before the checkpoint's write: the progress costs no write of
    its own, and still goes within the delay if the checkpoint is late."""
    _start(events)
    _step(events, "analyze_message")
    await _within(batcher.after_chunk())
    _message(events)

    await _within(batcher.after_chunk())

    assert store.calls == []
    await asyncio.sleep(0)
    assert client.received == []
    await asyncio.sleep(DELAY * 3)  # the checkpoint is late: the progress goes on its own
    assert store.calls == [[STARTED, STEP]]
    assert await client.received_through(2) == [STARTED, STEP]
    assert [row.seq for row in events.take_durable()] == [3]  # held for the checkpoint
    assert _sent_before_stored(timeline) == []


async def test_a_steps_checkpoint_is_written_with_its_events_in_one_transaction_then_they_are_sent(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    db: FakeDatabase,
    timeline: Timeline,
) -> None:
    _start(events)
    _step(events, "analyze_message")
    await _within(batcher.after_chunk())
    _message(events)
    await _within(batcher.after_chunk())

    async def write_checkpoint(transaction: Any) -> None:
        await asyncio.sleep(0)
        assert client.received == []  # nothing before the write
        transaction.append("checkpoint")

    await _within(batcher.commit_step(write_checkpoint))

    assert db.transactions == [["events", "checkpoint"]]  # one write: the fenced checkpoint last
    assert store.calls == [[STARTED, STEP, (3, "message")]]
    assert await client.received_through(3) == [STARTED, STEP, (3, "message")]
    assert _sent_before_stored(timeline) == []


@pytest.mark.parametrize(
    ("failure", "committed_early"),
    [
        (OSError("the database went away"), False),
        # PostgreSQL: the checkpoint's message committed, but every write in it was fenced.
        (LeaseLostError("the lease moved on"), True),
    ],
)
async def test_a_checkpoint_that_cannot_be_written_takes_its_steps_events_with_it(
    events: RunEventStream,
    client: Client,
    batcher: ProgressBatcher,
    db: FakeDatabase,
    failure: Exception,
    committed_early: bool,
) -> None:
    _start(events)
    await _within(batcher.after_chunk())
    _message(events)

    async def fail(transaction: Any) -> None:
        db.committed_early = committed_early
        raise failure

    with pytest.raises(type(failure)):
        await _within(batcher.commit_step(fail))

    assert not events.has_unstored
    assert events.make(StepEvent, node="answer", label="Answering").seq == 1  # numbers reused
    assert await client.everything(events) == []


async def test_a_step_that_fails_after_its_checkpoint_committed_sends_its_stored_events(
    events: RunEventStream, client: Client, batcher: ProgressBatcher, db: FakeDatabase
) -> None:
    _start(events)
    await _within(batcher.after_chunk())
    _message(events)

    async def commit_then_fail(transaction: Any) -> None:
        transaction.append("checkpoint")
        db.committed_early = True  # the checkpoint's message carried the COMMIT
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await _within(batcher.commit_step(commit_then_fail))

    assert not events.has_unstored
    assert await client.received_through(2) == [STARTED, (2, "message")]


async def test_a_token_after_pending_progress_is_sent_only_once_the_progress_is_stored(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    _start(events)
    _step(events, "answer")
    await _within(batcher.after_chunk())
    _token(events)

    await _within(batcher.after_chunk())

    assert store.calls == [[STARTED, STEP]]  # the token itself is never stored
    # The token takes no number of its own: it carries the step's.
    assert await client.received_first(3) == [STARTED, STEP, (2, "token")]
    assert _sent_before_stored(timeline) == []


async def test_progress_with_no_further_chunk_is_stored_and_sent_on_its_own_after_the_delay(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    _start(events)
    _step(events, "answer")
    await _within(batcher.after_chunk())

    await _within(store.called.wait())

    assert store.calls == [[STARTED, STEP]]
    assert await client.received_through(2) == [STARTED, STEP]
    assert _sent_before_stored(timeline) == []


async def test_events_recorded_while_a_late_store_is_in_flight_are_sent_only_once_stored(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    release = store.hold()
    _start(events)
    await _within(batcher.after_chunk())
    await store.wait_for_calls(1)  # the late store of run_started is in flight
    _step(events, "answer")
    _token(events)  # it cannot be sent before the step: the step is stored at once

    asyncio.get_running_loop().call_soon(release.set)  # once after_chunk waits for it
    await _within(batcher.after_chunk())

    assert store.calls == [[STARTED], [STEP]]
    assert store.most_at_once == 1  # the run's write waited for the late one
    assert await client.received_first(3) == [STARTED, STEP, (2, "token")]
    assert _sent_before_stored(timeline) == []


async def test_a_failed_late_store_keeps_its_rows_for_the_next_write_and_logs_a_warning(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store.failures = 1
    caplog.set_level(logging.WARNING, logger="consentry.runtime.runs.execute._step_batching")
    _start(events)
    _step(events, "answer")
    await _within(batcher.after_chunk())
    await store.wait_for_calls(1)  # the late store, which fails
    _token(events)  # the next chunk that needs the progress stored

    await _within(batcher.after_chunk())

    assert store.calls == [[STARTED, STEP], [STARTED, STEP]]
    assert await client.received_first(3) == [STARTED, STEP, (2, "token")]
    assert _sent_before_stored(timeline) == []
    warnings = [
        r for r in caplog.records if r.name == "consentry.runtime.runs.execute._step_batching"
    ]
    assert [(r.levelno, r.getMessage()) for r in warnings] == [
        (logging.WARNING, "could not store a run's progress events yet")
    ]
    assert (warnings[0].thread_id, warnings[0].run_id) == ("thread-1", "run-1")
    assert warnings[0].exc_info is not None


async def test_settle_cancels_a_pending_timer_and_leaves_the_progress_for_the_runs_own_write(
    events: RunEventStream, store: FakeStore, batcher: ProgressBatcher
) -> None:
    _start(events)
    _step(events, "answer")
    await _within(batcher.after_chunk())

    await _within(batcher.settle())

    with pytest.raises(TimeoutError):  # proving that no late store comes: wait past the delay
        await asyncio.wait_for(store.called.wait(), DELAY * 5)
    assert store.calls == []
    assert [row.seq for row in events.take_durable()] == [1, 2]


async def test_settle_waits_for_a_late_store_in_flight(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    release = store.hold()
    _start(events)
    _step(events, "answer")
    await _within(batcher.after_chunk())
    await store.wait_for_calls(1)

    asyncio.get_running_loop().call_soon(release.set)  # once settle waits for it
    await _within(batcher.settle())

    assert _stored(timeline) == [1, 2]
    assert not events.has_unstored
    assert await client.everything(events) == [STARTED, STEP]


async def test_settle_waits_for_a_late_store_queued_behind_another(
    events: RunEventStream,
    store: FakeStore,
    client: Client,
    batcher: ProgressBatcher,
    timeline: Timeline,
) -> None:
    first, second = store.hold(), store.hold()
    _start(events)
    await _within(batcher.after_chunk())
    await store.wait_for_calls(1)  # the late store of run_started is in flight
    _step(events, "answer")
    await _within(batcher.after_chunk())  # arms the timer again: its late store waits for the first
    asyncio.get_running_loop().call_later(DELAY * 5, first.set)  # after that timer fired
    await store.wait_for_calls(2)  # the second late store (of the step) is in flight

    asyncio.get_running_loop().call_soon(second.set)  # once settle waits for it
    await _within(batcher.settle())

    assert _stored(timeline) == [1, 2]
    assert await client.everything(events) == [STARTED, STEP]


async def test_a_failed_write_of_the_run_discards_the_unsent_events_and_raises(
    events: RunEventStream, store: FakeStore, client: Client, batcher: ProgressBatcher
) -> None:
    store.failures = 1
    _start(events)
    _step(events, "analyze_message")
    await _within(batcher.after_chunk())
    _token(events)

    with pytest.raises(OSError, match="the database is gone"):
        await _within(batcher.after_chunk())

    assert store.calls == [[STARTED, STEP]]
    assert not events.has_unstored
    assert events.make(StepEvent, node="answer", label="Answering").seq == 1  # numbers reused
    assert await client.everything(events) == []
