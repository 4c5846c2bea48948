"""What a conversation costs PostgreSQL, counted: round trips, write transactions and reads.

A conversation is the bench's (``consentry bench --graph consent_flow``): a message that reaches
a consent, then the decision that resumes the graph to its end, through ``/v1/chat``. On
PostgreSQL a round trip through psycopg is the largest cost of a statement, so their number is a
budget: a change that adds one fails here, and one that saves one lowers the figures below
(issue 37; ``docs/performance.md``). Background work (the lease heartbeat, the sweepers, the
schedulers) is left out: it runs on its own clock, not a conversation's.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import psycopg
import pytest
import sqlalchemy as sa

from consentry.runtime.runs.start._launcher import Launcher
from consentry.storage.approvals import decide_approval
from consentry.storage.db import idle_checks
from consentry.storage.db.database import Database
from consentry_tools.bench.load import CONSENT_FLOW_GRAPH
from tests.postgres import PostgresCluster
from tests.sse import chat
from tests.statements_sent import statement_words

CONSENT_FLOW = dict([CONSENT_FLOW_GRAPH.split("=", 1)])

BACKGROUND = frozenset(
    {
        "lease-heartbeat",
        "event-notifications",
        "cron-scheduler",
        "consent-expiry-sweeper",
        "webhook-sender",
        "run-takeover",
        "run-worker",
    }
)
"""The tasks whose round trips are not a conversation's."""

ROUND_TRIPS = {"message": 6, "decision": 10}
"""A conversation's round trips on PostgreSQL, by request (at ``b88c483``: 10 and 16; at
``9266aef``, before a run's input checkpoint went with its first step's, its interrupt with its
closing transaction and a decision's compare-and-set with its claim's transaction: 8 and 11)."""
WRITES = {"message": 5, "decision": 5}
"""Its write transactions that sent anything (a ``BEGIN``)."""
CHECKOUTS = {"message": 5, "decision": 9}
"""Its transactions: ``Database.read()``, ``write()`` and ``lease_write()`` handed out."""


@pytest.fixture
def db_url(postgres: PostgresCluster) -> str:
    return postgres.new_database(migrated=True)


class _Counts:
    def __init__(self) -> None:
        self.messages: list[list[str]] = []
        self.checkouts = 0

    def round_trips(self) -> int:
        return len(self.messages)

    def writes(self) -> int:
        return sum(1 for message in self.messages if message[0] == "BEGIN")

    def statements(self) -> Counter[str]:
        return Counter(word for message in self.messages for word in message)


def _counted() -> bool:
    task = asyncio.current_task()
    return task is None or task.get_name() not in BACKGROUND


@contextmanager
def _counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], _Counts]]:
    """Count every round trip psycopg makes and every transaction handed out, from conversation
    tasks, into the counts the yielded function starts afresh."""
    current = [_Counts()]
    execute = psycopg.AsyncCursor.execute
    executemany = psycopg.AsyncCursor.executemany
    commit, rollback = psycopg.AsyncConnection.commit, psycopg.AsyncConnection.rollback

    def sent(query: Any) -> None:
        if _counted():
            words = statement_words(str(query))
            if words:  # not a statement's first preparing (once a process)
                current[0].messages.append(words)

    async def executed(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        sent(query)
        return await execute(self, query, *args, **kw)

    async def executed_many(
        self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kw: Any
    ) -> Any:
        sent(query)  # one pipeline, one round trip
        return await executemany(self, query, *args, **kw)

    def ended(word: str, end: Any) -> Any:
        async def ending(self: psycopg.AsyncConnection[Any]) -> None:
            if self.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                sent(word)  # psycopg sends nothing when no transaction is open
            await end(self)

        return ending

    def checked_out(open_transaction: Any) -> Any:
        @asynccontextmanager
        async def opened(self: Database, *args: Any, **kw: Any) -> AsyncIterator[Any]:
            if _counted():
                current[0].checkouts += 1
            async with open_transaction(self, *args, **kw) as conn:
                yield conn

        return opened

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", executed)
    monkeypatch.setattr(psycopg.AsyncCursor, "executemany", executed_many)
    monkeypatch.setattr(psycopg.AsyncConnection, "commit", ended("COMMIT", commit))
    monkeypatch.setattr(psycopg.AsyncConnection, "rollback", ended("ROLLBACK", rollback))
    for name in ("read", "write", "lease_write"):
        monkeypatch.setattr(Database, name, checked_out(getattr(Database, name)))
    # A pooled connection idle for a while is pinged before use: not a conversation's cost.
    monkeypatch.setattr(idle_checks, "IDLE_CHECK_SECONDS", 3600.0)

    def start() -> _Counts:
        current[0] = _Counts()
        return current[0]

    yield start


async def _conversation(client: httpx.AsyncClient, counts: Callable[[], _Counts]) -> dict[str, Any]:
    asking = counts()
    asked = await chat(client, {"message": "Rename it", "graph": "consent_flow"})
    consent = next(e for e in asked if e.type == "consent")
    deciding = counts()
    done = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    assert done[-1].reason == "completed"  # type: ignore[union-attr]
    return {"message": asking, "decision": deciding}


async def test_a_conversation_on_postgres_makes_no_more_round_trips_than_its_budget(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with _counting(monkeypatch) as counts:
        async with open_client(graphs=CONSENT_FLOW) as client:
            await _conversation(client, counts)  # the first: plans and caches filled
            measured = [await _conversation(client, counts) for _ in range(3)]

    for conversation in measured:
        by_request = {
            request: (c.round_trips(), c.writes(), c.checkouts, dict(c.statements()))
            for request, c in conversation.items()
        }
        assert {r: v[:3] for r, v in by_request.items()} == {
            r: (ROUND_TRIPS[r], WRITES[r], CHECKOUTS[r]) for r in ROUND_TRIPS
        }, by_request


@pytest.mark.parametrize("cap", [None, 0], ids=["with the tenant's count", "with the claim"])
def _approval_of(consent: Any) -> dict[str, Any]:
    """The decision that approves ``consent``, as ``/v1/chat`` takes it."""
    return {
        "thread_id": consent.thread_id,
        "resume": {"approval_id": consent.approval_id, "decision": "approve"},
    }


@pytest.mark.parametrize("cap", [None, 0], ids=["with the tenant's count", "with the claim"])
async def test_a_decision_whose_compare_and_set_loses_in_its_claims_transaction_is_told_who_won(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, cap: int | None
) -> None:
    """On PostgreSQL a decision's compare-and-set goes unread in the next message of its claim's
    transaction (the tenant's count of active runs, or with no cap the claim itself): when
    another decision won the consent between the request's reads and that message (here, just
    before it), the message fails and nothing of it is stored, and the request is answered as a
    lost race is (409 ``already_decided``, naming the winner), not as a refused claim or a 500.
    Were the compare-and-set sent on its own again, the other decision would wait for its row
    lock and the request would not end: bounded."""
    real_claim = Launcher.claim

    async def another_tab_decides_first(self: Launcher, *args: Any, **kwargs: Any) -> Any:
        consent = asked[-2]
        async with self.db.write() as conn:
            won = await decide_approval(
                conn,
                consent.approval_id,  # type: ignore[union-attr]
                status="rejected",
                decided_by="local",
                decision={"decision": "reject", "comment": "the other tab"},
                now=self.clock(),
            )
        assert won
        return await real_claim(self, *args, **kwargs)

    settings = {} if cap is None else {"max_active_runs_per_tenant": cap}
    async with open_client(graphs=CONSENT_FLOW, **settings) as client:
        asked = await chat(client, {"message": "Rename it", "graph": "consent_flow"})
        consent = asked[-2]
        assert consent.type == "consent"
        monkeypatch.setattr(Launcher, "claim", another_tab_decides_first)
        async with asyncio.timeout(30):
            lost = await client.post("/v1/chat", json=_approval_of(consent))
        monkeypatch.setattr(Launcher, "claim", real_claim)
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        audit = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]

    assert lost.status_code == 409, lost.text
    error = lost.json()["error"]
    assert error["code"] == "already_decided"
    assert error["details"]["decided"]["decision"] == "reject"
    actions = [r["action"] for r in audit]
    assert actions.count("run_started") == 1  # the message's: the losing request claimed nothing
    assert actions.count("consent_decided") == 0  # its record went with it
    assert thread["status"] != "running"


async def test_a_decision_whose_thread_is_deleted_before_its_claims_transaction_is_told_so(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consent's thread deleted between the request's reads and its compare-and-set (which
    then changes no row, its approval gone with the thread): 404 ``approval_not_found``, not a
    500."""
    real_claim = Launcher.claim

    async def the_thread_is_deleted_first(self: Launcher, *args: Any, **kwargs: Any) -> Any:
        async with self.db.write() as conn:
            await conn.execute(
                sa.text("DELETE FROM threads WHERE id = :t"), {"t": asked[0].thread_id}
            )
        return await real_claim(self, *args, **kwargs)

    async with open_client(graphs=CONSENT_FLOW) as client:
        asked = await chat(client, {"message": "Rename it", "graph": "consent_flow"})
        consent = asked[-2]
        monkeypatch.setattr(Launcher, "claim", the_thread_is_deleted_first)
        async with asyncio.timeout(30):
            gone = await client.post("/v1/chat", json=_approval_of(consent))

    assert gone.status_code == 404, gone.text
    assert gone.json()["error"]["code"] == "approval_not_found"
