"""A step's checkpoint and the events it produced commit together (``docs/architecture.md``, "One
write per step"): no event is stored without the checkpoint of its step, and no checkpoint
without its events.

The window this closes: before Consentry had its own checkpointer, a step's ``message`` event was
stored when its chunk arrived, and the step's checkpoint after it, by LangGraph, in a transaction
of its own; a process that died between the two left a message the graph's state never had (a
retry then answered again, after an answer the client had been shown). Here the process "dies"
inside the transaction of the answering step's checkpoint, after the checkpoint's statements and
before the commit: nothing of the step may be stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from langgraph.checkpoint.base import empty_checkpoint

from consentry.storage.checkpoints import (
    READ_KEY,
    RUN_KEY,
    CheckpointFence,
    ConsentrySaver,
    HeadRead,
    TurnStart,
)
from consentry.storage.checkpoints import _operations as checkpoint_operations
from consentry.storage.checkpoints import _pending as pending_writes
from consentry.storage.db.database import DbConnection
from consentry.storage.db.postgres_connection import refused_one_row_change
from consentry.storage.leases import LeaseLostError
from consentry.storage.transcript import TranscriptEntry, add_to_transcript, read_transcript
from consentry_tools.bench.load import CONSENT_FLOW_GRAPH
from tests.sse import chat, kinds, parse_events

QUESTION = "What is retrieval?"
CONSENT_FLOW = dict([CONSENT_FLOW_GRAPH.split("=", 1)])


class ProcessDiedError(Exception):
    """Stands for the process dying: the transaction in flight never commits."""


class _DiesBeforeCommit:
    """A run's committer whose step transaction fails before it commits: after the step's
    events and before its checkpoint, which goes last (on PostgreSQL the checkpoint's message
    carries the COMMIT: there is no later point inside the transaction)."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self.fence = run.fence
        self.latest_only = run.latest_only
        self.keep_turns = run.keep_turns
        self.turn = run.turn
        self.new_thread = run.new_thread
        self.head = run.head

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        async def die_before_the_checkpoint(conn: DbConnection) -> None:
            raise ProcessDiedError

        await self._run.commit_step(die_before_the_checkpoint)


class _FailsAfterCommit(_DiesBeforeCommit):
    """A run's committer whose step fails right after its checkpoint is written (an error or a
    cancellation landing there)."""

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        async def write_then_fail(conn: DbConnection) -> None:
            await write(conn)
            raise ProcessDiedError

        await self._run.commit_step(write_then_fail)


@dataclass(eq=False)  # kept by identity, as a run's own (``ConsentrySaver._held``)
class _Committer:
    """A run's committer as a test makes it (``StepCommitter``): its checkpoints fenced by
    ``fence``, each step in a transaction of ``db``'s of its own."""

    fence: CheckpointFence
    db: Any
    head: HeadRead | None = None
    latest_only: bool = True
    keep_turns: bool = False
    turn: TurnStart | None = None
    new_thread: bool = False

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        async with self.db.write() as conn:
            await write(conn)


def _answered(checkpoint: Any) -> bool:
    messages = checkpoint["channel_values"].get("messages", [])
    return any(getattr(m, "type", None) == "ai" for m in messages)


def _failing_at_the_answers_checkpoint(
    monkeypatch: pytest.MonkeyPatch, committer: type[_DiesBeforeCommit]
) -> list[str]:
    """Every run's write of a checkpoint that holds an answer goes through ``committer``; the
    ids of the checkpoints that were being written."""
    attempted: list[str] = []
    real_aput = ConsentrySaver.aput

    async def aput(self: ConsentrySaver, config: Any, checkpoint: Any, *args: Any) -> Any:
        run = config["configurable"].get(RUN_KEY)
        if run is not None and _answered(checkpoint):
            attempted.append(checkpoint["id"])
            config = {**config, "configurable": {**config["configurable"]}}
            config["configurable"][RUN_KEY] = committer(run)
        return await real_aput(self, config, checkpoint, *args)

    monkeypatch.setattr(ConsentrySaver, "aput", aput)
    return attempted


@pytest.fixture
def dies_at_the_answers_checkpoint(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return _failing_at_the_answers_checkpoint(monkeypatch, _DiesBeforeCommit)


@pytest.fixture
def fails_after_the_answers_checkpoint(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return _failing_at_the_answers_checkpoint(monkeypatch, _FailsAfterCommit)


async def test_a_step_whose_checkpoint_never_commits_leaves_none_of_its_events(
    client: httpx.AsyncClient, db_url: str, dies_at_the_answers_checkpoint: list[str]
) -> None:
    events = await chat(client, {"message": QUESTION})

    # The answer was streamed as tokens, but its message was never stored, so never sent.
    assert kinds(events) == ["run_started", "step", "step", "error", "final"]
    assert dies_at_the_answers_checkpoint  # the answer's checkpoint was being written
    thread_id = events[0].thread_id
    replayed = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": 0})
    assert replayed.status_code == 200, replayed.text
    assert kinds(parse_events(replayed.text)) == kinds(events)
    db = client.services.db  # type: ignore[attr-defined]
    newest = await ConsentrySaver(db, database_url=db_url).aget_tuple(
        {"configurable": {"thread_id": thread_id}}
    )
    assert newest is not None
    assert newest.checkpoint["id"] not in dies_at_the_answers_checkpoint
    assert not _answered(newest.checkpoint)
    transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
    assert [m["role"] for m in transcript] == ["user"]


async def test_a_step_that_fails_after_its_checkpoint_sends_what_it_stored_and_only_that(
    client: httpx.AsyncClient, db_url: str, fails_after_the_answers_checkpoint: list[str]
) -> None:
    """On SQLite the failure comes before the commit (the checkpoint is written with it):
    nothing of the step is stored or sent. On PostgreSQL the checkpoint's message committed the
    step: its events are stored, so they are sent before the run's error. Either way the stream
    and its replay are the same."""
    events = await chat(client, {"message": QUESTION})

    thread_id = events[0].thread_id
    stored = db_url.startswith("postgresql")
    expected = ["run_started", "step", "step", *(["message"] if stored else []), "error", "final"]
    assert kinds(events) == expected
    replayed = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": 0})
    assert replayed.status_code == 200, replayed.text
    assert kinds(parse_events(replayed.text)) == expected
    db = client.services.db  # type: ignore[attr-defined]
    newest = await ConsentrySaver(db, database_url=db_url).aget_tuple(
        {"configurable": {"thread_id": thread_id}}
    )
    assert newest is not None
    assert (newest.checkpoint["id"] in fails_after_the_answers_checkpoint) is stored
    assert _answered(newest.checkpoint) is stored


async def _rows(client: httpx.AsyncClient, table: str, thread_id: str) -> int:
    query = sa.text(f"SELECT count(*) FROM {table} WHERE thread_id = :t")
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        return int(await conn.scalar(query, {"t": thread_id}))


@pytest.mark.parametrize("retention", ["latest", "all"])
async def test_a_finished_steps_task_writes_go_with_its_checkpoint_or_not_at_all(
    open_client: Callable[..., Any], retention: str
) -> None:
    """With ``latest`` a step's checkpoint replaces its tasks' pending writes, so they are never
    written; with ``all`` they are written with it (LangGraph's history shows each step's
    results)."""
    async with open_client(checkpoint_retention=retention) as client:
        events = await chat(client, {"message": QUESTION})
        assert events[-1].reason == "completed"  # type: ignore[union-attr]
        thread_id = events[0].thread_id
        checkpoints = await _rows(client, "graph_checkpoints", thread_id)
        writes = await _rows(client, "graph_checkpoint_writes", thread_id)

    if retention == "latest":
        assert (checkpoints, writes) == (1, 0)
    else:
        assert checkpoints >= 3  # the input, and a step each for classifying and answering
        assert writes >= checkpoints - 1  # every step's tasks wrote something


@dataclass(eq=False)
class _WritesAMessageWithTheStep(_Committer):
    """A run's committer whose step transaction also adds a user's message to the transcript
    before the checkpoint, unfenced, as ``ProgressBatcher.commit_step`` writes the messages a
    run was given with the step's events."""

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        async with self.db.write() as conn:
            entry = TranscriptEntry("msg-stale", "user", "typed before the replica froze")
            await add_to_transcript(conn, self.fence.thread_id, [entry], now=datetime.now(UTC))
            await write(conn)


@pytest.mark.parametrize(
    "stale_committer",
    [_Committer, _WritesAMessageWithTheStep],
    ids=["checkpoint-alone", "with-a-users-message"],
)
async def test_a_checkpoint_written_under_a_lease_that_moved_on_is_refused_and_nothing_stored(
    client: httpx.AsyncClient, db_url: str, stale_committer: type[_Committer]
) -> None:
    """The fence, on both databases (on SQLite the write goes with the transaction's commit). A
    replica that froze past its lease wakes and writes its step: the fence refuses the
    checkpoint, and nothing else of its transaction is stored either. On PostgreSQL the
    checkpoint's statement goes with the ``COMMIT`` in one message: a refusal read as a row
    count after it let the transaction's other writes (a user's message in the transcript, found
    by ``consentry chaos --freeze-rate``) commit under the lease of another run."""
    events = await chat(client, {"message": QUESTION})
    thread_id, run_id = events[0].thread_id, events[0].run_id
    db = client.services.db  # type: ignore[attr-defined]
    saver = ConsentrySaver(db, database_url=db_url)
    config: Any = {"configurable": {"thread_id": thread_id}}
    before = await saver.aget_tuple(config)
    assert before is not None
    async with db.read() as conn:
        transcript = await read_transcript(conn, thread_id)

    ended_run = stale_committer(CheckpointFence(thread_id, run_id, 1), db)  # no active run now
    stale = {**before.config["configurable"], RUN_KEY: ended_run}
    with pytest.raises(LeaseLostError):
        await saver.aput({"configurable": stale}, empty_checkpoint(), {"step": 99}, {})

    after = await saver.aget_tuple(config)
    assert after is not None
    assert after.config == before.config
    assert after.checkpoint == before.checkpoint
    async with db.read() as conn:
        assert await read_transcript(conn, thread_id) == transcript


async def test_a_runs_first_read_of_its_threads_newest_checkpoint_is_answered_with_a_kept_read(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """A read with a ``HeadRead`` in its config keeps the rows of the newest checkpoint; a run
    given it (``StepCommitter.head``) has its first read of the newest checkpoint answered with
    them, decoded again (equal, nothing shared), without a statement: the thread's checkpoints
    are deleted before it, and still it finds the kept one. Its next read reads (nothing now),
    and a run whose first read is of a given checkpoint reads that and drops the kept rows."""
    events = await chat(client, {"message": QUESTION})
    thread_id, run_id = events[0].thread_id, events[0].run_id
    db = client.services.db  # type: ignore[attr-defined]
    saver = ConsentrySaver(db, database_url=db_url)
    kept = HeadRead(thread_id)
    read = await saver.aget_tuple({"configurable": {"thread_id": thread_id, READ_KEY: kept}})
    assert read is not None
    assert kept.rows
    read_id = read.config["configurable"]["checkpoint_id"]
    await saver.adelete_thread(thread_id)

    fence = CheckpointFence(thread_id, run_id, 1)
    run, other = _Committer(fence, db, head=kept), _Committer(fence, db, head=kept)
    config: Any = {"configurable": {"thread_id": thread_id, RUN_KEY: run}}
    first = await saver.aget_tuple(config)
    again = await saver.aget_tuple(config)
    given: Any = {"configurable": {**config["configurable"], RUN_KEY: other}}
    given["configurable"]["checkpoint_id"] = read_id
    older = await saver.aget_tuple(given)
    after = await saver.aget_tuple({"configurable": {**given["configurable"], "checkpoint_id": ""}})

    assert first == read
    assert first is not None
    assert first.checkpoint is not read.checkpoint
    assert first.metadata is not read.metadata
    assert first.pending_writes is not read.pending_writes
    assert (run.head, run.turn) == (None, TurnStart(read_id))
    assert again is None
    assert (older, after, other.head) == (None, None, None)


async def test_pending_writes_are_fenced_and_each_key_keeps_the_value_the_graph_gave_last(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """An interrupt or an error is written at once, fenced, on both databases (on PostgreSQL the
    fence, the writes and the commit are one message): refused under a lease that moved on, with
    nothing else of its transaction (a user's message for the transcript) stored; under the
    thread's lease, a special channel written twice in one call keeps its last value, as one
    statement a write would leave it."""
    events = await chat(client, {"message": QUESTION})
    thread_id, run_id = events[0].thread_id, events[0].run_id
    db = client.services.db  # type: ignore[attr-defined]
    saver = ConsentrySaver(db, database_url=db_url)
    saved = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    assert saved is not None
    async with db.read() as conn:
        transcript = await read_transcript(conn, thread_id)

    def under(token: int, committer: type[_Committer] = _Committer) -> Any:
        run = committer(CheckpointFence(thread_id, run_id, token), db)
        return {"configurable": {**saved.config["configurable"], RUN_KEY: run}}

    with pytest.raises(LeaseLostError):
        await saver.aput_writes(under(1), [("__error__", "stale")], "task-1")
    assert await _rows_of_channel(client, thread_id, "__error__") == 0
    stale = under(1, _WritesAMessageWithTheStep)  # a step's held writes, and a user's message
    await saver.aput_writes(stale, [("answer", "stale")], "task-1")
    with pytest.raises(LeaseLostError):
        await saver.acommit_held(stale["configurable"][RUN_KEY])
    assert await _rows_of_channel(client, thread_id, "answer") == 0
    async with db.read() as conn:
        assert await read_transcript(conn, thread_id) == transcript

    async with db.write() as conn:  # the run holds the thread again, with token 7
        await conn.execute(
            sa.text("UPDATE threads SET active_run_id = :r, fencing_token = 7 WHERE id = :t"),
            {"r": run_id, "t": thread_id},
        )
    await saver.aput_writes(under(7), [("__error__", "first"), ("__error__", "last")], "task-1")
    again = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    assert again is not None
    assert [w for w in again.pending_writes or [] if w[1] == "__error__"] == [
        ("task-1", "__error__", "last")
    ]


async def test_a_thread_created_with_its_run_is_not_read_before_the_run_writes_it(
    client: httpx.AsyncClient, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new conversation's thread cannot have a checkpoint yet: its run does not read one (a
    transaction and a round trip saved). The next message on it reads what the first wrote."""
    read: list[str] = []
    real = checkpoint_operations.get_rows

    def get_rows(*args: Any, **kwargs: Any) -> Any:
        read.append(kwargs["thread_id"])
        return real(*args, **kwargs)

    monkeypatch.setattr(checkpoint_operations, "get_rows", get_rows)
    first = await chat(client, {"message": QUESTION})
    thread_id = first[0].thread_id
    assert read == []
    second = await chat(client, {"thread_id": thread_id, "message": "And what is RAG?"})
    assert second[-1].reason == "completed"  # type: ignore[union-attr]
    assert read == [thread_id]
    saver = ConsentrySaver(client.services.db, database_url=db_url)  # type: ignore[attr-defined]
    saved = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    assert saved is not None
    humans = [m for m in saved.checkpoint["channel_values"]["messages"] if m.type == "human"]
    assert [m.content for m in humans] == [QUESTION, "And what is RAG?"]


@pytest.fixture
def written_at_once(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The channels of the pending writes the checkpointer writes on their own (not held)."""
    channels: list[str] = []
    real = pending_writes.put_writes

    def put_writes(sql: Any, rows: list[tuple[Any, ...]], **kwargs: Any) -> Any:
        channels.extend(str(row[6]) for row in rows)
        return real(sql, rows, **kwargs)

    monkeypatch.setattr(pending_writes, "put_writes", put_writes)  # a task's, at once
    return channels


@pytest.mark.parametrize("retention", ["latest", "all"])
async def test_a_decisions_resume_value_goes_with_the_next_checkpoint_not_a_write_of_its_own(
    open_client: Callable[..., Any], retention: str, written_at_once: list[str]
) -> None:
    """Nothing is written at once: the interrupt goes with the run's end (with the consent that
    asks it), and the resume value is held like a task's results: with ``latest`` the step's
    checkpoint replaces it, with ``all`` it is written with that checkpoint (LangGraph's history
    keeps it)."""
    async with open_client(graphs=CONSENT_FLOW, checkpoint_retention=retention) as client:
        asked = await chat(client, {"message": "Rename it", "graph": "consent_flow"})
        consent = next(e for e in asked if e.type == "consent")
        done = await chat(
            client,
            {
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
        resumes = await _rows_of_channel(client, consent.thread_id, "__resume__")

    assert done[-1].reason == "completed"  # type: ignore[union-attr]
    assert written_at_once == []
    assert resumes == (0 if retention == "latest" else 1)


async def _rows_of_channel(client: httpx.AsyncClient, thread_id: str, channel: str) -> int:
    query = sa.text(
        "SELECT count(*) FROM graph_checkpoint_writes WHERE thread_id = :t AND channel = :c"
    )
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        return int(await conn.scalar(query, {"t": thread_id, "c": channel}))


@dataclass(eq=False)
class _CountingCommitter(_Committer):
    """A test's committer that counts the step transactions it opens."""

    transactions: int = 0

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        self.transactions += 1
        await super().commit_step(write)


async def _held_thread(client: httpx.AsyncClient, db_url: str, *, token: int) -> Any:
    """A thread with a checkpoint, held by its last run with ``token``: the saver, the newest
    checkpoint, and a run's config on it (``under(token)``, a committer of its own each)."""
    events = await chat(client, {"message": QUESTION})
    thread_id, run_id = events[0].thread_id, events[0].run_id
    db = client.services.db  # type: ignore[attr-defined]
    async with db.write() as conn:
        await conn.execute(
            sa.text("UPDATE threads SET active_run_id = :r, fencing_token = :k WHERE id = :t"),
            {"r": run_id, "k": token, "t": thread_id},
        )
    saver = ConsentrySaver(db, database_url=db_url)
    newest = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    assert newest is not None

    def under(fencing_token: int) -> tuple[Any, _CountingCommitter]:
        run = _CountingCommitter(
            CheckpointFence(thread_id, run_id, fencing_token), db, latest_only=False
        )
        return {"configurable": {**newest.config["configurable"], RUN_KEY: run}}, run

    return saver, newest, under


def _next_checkpoint() -> Any:
    return empty_checkpoint()  # its id after every one before it (ids sort by time)


def _then(config: Any, saved: Any) -> Any:
    """The run's config at the checkpoint it just saved (as LangGraph passes it on)."""
    return {"configurable": {**config["configurable"], **saved["configurable"]}}


async def _ids(saver: ConsentrySaver, thread_id: str) -> list[str]:
    config: Any = {"configurable": {"thread_id": thread_id}}
    return [c.config["configurable"]["checkpoint_id"] async for c in saver.alist(config)]


async def test_a_runs_input_checkpoint_goes_in_the_transaction_of_its_next_checkpoint(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """The input checkpoint of a run's thread is not a transaction of its own: it waits for the
    run's next write (nothing but LangGraph's ``__start__`` task runs between them) and goes
    first in its transaction, fenced by the same lease. A subgraph's is written at once."""
    saver, newest, under = await _held_thread(client, db_url, token=3)
    thread_id = newest.config["configurable"]["thread_id"]
    before = await _ids(saver, thread_id)
    config, run = under(3)
    given = _next_checkpoint()
    at_input = await saver.aput(config, given, {"source": "input", "step": -1}, {})
    assert await _ids(saver, thread_id) == before  # held
    assert run.transactions == 0

    then = _next_checkpoint()
    await saver.aput(_then(config, at_input), then, {"source": "loop", "step": 0}, {})
    assert await _ids(saver, thread_id) == [then["id"], given["id"], *before]
    assert run.transactions == 1

    sub_config, sub_run = under(3)
    sub_config["configurable"]["checkpoint_ns"] = "child:1"
    sub = _next_checkpoint()
    await saver.aput(sub_config, sub, {"source": "input", "step": -1}, {})
    assert sub_run.transactions == 1


async def test_a_held_input_checkpoint_under_a_lease_that_moved_on_is_stored_with_nothing(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """On PostgreSQL the held input goes unread, ahead of the next checkpoint's statement, which
    reads the fence: a lease that moved on refuses both, and neither is stored."""
    saver, newest, under = await _held_thread(client, db_url, token=3)
    thread_id = newest.config["configurable"]["thread_id"]
    before = await _ids(saver, thread_id)
    config, _ = under(2)  # a stale run's
    at_input = await saver.aput(config, _next_checkpoint(), {"source": "input", "step": -1}, {})
    with pytest.raises(LeaseLostError):
        await saver.aput(_then(config, at_input), _next_checkpoint(), {"source": "loop"}, {})
    assert await _ids(saver, thread_id) == before


async def test_what_a_run_holds_goes_before_an_error_or_in_its_next_transaction(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """An interrupt is held with the input checkpoint, and both go in the transaction the run
    gives them (its end, with the consent: ``write_held_in``), taken by it like its events (a
    transaction that fails loses both); an error is written at once,
    the held input first, in its transaction; a run that stops with nothing more to write
    stores what it holds with its end (``acommit_held``); one that stores nothing more
    (cancelled, its lease lost) drops it."""
    saver, newest, under = await _held_thread(client, db_url, token=3)
    thread_id = newest.config["configurable"]["thread_id"]
    db = client.services.db  # type: ignore[attr-defined]
    before = await _ids(saver, thread_id)

    config, run = under(3)
    lost = _next_checkpoint()
    at_input = _then(config, await saver.aput(config, lost, {"source": "input"}, {}))
    await saver.aput_writes(at_input, [("__interrupt__", "lost")], "task-1")
    with pytest.raises(ProcessDiedError):
        await _write_held_and_die(saver, db, run)
    async with db.write() as conn:  # taken by the transaction that failed: lost with it
        await saver.write_held_in(conn, run, checked_later=False)
    assert await _ids(saver, thread_id) == before

    config, run = under(3)
    asked = _next_checkpoint()
    at_input = _then(config, await saver.aput(config, asked, {"source": "input"}, {}))
    await saver.aput_writes(at_input, [("__interrupt__", "asked")], "task-1")
    assert await _ids(saver, thread_id) == before  # both held
    async with db.write() as conn:
        await saver.write_held_in(conn, run, checked_later=False)
    assert await _ids(saver, thread_id) == [asked["id"], *before]
    stored = await saver.aget_tuple(at_input)
    assert stored is not None
    assert stored.pending_writes == [("task-1", "__interrupt__", "asked")]
    assert run.transactions == 0

    config, run = under(3)
    failed = _next_checkpoint()
    at_input = _then(config, await saver.aput(config, failed, {"source": "input"}, {}))
    await saver.aput_writes(at_input, [("__error__", "boom")], "task-2")
    assert await _ids(saver, thread_id) == [failed["id"], asked["id"], *before]

    config, run = under(3)
    ended = _next_checkpoint()
    await saver.aput(config, ended, {"source": "input", "step": -1}, {})
    await saver.acommit_held(run)
    assert await _ids(saver, thread_id) == [ended["id"], failed["id"], asked["id"], *before]
    assert run.transactions == 1

    config, run = under(3)
    await saver.aput(config, _next_checkpoint(), {"source": "input"}, {})
    saver.forget_held(run)
    await saver.acommit_held(run)
    assert await _ids(saver, thread_id) == [ended["id"], failed["id"], asked["id"], *before]
    assert run.transactions == 0


async def _write_held_and_die(saver: ConsentrySaver, db: Any, run: Any) -> None:
    async with db.write() as conn:
        await saver.write_held_in(conn, run, checked_later=False)
        raise ProcessDiedError  # the transaction never commits


async def test_what_a_run_holds_is_not_stored_under_a_lease_that_moved_on(
    client: httpx.AsyncClient, db_url: str
) -> None:
    """Held writes sent unread, for a later statement of the run's end to check the lease
    (``checked_later``), are fenced themselves: under a lease that moved on they write nothing,
    and on PostgreSQL their refused fence fails the transaction's commit (as a refused release
    does), so nothing else it holds is stored either; on SQLite they are checked there and
    then."""
    saver, newest, under = await _held_thread(client, db_url, token=3)
    thread_id = newest.config["configurable"]["thread_id"]
    db = client.services.db  # type: ignore[attr-defined]
    before = await _ids(saver, thread_id)
    config, run = under(2)  # a stale run's
    at_input = _then(config, await saver.aput(config, _next_checkpoint(), {"source": "input"}, {}))
    await saver.aput_writes(at_input, [("__interrupt__", "asked"), ("answer", 1)], "task-1")
    with pytest.raises((LeaseLostError, sa.exc.DataError)) as refused:
        async with db.write() as conn:
            await saver.write_held_in(conn, run, checked_later=True)
    if db.dialect == "sqlite":
        assert refused.type is LeaseLostError
    else:
        assert refused_one_row_change(refused.value)
    assert await _ids(saver, thread_id) == before
    assert await _rows_of_channel(client, thread_id, "__interrupt__") == 0
