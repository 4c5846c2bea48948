"""The LangGraph SDK's assistants and threads against Consentry, with the real ``langgraph-sdk``
client over real HTTP: every served graph is an assistant (by name and by the LangGraph server's
UUID); threads are created before their first run (with a chosen id, ``if_exists``), read with
their status as the SDK names it, their metadata, values and interrupts, searched (``status=
"interrupted"`` lists the threads a consent waits on), updated, deleted; their graph state and
history come from the checkpoints. ``x-api-key`` is a key like ``Authorization: Bearer``, and
another principal's thread is 404 on every route."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import NAMESPACE_URL, uuid4, uuid5

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

from consentry.schemas.events import ConsentEvent
from consentry.storage.tables import threads
from tests.openai_stub import OpenAIStub
from tests.sse import chat, kinds
from tests.tenancy import API_KEYS

CITY = "city=consentry_graphs.examples.ask_city:graph"
WAIT_SECONDS = 10.0


SdkClients = Callable[..., LangGraphClient]


@pytest_asyncio.fixture
async def sdk_client() -> AsyncIterator[SdkClients]:
    """``sdk_client(client, api_key=None)``: the SDK's client of the live server ``client``
    talks to (``get_client(url=..., api_key=...)``), closed after the test."""
    opened: list[LangGraphClient] = []

    def open_sdk(client: httpx.AsyncClient, api_key: str | None = None) -> LangGraphClient:
        opened.append(get_client(url=str(client.base_url), api_key=api_key))
        return opened[-1]

    yield open_sdk
    for sdk in opened:
        await sdk.aclose()


async def _parts(stream: AsyncIterator[Any]) -> list[Any]:
    return [part async for part in stream]


def _uuid(graph: str) -> str:
    """The LangGraph Agent Server's id of a graph's default assistant."""
    return str(uuid5(NAMESPACE_URL, graph))


async def _ask_city(
    client: httpx.AsyncClient, headers: dict[str, str] | None = None
) -> ConsentEvent:
    """A new thread of the ``city`` graph waiting for its raw interrupt's answer."""
    events = await chat(client, {"graph": "city", "message": "Plan a trip"}, headers)
    assert kinds(events) == ["run_started", "step", "consent", "final"]
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def test_every_served_graph_is_an_assistant_by_its_name_and_its_uuid(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(graphs=CITY) as (client, services):
        sdk = sdk_client(client)
        found = await sdk.assistants.search()
        by_graph = await sdk.assistants.search(graph_id="city")
        by_metadata = await sdk.assistants.search(metadata={"created_by": "system"}, limit=1)
        none = await sdk.assistants.search(metadata={"created_by": "somebody"})
        second = await sdk.assistants.search(offset=1)
        by_name, by_uuid = [await sdk.assistants.get(i) for i in ("city", _uuid("city"))]
        drawing = await sdk.assistants.get_graph("city")
        schemas = await sdk.assistants.get_schemas(_uuid("city"))
        graphs = (await client.get("/v1/graphs")).json()["graphs"]
        with pytest.raises(NotFoundError):
            await sdk.assistants.get("nope")
        with pytest.raises(NotFoundError):
            await sdk.assistants.get_graph(str(uuid4()))
        with pytest.raises(NotFoundError):
            await sdk.assistants.get_schemas("nope")

    assert [(a["graph_id"], a["assistant_id"], a["name"]) for a in found] == [
        ("city", _uuid("city"), "city"),
        ("tutor", _uuid("tutor"), "tutor"),
    ]
    assert found[0] == {
        "assistant_id": _uuid("city"),
        "graph_id": "city",
        "config": {},
        "context": {},
        "created_at": found[0]["created_at"],
        "updated_at": found[0]["created_at"],
        "metadata": {"created_by": "system"},
        "version": 1,
        "name": "city",
        "description": None,
    }
    assert by_graph == [found[0]]
    assert by_metadata == [found[0]]
    assert none == []
    assert second == [found[1]]
    assert by_name == by_uuid == found[0]
    expected = services.executor.graph("city").get_graph().to_json()
    assert [n["id"] for n in drawing["nodes"]] == [n["id"] for n in expected["nodes"]]
    assert drawing["edges"] == expected["edges"]
    city = next(g for g in graphs if g["name"] == "city")
    assert schemas == {
        "graph_id": "city",
        "input_schema": city["input_schema"],
        "output_schema": city["output_schema"],
        "state_schema": city["state_schema"],
        "config_schema": None,
        "context_schema": None,
    }


async def test_x_api_key_is_a_key_like_a_bearer_token_and_a_wrong_one_is_401(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(api_keys=API_KEYS) as (client, _):
        mine = await sdk_client(client, "ka").threads.create(metadata={"who": "alice"})
        read = await sdk_client(client, "ka").threads.get(mine["thread_id"])
        bearer = await client.get(
            f"/threads/{mine['thread_id']}", headers={"Authorization": "Bearer ka"}
        )
        theirs = await client.get(f"/threads/{mine['thread_id']}", headers={"x-api-key": "kb"})
        with pytest.raises(AuthenticationError) as wrong:
            await sdk_client(client, "not-a-key").threads.get(mine["thread_id"])
        with pytest.raises(AuthenticationError) as missing:
            await sdk_client(client).assistants.search()
        both = await client.get(
            "/v1/me", headers={"Authorization": "Bearer not-a-key", "x-api-key": "ka"}
        )

    assert read == mine
    assert bearer.json() == mine
    assert (theirs.status_code, theirs.json()["error"]["code"]) == (404, "thread_not_found")
    assert wrong.value.response.json()["error"]["code"] == "unauthorized"
    assert missing.value.response.json()["error"]["code"] == "unauthorized"
    assert both.status_code == 401  # a bearer token, when sent, is the key


async def test_a_thread_created_before_its_first_run_is_idle_and_its_first_run_binds_its_graph(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(graphs=CITY) as (client, _):
        sdk = sdk_client(client)
        created = await sdk.threads.create(metadata={"topic": "trips"})
        thread_id = created["thread_id"]
        asked = await chat(client, {"thread_id": thread_id, "graph": "city", "message": "Go"})
        bound = await sdk.threads.get(thread_id)
        again = await client.post(
            "/v1/chat", json={"thread_id": thread_id, "graph": "tutor", "message": "Hi"}
        )
        listed = (await client.get(f"/v1/threads/{thread_id}")).json()

    assert created == {
        "thread_id": thread_id,
        "created_at": created["created_at"],
        "updated_at": created["created_at"],
        "metadata": {"topic": "trips", "graph_id": "tutor", "assistant_id": _uuid("tutor")},
        "status": "idle",
        "values": {},
        "interrupts": {},
    }
    assert kinds(asked) == ["run_started", "step", "consent", "final"]
    assert bound["metadata"] == {
        "topic": "trips",
        "graph_id": "city",
        "assistant_id": _uuid("city"),
    }
    assert bound["status"] == "interrupted"
    assert again.status_code == 422
    assert again.json()["error"]["code"] == "graph_mismatch"
    assert (listed["graph"], listed["status"]) == ("city", "awaiting_consent")


async def test_a_thread_id_chosen_by_the_client_is_kept_and_if_exists_decides_a_second_create(
    open_live: Any, sdk_client: SdkClients
) -> None:
    chosen, theirs = str(uuid4()), str(uuid4())
    async with open_live(api_keys=API_KEYS, graphs=CITY) as (client, _):
        alice, bob = sdk_client(client, "ka"), sdk_client(client, "kb")
        created = await alice.threads.create(thread_id=chosen, graph_id="city", metadata={"n": 1})
        kept = await alice.threads.create(thread_id=chosen, if_exists="do_nothing")
        with pytest.raises(ConflictError) as raised:
            await alice.threads.create(thread_id=chosen, if_exists="raise")
        with pytest.raises(ConflictError) as by_default:
            await alice.threads.create(thread_id=chosen)
        await bob.threads.create(thread_id=theirs)
        answers = []
        for if_exists in ("raise", "do_nothing"):
            with pytest.raises(ConflictError) as refused:
                await alice.threads.create(thread_id=theirs, if_exists=if_exists)
            answers.append(refused.value.response.json())
        with pytest.raises(UnprocessableEntityError) as unknown_graph:
            await alice.threads.create(graph_id="nope")
        with pytest.raises(UnprocessableEntityError) as not_uuid:
            await alice.threads.create(thread_id="my-thread")

    assert created["thread_id"] == chosen
    assert created["metadata"] == {"n": 1, "graph_id": "city", "assistant_id": _uuid("city")}
    assert kept == created
    assert raised.value.response.json() == {
        "error": {
            "code": "thread_exists",
            "message": f"A thread with id {chosen!r} exists.",
            "details": {"thread_id": chosen},
        }
    }
    assert by_default.value.response.json() == raised.value.response.json()
    # Somebody else's id: the answer a `raise` on one's own gets, whatever `if_exists` says.
    assert (
        answers
        == [
            {
                "error": {
                    "code": "thread_exists",
                    "message": f"A thread with id {theirs!r} exists.",
                    "details": {"thread_id": theirs},
                }
            }
        ]
        * 2
    )
    assert unknown_graph.value.response.json()["error"]["code"] == "unknown_graph"
    assert not_uuid.value.response.json()["error"]["code"] == "request_invalid"


async def test_a_thread_created_under_a_used_id_does_not_continue_what_was_left_there(
    open_live: Any, sdk_client: SdkClients
) -> None:
    """A deletion that stopped after the thread's row left its checkpoints: a thread the client
    then creates under that id starts clean (they are deleted with its insert)."""
    chosen = str(uuid4())
    async with open_live(graphs=CITY) as (client, services):
        sdk = sdk_client(client)
        await sdk.threads.create(thread_id=chosen, graph_id="city")
        await _parts(sdk.runs.stream(chosen, "city", input={"messages": ["Plan a trip"]}))
        async with services.db.write() as conn:
            await conn.execute(sa.delete(threads).where(threads.c.id == chosen))
        await sdk.threads.create(thread_id=chosen, graph_id="city")
        state = await sdk.threads.get_state(chosen)

    assert state["values"] == {}
    assert state["next"] == []


async def test_update_merges_metadata_and_delete_removes_the_thread_its_records_and_checkpoints(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(graphs=CITY) as (client, services):
        sdk = sdk_client(client)
        consent = await _ask_city(client)
        thread_id = consent.thread_id
        before = await sdk.threads.get(thread_id)
        updated = await sdk.threads.update(thread_id, metadata={"a": 1, "b": {"c": [2]}})
        merged = await sdk.threads.update(
            thread_id, metadata={"a": None, "graph_id": "ignored", "d": True}
        )
        await sdk.threads.delete(thread_id)
        with pytest.raises(NotFoundError):
            await sdk.threads.get(thread_id)
        with pytest.raises(NotFoundError):
            await sdk.threads.delete(thread_id)
        state = await services.executor.graph("city").aget_state(
            {"configurable": {"thread_id": thread_id}}
        )
        approval = await client.get(f"/v1/approvals/{consent.approval_id}")
        inbox = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        audit = await client.get(f"/v1/threads/{thread_id}/audit")

    assert before["metadata"] == {"graph_id": "city", "assistant_id": _uuid("city")}
    assert updated["metadata"] == {
        "a": 1,
        "b": {"c": [2]},
        "graph_id": "city",
        "assistant_id": _uuid("city"),
    }
    assert updated["updated_at"] > before["updated_at"]
    assert merged["metadata"] == {
        "a": None,
        "b": {"c": [2]},
        "d": True,
        "graph_id": "city",
        "assistant_id": _uuid("city"),
    }
    assert state.values == {}
    assert state.config["configurable"].get("checkpoint_id") is None
    assert approval.status_code == 404
    assert inbox["approvals"] == []
    assert audit.status_code == 404


async def test_a_thread_is_not_deleted_while_a_run_is_active(
    open_live: Any, stub: OpenAIStub, sdk_client: SdkClients
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("A held answer.")
    async with open_live(**stub.app_settings()) as (client, services):
        sdk = sdk_client(client)
        thread = await sdk.threads.create()
        running = asyncio.create_task(
            client.post(
                "/v1/chat", json={"thread_id": thread["thread_id"], "message": "What is x?"}
            )
        )
        await asyncio.wait_for(stub.holding.wait(), WAIT_SECONDS)
        busy = await sdk.threads.get(thread["thread_id"])
        busy_list = await sdk.threads.search(status="busy")
        with pytest.raises(ConflictError) as refused:
            await sdk.threads.delete(thread["thread_id"])
        stub.release()
        assert (await running).status_code == 200
        await services.executor.wait_for_runs()
        await sdk.threads.delete(thread["thread_id"])

    assert busy["status"] == "busy"
    assert [t["thread_id"] for t in busy_list] == [thread["thread_id"]]
    assert refused.value.response.json()["error"]["code"] == "run_in_progress"


async def test_search_finds_threads_by_status_metadata_and_ids(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(graphs=CITY) as (client, _):
        sdk = sdk_client(client)
        idle = await sdk.threads.create(metadata={"team": "a", "n": 1, "on": True, "code": "1"})
        other = await sdk.threads.create(graph_id="city", metadata={"team": "b", "n": 2.5})
        consent = await _ask_city(client)
        waiting = consent.thread_id
        await sdk.threads.update(waiting, metadata={"team": "a", "n": "many", "on": 1})

        everything = await sdk.threads.search()
        interrupted = await sdk.threads.search(status="interrupted")
        idle_ones = await sdk.threads.search(status="idle")
        errors = await sdk.threads.search(status="error")
        team_a = await sdk.threads.search(metadata={"team": "a"})
        team_a_idle = await sdk.threads.search(metadata={"team": "a"}, status="idle")
        typed = [
            await sdk.threads.search(metadata=m)
            for m in (
                {"n": 1},
                {"n": 2.5},
                {"n": "many"},
                {"on": True},
                {"on": False},
                {"on": 1},
                {"code": "1"},
                {"code": 1},
            )
        ]
        by_graph = await sdk.threads.search(metadata={"graph_id": "city"})
        by_assistant = await sdk.threads.search(metadata={"assistant_id": _uuid("tutor")})
        by_unknown_graph = await sdk.threads.search(metadata={"graph_id": "nope"})
        by_ids = await sdk.threads.search(ids=[idle["thread_id"], str(uuid4())])
        oldest_first = await sdk.threads.search(sort_by="created_at", sort_order="asc")
        page = await sdk.threads.search(limit=1, offset=1)
        with pytest.raises(UnprocessableEntityError) as nested:
            await sdk.threads.search(metadata={"team": {"name": "a"}})
        with pytest.raises(UnprocessableEntityError) as quoted_key:
            await sdk.threads.search(metadata={'a"b': 1})
        with pytest.raises(UnprocessableEntityError) as by_values:
            await sdk.threads.search(values={"city": "Lisbon"})

    def ids(threads: list[Any]) -> list[str]:
        return [t["thread_id"] for t in threads]

    assert ids(everything) == [waiting, other["thread_id"], idle["thread_id"]]
    assert ids(interrupted) == [waiting]
    assert interrupted[0]["status"] == "interrupted"
    assert interrupted[0]["interrupts"] == {
        consent.approval_id: [{"value": {"question": "Which city?"}, "id": consent.approval_id}]
    }
    assert ids(idle_ones) == [other["thread_id"], idle["thread_id"]]
    assert errors == []
    assert ids(team_a) == [waiting, idle["thread_id"]]
    assert ids(team_a_idle) == [idle["thread_id"]]
    # A value matches a value of the same JSON type only: 1 is not "1", nor true.
    assert [ids(found) for found in typed] == [
        [idle["thread_id"]],
        [other["thread_id"]],
        [waiting],
        [idle["thread_id"]],
        [],
        [waiting],
        [idle["thread_id"]],
        [],
    ]
    assert ids(by_graph) == [waiting, other["thread_id"]]
    assert ids(by_assistant) == [idle["thread_id"]]
    assert by_unknown_graph == []
    assert ids(by_ids) == [idle["thread_id"]]
    assert ids(oldest_first) == [idle["thread_id"], other["thread_id"], waiting]
    assert ids(page) == [other["thread_id"]]
    assert nested.value.response.json()["error"]["code"] == "request_invalid"
    assert quoted_key.value.response.json()["error"]["code"] == "request_invalid"
    assert by_values.value.response.json()["error"]["code"] == "request_invalid"


async def test_a_thread_that_waits_for_a_consent_shows_its_values_state_and_history(
    open_live: Any, sdk_client: SdkClients
) -> None:
    # Every step's checkpoint kept (with `latest`, the default, only the newest: no history).
    async with open_live(graphs=CITY, checkpoint_retention="all") as (client, _):
        sdk = sdk_client(client)
        consent = await _ask_city(client)
        thread_id = consent.thread_id
        thread = await sdk.threads.get(thread_id)
        state = await sdk.threads.get_state(thread_id)
        history = await sdk.threads.get_history(thread_id)
        newest = await sdk.threads.get_history(thread_id, limit=1)
        older = await sdk.threads.get_history(thread_id, before=state["checkpoint"])
        older_by_id = await sdk.threads.get_history(
            thread_id, before=state["checkpoint"]["checkpoint_id"]
        )
        inputs = await sdk.threads.get_history(thread_id, metadata={"source": "input"})
        odd_key = await client.post(f"/threads/{thread_id}/history", json={"metadata": {"a b": 1}})
        answered = await client.post(
            "/v1/chat",
            json={
                "thread_id": thread_id,
                "resume": {"approval_id": consent.approval_id, "value": "Lisbon"},
            },
        )
        done = await sdk.threads.get(thread_id)
        after = await sdk.threads.get_history(thread_id)

    (message,) = thread["values"]["messages"]
    assert message == {
        "content": "Plan a trip",
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": message["id"],
    }
    assert thread["status"] == "interrupted"
    asked = {"value": {"question": "Which city?"}, "id": consent.approval_id}
    assert thread["interrupts"] == {consent.approval_id: [asked]}
    assert state["values"] == thread["values"]
    # A key no checkpointer can filter by is refused before it reaches one.
    assert (odd_key.status_code, odd_key.json()["error"]["code"]) == (422, "request_invalid")
    assert state["next"] == ["ask_city"]
    assert state["interrupts"] == [asked]
    (task,) = state["tasks"]
    assert task == {
        "id": task["id"],
        "name": "ask_city",
        "error": None,
        "interrupts": [asked],
        "checkpoint": None,
        "state": None,
        "result": None,
    }
    assert state["checkpoint"]["thread_id"] == thread_id
    assert state["checkpoint"]["checkpoint_ns"] == ""
    assert state["parent_checkpoint"] is not None
    assert state["created_at"] is not None
    assert history[0] == state
    assert [h["checkpoint"] for h in history[1:]] == [h["parent_checkpoint"] for h in history[:-1]][
        : len(history) - 1
    ]
    assert newest == [state]
    assert older == older_by_id == history[1:]
    assert [h["metadata"]["source"] for h in inputs] == ["input"]
    assert answered.status_code == 200
    assert done["status"] == "idle"
    assert done["interrupts"] == {}
    assert [m["type"] for m in done["values"]["messages"]] == ["human", "ai"]
    assert done["values"]["city"] == "Lisbon"
    # CONSENTRY_CHECKPOINT_RETENTION=all: the answer's steps are added to the history.
    assert len(after) > len(history)
    assert after[0]["values"] == done["values"]
    assert [h["checkpoint"] for h in after[-len(history) :]] == [h["checkpoint"] for h in history]


async def test_another_principals_thread_is_404_on_every_route_and_never_listed(
    open_live: Any, sdk_client: SdkClients
) -> None:
    async with open_live(api_keys=API_KEYS, graphs=CITY) as (client, _):
        owner = {"Authorization": "Bearer ka"}
        consent = await _ask_city(client, owner)
        thread_id, unknown = consent.thread_id, str(uuid4())
        bob = sdk_client(client, "kb")
        refused = []
        for tid in (thread_id, unknown):
            for call in (
                bob.threads.get(tid),
                bob.threads.get_state(tid),
                bob.threads.get_history(tid),
                bob.threads.update(tid, metadata={"mine": True}),
                bob.threads.delete(tid),
            ):
                with pytest.raises(NotFoundError) as error:
                    await call
                body = error.value.response.json()
                refused.append(str(body).replace(tid, "<id>"))
        listed = await bob.threads.search()
        inbox = await bob.threads.search(status="interrupted")
        found = await bob.threads.search(ids=[thread_id])
        still = await sdk_client(client, "ka").threads.get(thread_id)

    assert refused[:5] == refused[5:]
    assert listed == inbox == found == []
    assert still["status"] == "interrupted"
    assert still["metadata"] == {"graph_id": "city", "assistant_id": _uuid("city")}


async def test_sdk_methods_consentry_does_not_serve_are_refused_by_status_and_code(
    open_live: Any, sdk_client: SdkClients
) -> None:
    """The refusals ``docs/langgraph-sdk.md`` lists: a route not served is 404 ``not_found`` or
    405 ``method_not_allowed``; a field not served is 422 ``request_invalid`` naming it; a served
    graph's own assistant is not changed (409 ``assistant_read_only``)."""
    async with open_live() as (client, _):
        sdk = sdk_client(client)
        tid = (await sdk.threads.create())["thread_id"]
        at = {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": "x"}
        calls = {
            "assistants.update": lambda: sdk.assistants.update("tutor", metadata={"a": 1}),
            "assistants.delete": lambda: sdk.assistants.delete("tutor"),
            "assistants.set_latest": lambda: sdk.assistants.set_latest("tutor", 1),
            "assistants.search(select)": lambda: sdk.assistants.search(select=["graph_id"]),
            "threads.get_state(checkpoint_id)": lambda: sdk.threads.get_state(
                tid, checkpoint_id="x"
            ),
            "threads.get_state(checkpoint)": lambda: sdk.threads.get_state(tid, checkpoint=at),
            "threads.create(ttl)": lambda: sdk.threads.create(ttl=5),
            "threads.update(ttl)": lambda: sdk.threads.update(tid, metadata={}, ttl=5),
            "threads.search(select)": lambda: sdk.threads.search(select=["thread_id"]),
            "threads.search(sort_by=status)": lambda: sdk.threads.search(sort_by="status"),
            "threads.get_history(select)": lambda: sdk.threads.get_history(tid, select=["values"]),
        }
        answers = {}
        for name, call in calls.items():
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await call()
            response = refused.value.response
            answers[name] = (response.status_code, response.json()["error"]["code"])

    assert answers == {
        "assistants.update": (409, "assistant_read_only"),  # a served graph's own
        "assistants.delete": (409, "assistant_read_only"),
        "assistants.set_latest": (409, "assistant_read_only"),
        "assistants.search(select)": (422, "request_invalid"),
        "threads.get_state(checkpoint_id)": (404, "checkpoint_not_found"),
        "threads.get_state(checkpoint)": (404, "checkpoint_not_found"),
        "threads.create(ttl)": (422, "request_invalid"),
        "threads.update(ttl)": (422, "request_invalid"),
        "threads.search(select)": (422, "request_invalid"),
        "threads.search(sort_by=status)": (422, "request_invalid"),
        "threads.get_history(select)": (422, "request_invalid"),
    }
