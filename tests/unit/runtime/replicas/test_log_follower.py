"""``follow_log``: a follower reads the stored events whenever it is woken, until the run's
``final``, or until the run is no longer going and nothing new came. On PostgreSQL each statement
of a read sees its own snapshot, so the run can end between the events' read and the status's:
the follower then reads the events once more and sends the run's last ones (it stopped after
the first ``step`` of a worker's run in CI before that)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest

from consentry.runtime.replicas._log_follower import follow_log
from consentry.runtime.replicas._notifications import EventNotifications
from consentry.storage import events as events_repo
from consentry.storage import runs as runs_repo
from consentry.storage.db.database import Database
from consentry.storage.events import StoredEvent

THREAD_ID, RUN_ID = "thread-1", "run-1"
WAIT_SECONDS = 5.0


def _row(seq: int, kind: str) -> StoredEvent:
    return StoredEvent(seq=seq, run_id=RUN_ID, type=kind, data="{}", outputs=None)


class _Db:
    @asynccontextmanager
    async def read(self) -> AsyncIterator[None]:
        yield None


class _Set(asyncio.Event):
    """New events are always there to read (each read is scripted)."""

    def clear(self) -> None:
        pass


class _AlwaysWoken:
    @asynccontextmanager
    async def watch(self, _thread_id: str) -> AsyncIterator[asyncio.Event]:
        event = _Set()
        event.set()
        yield event


def _script(
    monkeypatch: pytest.MonkeyPatch, reads: list[list[StoredEvent]], statuses: list[str]
) -> None:
    """What each read of the log and of the run's status finds, in turn."""

    async def events_after(_conn: Any, _thread_id: str, after: int, **_: Any) -> list[StoredEvent]:
        return [row for row in reads.pop(0) if row.seq > after]

    async def run_status(_conn: Any, _run_id: str) -> str:
        return statuses.pop(0)

    async def recovery_of(_conn: Any, _run_id: str) -> None:
        return None

    monkeypatch.setattr(events_repo, "events_after", events_after)
    monkeypatch.setattr(runs_repo, "run_status", run_status)
    monkeypatch.setattr(runs_repo, "recovery_of", recovery_of)


async def _follow(
    *, after_seq: int = 0, graph_modes: frozenset[str] = frozenset()
) -> list[tuple[int, str]]:
    followed = follow_log(
        cast(Database, _Db()),
        cast(EventNotifications, _AlwaysWoken()),
        thread_id=THREAD_ID,
        run_id=RUN_ID,
        after_seq=after_seq,
        graph_modes=graph_modes,
    )
    async with asyncio.timeout(WAIT_SECONDS):
        return [(event.seq, event.type) async for event in followed]


async def _followed() -> list[str]:
    return [kind for _, kind in await _follow()]


async def test_a_run_that_ended_between_the_two_reads_is_followed_to_its_final(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = [_row(1, "run_started"), _row(2, "step")]
    ended = [*started, _row(3, "step"), _row(4, "message"), _row(5, "final")]
    # The events read before the run's end committed, its status after.
    _script(monkeypatch, reads=[started, started, ended], statuses=["ended"])
    assert await _followed() == ["run_started", "step", "step", "message", "final"]


async def test_a_run_no_longer_going_with_nothing_new_ends_the_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that stopped without a ``final`` (its process lost the lease and the run was not
    continued): the follower stops once the log has nothing more."""
    started = [_row(1, "run_started")]
    _script(monkeypatch, reads=[started, [], []], statuses=["ended"])
    assert await _followed() == ["run_started"]


async def test_the_outputs_a_run_kept_come_before_their_event_and_not_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A join after event 1 may have had the outputs numbered 1: from event 2's, none again."""
    kept = "graph:values {}\ngraph:updates {}"
    rows = [
        _row(1, "run_started"),
        StoredEvent(seq=2, run_id=RUN_ID, type="step", data="{}", outputs=kept),
        StoredEvent(seq=3, run_id=RUN_ID, type="final", data="{}", outputs=kept),
    ]
    _script(monkeypatch, reads=[rows], statuses=[])
    got = await _follow(after_seq=1, graph_modes=frozenset({"values"}))
    assert got == [(2, "step"), (2, "graph:values"), (3, "final")]
