"""The Store through the real ``langgraph-sdk`` client over real HTTP: items put, read, replaced
and deleted; time to live (set, defaulted, refreshed by reads, swept); searches by prefix,
filter and meaning (the offline embedding); namespaces listed; and every route scoped to the
caller's tenant."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph.store.base import GetOp, PutOp
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

from tests.conftest import ManualClock
from tests.openai_stub import OpenAIStub

KEYS = "ka=acme:alice,kb=acme:bob,kc=globex:carol"


def _sdk(client: httpx.AsyncClient, key: str) -> Any:
    return get_client(url=str(client.base_url), api_key=key)


async def test_an_item_is_put_read_replaced_and_deleted(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        sdk = _sdk(client, "ka")
        await sdk.store.put_item(["prefs", "alice"], key="tone", value={"style": "brief"})
        first = await sdk.store.get_item(["prefs", "alice"], key="tone")
        await sdk.store.put_item(["prefs", "alice"], key="tone", value={"style": "detailed"})
        replaced = await sdk.store.get_item(["prefs", "alice"], key="tone")
        await sdk.store.delete_item(["prefs", "alice"], key="tone")
        gone = await sdk.store.get_item(["prefs", "alice"], key="tone")
        await sdk.store.delete_item(["prefs", "alice"], key="tone")  # again: nothing to delete
        await sdk.aclose()

    assert first["namespace"] == ["prefs", "alice"]
    assert (first["key"], first["value"]) == ("tone", {"style": "brief"})
    assert replaced["value"] == {"style": "detailed"}
    assert replaced["created_at"] == first["created_at"]
    assert replaced["updated_at"] > first["updated_at"]
    assert gone is None


async def test_an_item_lives_its_ttl_unless_read_and_expired_ones_are_swept(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(api_keys=KEYS, store_ttl_minutes=60) as (client, services):
        sdk = _sdk(client, "ka")
        await sdk.store.put_item(["cache"], key="short", value={"v": 1}, ttl=10)
        await sdk.store.put_item(["cache"], key="read", value={"v": 2}, ttl=10)
        await sdk.store.put_item(["cache"], key="default", value={"v": 3})  # the setting's 60
        await sdk.store.put_item(["cache"], key="kept", value={"v": 4}, ttl=1000)
        clock.advance(minutes=8)
        await sdk.store.get_item(["cache"], key="read")  # refreshed: 10 more minutes
        await sdk.store.get_item(["cache"], key="short", refresh_ttl=False)
        clock.advance(minutes=5)
        at_13 = await sdk.store.search_items(["cache"], limit=10, refresh_ttl=False)
        clock.advance(minutes=50)
        at_63 = await sdk.store.search_items(["cache"], limit=10)
        swept = await services.expiry.prune_store_items()
        await sdk.aclose()

    assert sorted(i["key"] for i in at_13["items"]) == ["default", "kept", "read"]
    assert sorted(i["key"] for i in at_63["items"]) == ["kept"]
    assert swept == 3


async def test_search_by_prefix_filter_and_page_most_recent_first(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        sdk = _sdk(client, "ka")
        items = [
            (["docs", "a"], "1", {"kind": "note", "level": 1, "tags": {"lang": "en"}}),
            (["docs", "a", "deep"], "2", {"kind": "note", "level": 3, "tags": {"lang": "fr"}}),
            (["docs", "b"], "3", {"kind": "task", "level": 2}),
            (["docsx"], "4", {"kind": "note", "level": 1}),  # not under ("docs",)
        ]
        for namespace, key, value in items:
            await sdk.store.put_item(namespace, key=key, value=value)
        everything = await sdk.store.search_items(["docs"], limit=10)
        notes = await sdk.store.search_items(["docs"], filter={"kind": "note"})
        deep = await sdk.store.search_items(["docs", "a"], filter={"level": {"$gte": 2}})
        french = await sdk.store.search_items([], filter={"tags": {"lang": "fr"}})
        page = await sdk.store.search_items(["docs"], limit=1, offset=1)
        await sdk.aclose()

    def keys(found: Any) -> list[str]:
        return [item["key"] for item in found["items"]]

    assert keys(everything) == ["3", "2", "1"]
    assert keys(notes) == ["2", "1"]
    assert keys(deep) == ["2"]
    assert keys(french) == ["2"]
    assert keys(page) == ["2"]


async def test_a_query_ranks_items_by_meaning_with_the_offline_embedding(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        sdk = _sdk(client, "ka")
        memories = {
            "m1": {"text": "Alice prefers short answers with examples"},
            "m2": {"text": "The exam on retrieval augmented generation is on Friday"},
            "m3": {"text": "Spaced repetition helps memory"},
        }
        for key, value in memories.items():
            await sdk.store.put_item(["memories", "alice"], key=key, value=value)
        await sdk.store.put_item(["memories", "alice"], key="raw", value={"x": 1}, index=False)
        found = await sdk.store.search_items(["memories"], query="when is the retrieval exam?")
        await sdk.aclose()

    ranked = found["items"]
    assert ranked[0]["key"] == "m2"
    scores = [item["score"] for item in ranked if item["score"] is not None]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1]
    assert (ranked[-1]["key"], ranked[-1]["score"]) == ("raw", None)  # not embedded: last


async def test_namespaces_are_listed_by_prefix_suffix_and_depth(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        sdk = _sdk(client, "ka")
        for namespace in (["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["z", "b", "c"]):
            await sdk.store.put_item(namespace, key="k", value={})
        every = await sdk.store.list_namespaces()
        under_a = await sdk.store.list_namespaces(prefix=["a"])
        shallow = await sdk.store.list_namespaces(prefix=["a"], max_depth=2)
        ending = await sdk.store.list_namespaces(suffix=["b", "c"])
        wild = await sdk.store.list_namespaces(prefix=["*", "b"])
        paged = await sdk.store.list_namespaces(limit=2, offset=1)
        await sdk.aclose()

    assert every["namespaces"] == [["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["z", "b", "c"]]
    assert under_a["namespaces"] == [["a", "b", "c"], ["a", "b", "d"], ["a", "x"]]
    assert shallow["namespaces"] == [["a", "b"], ["a", "x"]]
    assert ending["namespaces"] == [["a", "b", "c"], ["z", "b", "c"]]
    assert wild["namespaces"] == [["a", "b", "c"], ["a", "b", "d"], ["z", "b", "c"]]
    assert paged["namespaces"] == [["a", "b", "d"], ["a", "x"]]


async def test_another_tenant_reaches_nothing_and_a_colleague_shares_the_tenant(
    open_live: Any,
) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        alice, bob, carol = _sdk(client, "ka"), _sdk(client, "kb"), _sdk(client, "kc")
        await alice.store.put_item(["team"], key="plan", value={"text": "ship it"})
        shared = await bob.store.get_item(["team"], key="plan")
        seen = [
            await carol.store.get_item(["team"], key="plan"),
            (await carol.store.search_items(["team"]))["items"],
            (await carol.store.search_items([], query="ship"))["items"],
            (await carol.store.list_namespaces())["namespaces"],
        ]
        await carol.store.put_item(["team"], key="plan", value={"text": "carol's own"})
        await carol.store.delete_item(["team"], key="plan")
        still = await alice.store.get_item(["team"], key="plan")
        for sdk in (alice, bob, carol):
            await sdk.aclose()

    assert shared["value"] == {"text": "ship it"}  # one tenant's store, as one deployment's
    assert seen == [None, [], [], []]
    assert still["value"] == {"text": "ship it"}


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PUT", "/store/items", {"namespace": ["a.b"], "key": "k", "value": {}}, "namespace"),
        ("PUT", "/store/items", {"namespace": [], "key": "k", "value": {}}, "namespace"),
        ("PUT", "/store/items", {"namespace": ["a"], "key": "", "value": {}}, "key"),
        ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": []}, "value"),
        ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {}, "ttl": 0}, "ttl"),
        ("POST", "/store/items/search", {"namespace_prefix": ["a"], "limit": 0}, "limit"),
        ("POST", "/store/namespaces", {"max_depth": 0}, "max_depth"),
    ],
)
async def test_a_malformed_request_is_refused_naming_its_field(
    open_client: Any, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    async with open_client() as client:
        answer = await client.request(method, path, json=body)

    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "request_invalid"
    assert field in str(error["details"])


async def test_a_reserved_root_or_a_bad_joined_namespace_is_refused(open_client: Any) -> None:
    async with open_client() as client:
        reserved = await client.put(
            "/store/items", json={"namespace": ["langgraph", "x"], "key": "k", "value": {}}
        )
        empty_label = await client.get("/store/items", params={"namespace": "a..b", "key": "k"})
        # Nothing can be stored there; a delete is refused nothing (it was a 500).
        deleted = await client.request(
            "DELETE", "/store/items", json={"namespace": ["langgraph", "x"], "key": "k"}
        )

    assert (reserved.status_code, reserved.json()["error"]["code"]) == (422, "invalid_namespace")
    assert (empty_label.status_code, empty_label.json()["error"]["code"]) == (
        422,
        "request_invalid",
    )
    assert deleted.status_code == 204


async def test_the_sdk_refuses_a_label_with_a_period_before_sending(open_live: Any) -> None:
    async with open_live() as (client, _):
        sdk = _sdk(client, "")
        with pytest.raises(ValueError, match="periods"):
            await sdk.store.put_item(["a.b"], key="k", value={})
        with pytest.raises(UnprocessableEntityError):  # the server refuses it too
            await sdk.http.put("/store/items", json={"namespace": ["a.b"], "key": "k", "value": {}})
        await sdk.aclose()


async def test_a_graph_reaches_its_run_owners_store_in_each_of_langgraphs_ways(
    open_live: Any,
) -> None:
    async with open_live(api_keys=KEYS, graphs="memory=tests.memory_graphs:memory_graph") as (
        client,
        _,
    ):
        alice, carol = _sdk(client, "ka"), _sdk(client, "kc")

        async def said(sdk: Any, text: str) -> list[str]:
            state = await sdk.runs.wait(None, "memory", input={"messages": [human(text)]})
            return [str(m["content"]) for m in state["messages"][1:]]

        told = await said(alice, "remember I like short answers")
        asked = await said(alice, "what answers do I like?")  # another thread
        stranger = await said(carol, "what answers do I like?")
        alices = await alice.store.search_items(["memories"])
        carols = await carol.store.search_items(["memories"])
        await alice.aclose()
        await carol.aclose()

    assert told == ["I remember: I like short answers", "", "1 memories"]
    assert asked == ["I remember: I like short answers", "", "1 memories"]
    assert stranger == ["I remember: nothing yet", "", "0 memories"]
    assert [item["value"] for item in alices["items"]] == [{"text": "I like short answers"}]
    assert carols["items"] == []


def human(text: str) -> dict[str, Any]:
    return {"type": "human", "content": text}


async def test_a_configured_model_server_embeds_the_items_and_the_query(
    open_live: Any, stub: OpenAIStub
) -> None:
    settings = stub.app_settings(embeddings_model="embed-stub", store_index_fields="text")
    async with open_live(api_keys=KEYS, **settings) as (client, _):
        sdk = _sdk(client, "ka")
        await sdk.store.put_item(["garage"], key="a", value={"text": "my car is red", "n": 1})
        await sdk.store.put_item(["garage"], key="b", value={"text": "an apple a day"})
        found = await sdk.store.search_items(["garage"], query="automobile")
        await sdk.aclose()

    # The server's embedding knows "automobile" is a car (the offline one would not).
    assert [item["key"] for item in found["items"]] == ["a", "b"]
    assert found["items"][0]["score"] > found["items"][1]["score"]
    sent = [(r["model"], r["input"]) for r in stub.embedding_requests]
    # Only the indexed field is embedded, sent as text; then the query.
    assert sent == [
        ("embed-stub", ["my car is red"]),
        ("embed-stub", ["an apple a day"]),
        ("embed-stub", ["automobile"]),
    ]


async def test_an_unknown_operator_a_quoted_key_and_booleans_are_filtered_as_json(
    open_client: Any,
) -> None:
    async with open_client() as client:
        for key, value in (("t", {"n": True}), ("one", {"n": 1}), ("q", {'a"b': 1, "a": {"b": 2}})):
            await client.put("/store/items", json={"namespace": ["f"], "key": key, "value": value})

        async def keys(filter: dict[str, Any]) -> Any:
            found = await client.post(
                "/store/items/search", json={"namespace_prefix": ["f"], "filter": filter}
            )
            return [item["key"] for item in found.json()["items"]] if found.is_success else found

        unknown = await keys({"n": {"$in": [1]}})
        quoted = await keys({'a"b': 1})
        as_number = [
            await keys({"n": 1}),
            await keys({"n": {"$eq": 1}}),
            await keys({"n": {"$gte": 1}}),
        ]
        as_boolean = await keys({"n": True})

    assert (unknown.status_code, unknown.json()["error"]["code"]) == (422, "invalid_filter")
    assert quoted == ["q"]  # the key as written, not the path a.b
    assert as_number == [["one"], ["one"], ["one"]]
    assert as_boolean == ["t"]


async def test_a_ttl_past_a_century_is_refused(open_client: Any) -> None:
    async with open_client() as client:
        answers = [
            await client.put(
                "/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "ttl": ttl}
            )
            for ttl in (1e10, 60 * 24 * 366 * 100 + 1)
        ]

    assert [(a.status_code, a.json()["error"]["code"]) for a in answers] == [
        (422, "request_invalid")
    ] * 2


async def test_a_read_refreshes_only_an_item_not_written_since(
    open_client: Any, clock: ManualClock
) -> None:
    async with open_client() as client:
        store = client.services.store.for_tenant("local")  # type: ignore[attr-defined]
        await store.aput(("r",), "k", {"v": 1}, ttl=10)
        # A read then a put in one batch: the put's own (no) expiry stands.
        await store.abatch([GetOp(("r",), "k"), PutOp(("r",), "k", {"v": 2}, ttl=None)])
        clock.advance(minutes=30)
        kept = await store.aget(("r",), "k")
        await store.aput(("s",), "k", {"v": 1}, ttl=10)
        found = await store.asearch(("s",))  # refreshes: 10 more minutes from now
        clock.advance(minutes=8)
        still = await store.aget(("s",), "k", refresh_ttl=False)
        clock.advance(minutes=3)
        gone = await store.aget(("s",), "k")

    assert kept is not None
    assert kept.value == {"v": 2}
    assert [item.key for item in found] == ["k"]
    assert still is not None
    assert gone is None


async def test_a_graph_put_keeps_the_routes_limits_and_a_sync_call_on_the_loop_is_refused(
    open_client: Any,
) -> None:
    async with open_client() as client:
        store = client.services.store.for_tenant("local")  # type: ignore[attr-defined]
        refused = []
        for namespace, key, value in (
            (("a",) * 33, "k", {}),
            (("x" * 257,), "k", {}),
            (("a",), "k" * 1025, {}),
            (("a",), "k", ["not", "a", "dict"]),
            (("langgraph",), "k", {}),
        ):
            with pytest.raises(ValueError, match=r"amespace|key|value") as caught:
                await store.aput(namespace, key, value)
            refused.append(type(caught.value).__name__)
        with pytest.raises(RuntimeError, match="await its async methods"):
            store.put(("a",), "k", {})
        await store.adelete(("langgraph",), "k")  # nothing there: nothing to refuse

    assert refused == ["InvalidNamespaceError"] * 2 + ["ValueError"] * 2 + ["InvalidNamespaceError"]
