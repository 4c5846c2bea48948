"""What a decision reads, on both databases: the consent it names and its thread's pending
consents in one statement (``approvals.find_with_pending``: what the two reads it replaces gave),
and its thread's checkpoint once. Where the graph stands is read before the run's claim; the run
starts from that read instead of reading the checkpoint again (``storage.checkpoints._head_read``)
when its claim is the first change of the thread since, and reads it again when it is not (a
state update came in between, or the thread was deleted and made again under its id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest

from consentry.principal import LOCAL_PRINCIPAL, Principal
from consentry.runtime.runs.execute._graph_stream import GraphStreamer
from consentry.runtime.runs.execute._run_types import GraphPosition
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.checkpoints import _drivers
from consentry_graphs.registry import GraphSpec
from consentry_tools.bench.load import CONSENT_FLOW_GRAPH
from tests.sse import ask_for_note_edit, chat, kinds
from tests.statements_sent import statements_of

STRANGER = Principal(LOCAL_PRINCIPAL.tenant, "someone-else")
Read = tuple[ApprovalRecord | None, list[ApprovalRecord]]
CONSENT_FLOW = dict([CONSENT_FLOW_GRAPH.split("=", 1)])
CITY = {"city": "consentry_graphs.examples.ask_city:graph"}


async def _both_ways(
    client: httpx.AsyncClient, owner: Principal, approval_id: str, thread_id: str
) -> tuple[Read, Read]:
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        combined = await approvals_repo.find_with_pending(conn, owner, approval_id, thread_id)
        apart = (
            await approvals_repo.find_approval(conn, owner, approval_id),
            await approvals_repo.pending_approvals(conn, thread_id),
        )
    return combined, apart


async def test_the_combined_read_gives_what_the_two_reads_gave(client: httpx.AsyncClient) -> None:
    _, first = await ask_for_note_edit(client)
    consent = first[-2]
    thread_id, approval_id = consent.thread_id, consent.approval_id  # type: ignore[union-attr]

    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, thread_id)
    assert combined == apart
    found, pending = apart
    assert found is not None
    assert [row.id for row in pending] == [approval_id]

    # Another user names it: not found for them, and it is still the thread's pending one.
    combined, apart = await _both_ways(client, STRANGER, approval_id, thread_id)
    assert combined == apart
    assert apart[0] is None

    # Decided: found (as decided), and nothing pending.
    await chat(
        client,
        {"thread_id": thread_id, "resume": {"approval_id": approval_id, "decision": "reject"}},
    )
    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, thread_id)
    assert combined == apart
    found, pending = apart
    assert found is not None
    assert found.status == "rejected"
    assert pending == []
    # Named with another thread: found all the same, and that thread has nothing pending.
    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, "another-thread")
    assert combined == apart


@pytest.fixture
def checkpoint_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement that reads ``graph_checkpoints`` and writes nothing, from here on, on
    either database (the checkpointer's own on sqlite3, and whatever psycopg sends)."""
    seen: list[str] = []

    def note(sql: str) -> None:
        for statement in statements_of(sql):
            writes = any(word in statement for word in ("INSERT", "UPDATE", "DELETE"))
            if "graph_checkpoints" in statement and not writes:
                seen.append(statement)

    on_sqlite = _drivers._sqlite3_execute
    on_postgres = psycopg.AsyncCursor.execute

    def sqlite_execute(connection: Any, query: Any) -> Any:
        note(query.sql)
        return on_sqlite(connection, query)

    async def postgres_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        note(str(query))
        return await on_postgres(self, query, *args, **kwargs)

    monkeypatch.setattr(_drivers, "_sqlite3_execute", sqlite_execute)
    monkeypatch.setattr(psycopg.AsyncCursor, "execute", postgres_execute)
    return seen


def _decision(consent: Any) -> dict[str, Any]:
    resume = {"approval_id": consent.approval_id, "decision": "approve"}
    return {"thread_id": consent.thread_id, "resume": resume}


def _message(consent: Any) -> dict[str, Any]:
    """A message that rejects the consent it finds pending, then asks again."""
    return {"thread_id": consent.thread_id, "message": "Again", "on_pending_consent": "reject"}


@pytest.mark.parametrize(
    ("request_for", "said", "reads"),
    [
        pytest.param(
            _decision, ["run_started", "step", "step", "message", "final"], 1, id="decision"
        ),
        pytest.param(
            _message,
            ["run_started", "step", "step", "message", "step", "step", "step", "consent", "final"],
            2,
            id="message",
        ),
    ],
)
async def test_a_run_after_a_consent_reads_its_threads_checkpoint_once_a_graph_input(
    open_client: Callable[..., Any],
    checkpoint_reads: list[str],
    request_for: Callable[[Any], dict[str, Any]],
    said: list[str],
    reads: int,
) -> None:
    """Where the graph stands (``aget_state``) is read before the run's claim, and the run's
    graph starts from that read: a decision reads the checkpoint once. A message first answers
    the consent it closes from that read, then starts from the checkpoint the answer wrote,
    read again."""
    async with open_client(graphs=CONSENT_FLOW) as client:
        asked = await chat(client, {"message": "Rename it", "graph": "consent_flow"})
        asking = len(checkpoint_reads)
        consent = next(e for e in asked if e.type == "consent")
        answered = await chat(client, request_for(consent))

    assert asking == 0  # the message's thread was new: nothing to read
    assert kinds(answered) == said
    assert len(checkpoint_reads) == reads


@pytest.mark.parametrize("change", ["update", "made_again"])
async def test_a_change_between_a_runs_position_and_its_claim_is_what_the_run_starts_from(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A run with no input on a thread a state update left with a node to run; after its
    request read where the graph stands and before its claim, another update is made
    (``update``: it moves the thread's fencing token on), or the thread is deleted and made
    again under its id, with a run and an update of its own (``made_again``: as many fencing
    tokens as the first had, on another row). Either way the run reads the checkpoint again:
    it books the city of the last update, not the one its request read."""
    read = GraphStreamer.position

    async def position_then_change(self: GraphStreamer, spec: GraphSpec, thread_id: str) -> Any:
        found: GraphPosition = await read(self, spec, thread_id)
        monkeypatch.setattr(GraphStreamer, "position", read)  # once
        if change == "made_again":
            deleted = await client.delete(f"/threads/{thread_id}")
            assert deleted.status_code == 204, deleted.text
            await _city_thread(client, thread_id)
        await _update_city(client, thread_id, "Lisbon")
        return found

    async with open_client(graphs=CITY) as client:
        thread_id = await _city_thread(client, "00000000-0000-4000-8000-00000000a717")
        await _update_city(client, thread_id, "Porto")
        monkeypatch.setattr(GraphStreamer, "position", position_then_change)
        went_on = await client.post(
            f"/threads/{thread_id}/runs/wait", json={"assistant_id": "city", "input": None}
        )
        state = (await client.get(f"/threads/{thread_id}/state")).json()

    assert went_on.status_code == 200, went_on.text
    assert went_on.json()["messages"][-1]["content"] == "Booked a trip to Lisbon."
    assert (state["values"]["city"], state["next"]) == ("Lisbon", [])


async def _city_thread(client: httpx.AsyncClient, thread_id: str) -> str:
    """A thread of the ``city`` graph under ``thread_id``, waiting for its question."""
    created = await client.post(
        "/threads", json={"thread_id": thread_id, "metadata": {"graph_id": "city"}}
    )
    assert created.status_code == 200, created.text
    asked = await client.post(
        f"/threads/{thread_id}/runs/wait", json={"assistant_id": "city", "input": {"messages": []}}
    )
    assert asked.status_code == 200, asked.text
    return thread_id


async def _update_city(client: httpx.AsyncClient, thread_id: str, city: str) -> None:
    updated = await client.post(
        f"/threads/{thread_id}/state", json={"values": {"city": city}, "as_node": "ask_city"}
    )
    assert updated.status_code == 200, updated.text
