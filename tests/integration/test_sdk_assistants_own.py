"""Assistants of one's own through the real ``langgraph-sdk`` client, on both databases: create
(with ``if_exists``), get, update (a new version), versions, ``set_latest``, search, count and
delete, each scoped to its owner like threads; a run on one gets its ``context`` and
``configurable`` values (the run's own win), and its thread is found by the assistant's id; a
served graph's own assistant stays read-only."""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.langgraph_client import parts, sdk_client

OWN = "own=tests.graph_forms:own_context"
HI = {"messages": [{"role": "user", "content": "Hi"}]}
KEYS = "ka=acme:alice,kb=acme:bob"


def _said(state: dict[str, Any]) -> list[str]:
    return [m["content"] for m in state["messages"] if m["type"] == "ai"]


async def test_an_assistant_is_created_versioned_and_reverted(open_live: Any) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        made = await sdk.assistants.create(
            "own",
            config={"configurable": {"persona": "owl"}},
            context={"model": "large"},
            metadata={"team": "a"},
            name="Large owl",
        )
        again = await sdk.assistants.create(
            "own", assistant_id=made["assistant_id"], if_exists="do_nothing"
        )
        with pytest.raises(ConflictError):
            await sdk.assistants.create("own", assistant_id=made["assistant_id"])
        changed = await sdk.assistants.update(
            made["assistant_id"], context={"model": "tiny"}, metadata={"stage": 2}
        )
        versions = await sdk.assistants.get_versions(made["assistant_id"])
        back = await sdk.assistants.set_latest(made["assistant_id"], 1)
        got = await sdk.assistants.get(made["assistant_id"])
        with pytest.raises(NotFoundError):
            await sdk.assistants.set_latest(made["assistant_id"], 9)

    assert (made["graph_id"], made["name"], made["version"]) == ("own", "Large owl", 1)
    assert made["context"] == {"model": "large"}  # as given (checked: a run fills defaults)
    assert again == made
    assert (changed["version"], changed["context"]["model"]) == (2, "tiny")
    assert changed["metadata"] == {"team": "a", "stage": 2}  # merged
    assert changed["config"] == {"configurable": {"persona": "owl"}}  # kept
    assert [v["version"] for v in versions] == [2, 1]
    assert (back["version"], back["context"]["model"], back["metadata"]) == (
        1,
        "large",
        {"team": "a"},
    )
    assert got == back


async def test_a_run_on_an_assistant_gets_its_configuration_and_its_thread_names_it(
    open_live: Any,
) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        made = await sdk.assistants.create(
            "own", config={"configurable": {"persona": "owl"}}, context={"max_words": 9}
        )
        mine = made["assistant_id"]
        thread = await sdk.threads.create()
        await parts(sdk.runs.stream(thread["thread_id"], mine, input=HI))
        (interrupt,) = (await sdk.threads.get_state(thread["thread_id"]))["interrupts"]
        done = await sdk.runs.wait(
            thread["thread_id"],
            mine,
            command={"resume": {interrupt["id"]: "yes"}},
            context={"model": "large"},  # the run's own key wins; the assistant's others stay
        )
        plain = await sdk.runs.wait(None, "own", input=HI, raise_error=False)
        by_mine = await sdk.threads.search(metadata={"assistant_id": mine})
        by_graph_own = await sdk.threads.search(metadata={"assistant_id": "own"})
        by_graph = await sdk.threads.search(metadata={"graph_id": "own"})
        read = await sdk.threads.get(thread["thread_id"])
        counted = await sdk.threads.count(metadata={"assistant_id": mine})

    before, after = _said(done)  # type: ignore[arg-type]
    assert before == "small model, 9 words, persona owl, for local/local"
    assert after == "large model, 9 words, persona owl, for local/local"
    assert _said(plain)[0] == "small model, 50 words, persona None, for local/local"  # type: ignore[arg-type]
    assert [t["thread_id"] for t in by_mine] == [thread["thread_id"]]
    assert thread["thread_id"] not in [t["thread_id"] for t in by_graph_own]
    assert len(by_graph) == 2
    assert read["metadata"]["assistant_id"] == mine
    assert counted == 1


async def test_assistants_are_their_owners_and_bad_ones_are_refused_by_name(
    open_live: Any,
) -> None:
    async with open_live(graphs=OWN, api_keys=KEYS) as (client, _):
        alice = {"Authorization": "Bearer ka"}
        bob = {"Authorization": "Bearer kb"}
        made = (await client.post("/assistants", json={"graph_id": "own"}, headers=alice)).json()
        mine = made["assistant_id"]
        seen_by_bob = await client.get(f"/assistants/{mine}", headers=bob)
        changed_by_bob = await client.patch(f"/assistants/{mine}", json={}, headers=bob)
        bobs_search = (await client.post("/assistants/search", json={}, headers=bob)).json()
        taken = await client.post(
            "/assistants", json={"graph_id": "own", "assistant_id": mine}, headers=bob
        )
        refusals = {
            "unknown graph": await client.post(
                "/assistants", json={"graph_id": "nope"}, headers=alice
            ),
            "bad context": await client.post(
                "/assistants",
                json={"graph_id": "own", "context": {"max_words": "many"}},
                headers=alice,
            ),
            "server key": await client.post(
                "/assistants",
                json={"graph_id": "own", "config": {"configurable": {"thread_id": "x"}}},
                headers=alice,
            ),
            "unserved config": await client.post(
                "/assistants",
                json={"graph_id": "own", "config": {"recursion_limit": 3}},
                headers=alice,
            ),
            "not a uuid": await client.post(
                "/assistants", json={"graph_id": "own", "assistant_id": "mine"}, headers=alice
            ),
        }
        served = await client.patch("/assistants/own", json={"name": "x"}, headers=alice)
        served_gone = await client.delete("/assistants/own", headers=alice)
        alices = await client.post("/assistants/count", json={}, headers=alice)
        bobs = await client.post("/assistants/count", json={}, headers=bob)

    assert seen_by_bob.status_code == changed_by_bob.status_code == 404
    # The served graphs' own only: alice's is hers.
    assert [(a["graph_id"], a["metadata"]) for a in bobs_search] == [
        ("own", {"created_by": "system"}),
        ("tutor", {"created_by": "system"}),
    ]
    assert (taken.status_code, taken.json()["error"]["code"]) == (409, "assistant_exists")
    codes = {what: (r.status_code, r.json()["error"]["code"]) for what, r in refusals.items()}
    assert codes == {
        "unknown graph": (422, "unknown_graph"),
        "bad context": (422, "invalid_context"),
        "server key": (422, "invalid_config"),
        "unserved config": (422, "unsupported_field"),
        "not a uuid": (422, "invalid_assistant_id"),
    }
    assert (served.status_code, served.json()["error"]["code"]) == (409, "assistant_read_only")
    assert served_gone.status_code == 409
    assert (alices.json(), bobs.json()) == (3, 2)  # the served graphs' own, and alice's


async def test_deleting_an_assistant_keeps_or_deletes_its_threads(open_live: Any) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        kept_with = (await sdk.assistants.create("own"))["assistant_id"]
        deleted_with = (await sdk.assistants.create("own"))["assistant_id"]
        await sdk.runs.wait(None, kept_with, input=HI, raise_error=False)
        await sdk.runs.wait(None, deleted_with, input=HI, raise_error=False)
        before = await sdk.threads.search(metadata={"assistant_id": kept_with})
        await sdk.assistants.delete(kept_with)
        await sdk.assistants.delete(deleted_with, delete_threads=True)
        with pytest.raises(NotFoundError):
            await sdk.assistants.get(kept_with)
        with pytest.raises(httpx.HTTPStatusError):
            await sdk.runs.wait(None, kept_with, input=HI)
        left = [t["thread_id"] for t in await sdk.threads.search()]

    assert left == [before[0]["thread_id"]]  # the kept one's thread: the other's went with it


async def test_a_resume_keeps_the_options_of_its_consent_and_a_thread_follows_its_runs(
    open_live: Any,
) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        mine = (await sdk.assistants.create("own", context={"model": "large"}))["assistant_id"]
        thread = (await sdk.threads.create())["thread_id"]
        # The run's own context beside the assistant's, then a resume that sends none.
        await sdk.runs.wait(thread, mine, input=HI, context={"max_words": 3})
        await sdk.assistants.update(mine, context={"model": "tiny"})  # changed meanwhile
        (interrupt,) = (await sdk.threads.get_state(thread))["interrupts"]
        done = await sdk.runs.wait(thread, mine, command={"resume": {interrupt["id"]: "yes"}})
        named = (await sdk.threads.get(thread))["metadata"]["assistant_id"]
        await sdk.runs.wait(thread, "own", input=HI)  # the graph's own, this time
        renamed = (await sdk.threads.get(thread))["metadata"]["assistant_id"]
        by_upper = await sdk.assistants.get(mine.upper())

    told = "large model, 3 words, persona None, for local/local"
    assert _said(done) == [told, told]  # type: ignore[arg-type]
    assert named == mine
    assert renamed == str(uuid5(NAMESPACE_URL, "own"))
    assert by_upper["assistant_id"] == mine


async def test_a_search_pages_through_every_assistant_once_in_either_order(
    open_live: Any,
) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        made = [
            (await sdk.assistants.create("own", name=f"a{i}"))["assistant_id"] for i in range(3)
        ]
        pages = {
            order: [
                a["assistant_id"]
                for offset in range(6)
                for a in await sdk.assistants.search(limit=1, offset=offset, sort_order=order)
            ]
            for order in ("asc", "desc")
        }
        by_name = await sdk.assistants.search(sort_by="name", sort_order="desc", limit=10)
        first_page = await sdk.assistants.search(limit=2)

    assert set(made) <= set(pages["asc"])
    for order, seen in pages.items():
        assert len(seen) == len(set(seen)) == 5, order  # the two graphs' own and the three
    assert [a["name"] for a in by_name] == ["tutor", "own", "a2", "a1", "a0"]
    assert [a["graph_id"] for a in first_page] == ["own", "tutor"]  # served ones first


async def test_a_graph_s_subgraphs_are_described_by_namespace(open_live: Any) -> None:
    trip = "trip=consentry_graphs.examples.trip_subgraph:graph"
    async with open_live(graphs=f"{OWN},{trip}") as (client, _), sdk_client(client) as sdk:
        mine = (await sdk.assistants.create("trip"))["assistant_id"]
        every = await sdk.assistants.get_subgraphs("trip", recurse=True)
        named = await sdk.assistants.get_subgraphs(mine, namespace="plan")
        unknown = await sdk.assistants.get_subgraphs("trip", namespace="nowhere")
        none = await sdk.assistants.get_subgraphs("own")

    assert list(every) == ["plan"]
    assert every["plan"]["graph_id"] == "trip"
    assert every["plan"]["state_schema"] is not None
    assert named == every
    assert (unknown, none) == ({}, {})
