"""A run's own ``context`` and ``configurable`` values reach its graph as in LangGraph
(``Runtime.context``, ``config["configurable"]``), checked against the graph's ``context_schema``,
beside Consentry's services (``graph_services()``), which no longer take the context slot. The
thread keeps them: a decision sent without them, from ``/v1`` or the inbox, resumes the graph
under the options its consent was asked under. Through ``/v1/chat`` and the real
``langgraph-sdk`` client, on both databases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from consentry.schemas.events import ConsentEvent, MessageEvent
from tests.langgraph_client import parts, sdk_client
from tests.sse import chat

OWN = "own=tests.graph_forms:own_context"
HI = {"messages": [{"role": "user", "content": "Hi"}]}


def _said(events: list[Any]) -> list[str]:
    return [e.content for e in events if isinstance(e, MessageEvent)]


async def _answer(client: httpx.AsyncClient, asked: list[Any], **options: Any) -> list[Any]:
    (consent,) = [e for e in asked if isinstance(e, ConsentEvent)]
    resume = {"approval_id": consent.approval_id, "value": "yes"}
    return await chat(client, {"thread_id": consent.thread_id, "resume": resume, **options})


async def test_the_graph_gets_its_context_and_configurable_and_a_decision_keeps_them(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=OWN) as client:
        asked = await chat(
            client,
            {
                "graph": "own",
                "input": HI,
                "context": {"model": "large"},
                "configurable": {"persona": "pirate"},
            },
        )
        resumed = await _answer(client, asked)  # sent without options: the thread's
        plain = await chat(client, {"graph": "own", "input": HI})
        changed = await _answer(client, plain, context={"model": "tiny", "max_words": 5})

    told = "large model, 50 words, persona pirate, for local/local"
    assert _said(asked) == [told]
    assert _said(resumed) == [told]
    # No options on a new thread: the context schema's defaults, no configurable values.
    assert _said(plain) == ["small model, 50 words, persona None, for local/local"]
    assert _said(changed) == ["tiny model, 5 words, persona None, for local/local"]


async def test_the_inbox_of_another_process_resumes_under_the_options_of_the_consent(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=OWN) as client:
        asked = await chat(
            client,
            {"graph": "own", "input": HI, "context": {"max_words": 7}, "configurable": {"a": 1}},
        )
    (consent,) = [e for e in asked if isinstance(e, ConsentEvent)]
    async with open_client(graphs=OWN) as client:  # the next process: nothing in memory
        decided = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision", json={"value": "yes"}
        )
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        thread = f"/v1/threads/{consent.thread_id}/messages"
        messages = (await client.get(thread)).json()["messages"]

    assert decided.status_code == 202, decided.text
    told = "small model, 7 words, persona None, for local/local"
    assert [m["content"] for m in messages] == ["Hi", told, told]


async def test_a_graph_given_no_options_gets_its_defaults_on_every_path_and_typed_fields_typed(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=OWN) as client:
        plain = await chat(client, {"graph": "own", "input": HI})
        dated = await chat(
            client, {"graph": "own", "input": HI, "context": {"since": "2026-03-04"}}
        )
    (consent,) = [e for e in plain if isinstance(e, ConsentEvent)]
    async with open_client(graphs=OWN) as client:  # the inbox of the next process
        await client.post(f"/v1/approvals/{consent.approval_id}/decision", json={"value": "yes"})
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        thread = f"/v1/threads/{consent.thread_id}/messages"
        messages = (await client.get(thread)).json()["messages"]

    told = "small model, 50 words, persona None, for local/local"
    assert [m["content"] for m in messages] == ["Hi", told, told]
    assert _said(dated) == [f"{told}, since 04 March 2026"]  # a date, not the text sent


@pytest.mark.parametrize(
    ("options", "code", "loc"),
    [
        ({"context": {"model": 3}}, "invalid_context", ["context", "model"]),
        ({"context": {"max_words": "many"}}, "invalid_context", ["context", "max_words"]),
        ({"configurable": {"thread_id": "x"}}, "invalid_config", ["configurable", "thread_id"]),
        ({"configurable": {"__pregel_x": 1}}, "invalid_config", ["configurable", "__pregel_x"]),
    ],
)
async def test_options_that_do_not_fit_are_refused_by_name_and_nothing_is_stored(
    open_client: Callable[..., Any], options: dict[str, Any], code: str, loc: list[str]
) -> None:
    async with open_client(graphs=OWN) as client:
        refused = await client.post("/v1/chat", json={"graph": "own", "input": HI, **options})
        threads = (await client.get("/v1/threads")).json()["threads"]

    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == code
    assert [e["loc"] for e in error["details"]["errors"]] == [loc]
    assert threads == []


async def test_a_refused_decision_option_leaves_the_consent_pending(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=OWN) as client:
        asked = await chat(client, {"graph": "own", "input": HI, "context": {"model": "large"}})
        (consent,) = [e for e in asked if isinstance(e, ConsentEvent)]
        refused = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "value": "yes"},
                "context": {"max_words": -1.5},
            },
        )
        pending = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        resumed = await _answer(client, asked)

    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_context")
    assert [a["approval_id"] for a in pending["approvals"]] == [consent.approval_id]
    assert _said(resumed) == ["large model, 50 words, persona None, for local/local"]


async def test_the_sdk_sends_context_and_config_and_reads_the_context_schema(
    open_live: Any,
) -> None:
    async with open_live(graphs=OWN) as (client, _), sdk_client(client) as sdk:
        thread = await sdk.threads.create()
        await parts(
            sdk.runs.stream(
                thread["thread_id"],
                "own",
                input=HI,
                context={"model": "large", "max_words": 9},
                config={"configurable": {"persona": "owl"}},
            )
        )
        state = await sdk.threads.get_state(thread["thread_id"])
        (interrupt,) = state["interrupts"]
        done = await sdk.runs.wait(
            thread["thread_id"], "own", command={"resume": {interrupt["id"]: "yes"}}
        )
        schemas = await sdk.assistants.get_schemas("own")
        with pytest.raises(httpx.HTTPStatusError) as unserved:
            await sdk.runs.wait(None, "own", input=HI, config={"recursion_limit": 3})
        with pytest.raises(httpx.HTTPStatusError) as misfit:
            await sdk.runs.wait(None, "own", input=HI, context={"max_words": "many"})

    told = "large model, 9 words, persona owl, for local/local"
    assert [m["content"] for m in done["messages"]] == ["Hi", told, told]  # type: ignore[index]
    assert schemas["context_schema"] is not None
    assert set(schemas["context_schema"]["properties"]) == {"model", "max_words", "since"}
    assert schemas["config_schema"] is None
    assert unserved.value.response.json()["error"]["code"] == "unsupported_field"
    assert unserved.value.response.json()["error"]["details"] == {
        "fields": ["config.recursion_limit"]
    }
    assert misfit.value.response.json()["error"]["code"] == "invalid_context"
