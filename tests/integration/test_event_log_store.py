"""``storage.events.insert_events``: a run's events are stored exactly as serialized (any text:
quotes, backslashes, newlines, non-ASCII, JSON inside JSON), only while the run holds the lease;
a stale fencing token stores none of them (refused, or, when the caller's transaction checks the
lease itself, nothing written for it to roll back). On both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from consentry.principal import Principal
from consentry.storage.db.database import Database
from consentry.storage.events import StoredEvent, events_after, insert_events, run_events
from consentry.storage.leases import LeaseLostError, claim_thread
from consentry.storage.tables import threads
from tests.integration.stored_threads import add_thread

OWNER = Principal("acme", "ada")
THREAD_ID = "thread-1"
RUN_ID = "run-1"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
AWKWARD = [
    '{"type": "message", "content": "Ada said \\"hi\\" \\\\ and left"}',
    '{"type": "token", "text": "line one\\nline two\\ttabbed"}',
    '{"type": "message", "content": "Grüße, café, 数据, 🙂, naïve"}',
    "not JSON at all: ' single quotes '' doubled, $$dollars$$, %(name)s, %s, ? and :p_id",
]


_NUMBERED = list(enumerate(AWKWARD, start=1))


def _kept(seq: int, data: str) -> str | None:
    """The graph outputs a resumable run keeps with an event: every other one has some."""
    return f"graph:values {data}\ngraph:messages {data}" if seq % 2 else None


@dataclass(frozen=True)
class _Run:
    thread_id: str
    run_id: str


@dataclass(frozen=True)
class _Event:
    seq: int
    type: str
    data: str
    outputs: str | None = None


@pytest_asyncio.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    await database.open()
    try:
        await database.migrate()
        yield database
    finally:
        await database.close()


async def _claimed(db: Database) -> int:
    """A thread claimed by ``RUN_ID``: its fencing token."""
    async with db.write() as conn:
        await add_thread(conn, OWNER, THREAD_ID, now=T0)
        claim = await claim_thread(
            conn,
            THREAD_ID,
            run_id=RUN_ID,
            expected=("idle",),
            reserve=10,
            lease_owner="this-process",
            lease_expires_at=T0 + timedelta(seconds=30),
            now=T0,
        )
    assert claim is not None
    return claim.fencing_token


async def _stored(db: Database) -> list[StoredEvent]:
    async with db.read() as conn:
        return await run_events(conn, THREAD_ID, RUN_ID)


async def _insert(db: Database, *, fencing_token: int, fence_checked: bool = False) -> None:
    """The run's events, each with an awkward text, in a transaction of their own."""
    async with db.write() as conn:
        await insert_events(
            conn,
            _Run(THREAD_ID, RUN_ID),
            [_Event(seq, "message", data, _kept(seq, data)) for seq, data in _NUMBERED],
            fencing_token=fencing_token,
            now=T0,
            fence_checked=fence_checked,
        )


@pytest.mark.parametrize("fence_checked", [False, True])
async def test_events_are_stored_exactly_as_serialized(db: Database, fence_checked: bool) -> None:
    await _insert(db, fencing_token=await _claimed(db), fence_checked=fence_checked)
    stored = await _stored(db)
    assert [(e.seq, e.run_id, e.type, e.data, e.outputs) for e in stored] == [
        (seq, RUN_ID, "message", data, _kept(seq, data)) for seq, data in _NUMBERED
    ]


async def test_a_stale_token_stores_none_of_the_events(db: Database) -> None:
    token = await _claimed(db)
    with pytest.raises(LeaseLostError):
        await _insert(db, fencing_token=token - 1)
    # Checked by the caller's transaction instead: nothing is written for it to roll back.
    async with db.write() as conn:  # another process takes the run over: a new token
        await conn.execute(
            threads.update()
            .where(threads.c.id == THREAD_ID)
            .values(fencing_token=threads.c.fencing_token + 1)
        )
    await _insert(db, fencing_token=token, fence_checked=True)
    assert await _stored(db) == []


async def test_a_reader_reads_the_kept_outputs_only_when_it_asks_for_them(db: Database) -> None:
    await _insert(db, fencing_token=await _claimed(db))
    async with db.read() as conn:
        plain = await events_after(conn, THREAD_ID, 0)
        kept = await events_after(conn, THREAD_ID, 0, with_outputs=True)

    assert [e.outputs for e in plain] == [None] * len(AWKWARD)
    assert [e.outputs for e in kept] == [_kept(seq, data) for seq, data in _NUMBERED]
    assert [e.data for e in plain] == [e.data for e in kept]
