"""LangGraph's static breakpoints through the real ``langgraph-sdk`` client: a run asked with
``interrupt_before`` / ``interrupt_after`` stops there (the thread's state names the node next),
a run with no input goes on from where it stopped, ``"*"`` stops before every node, and a node
the graph does not have is refused by name before anything runs."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from tests.langgraph_client import sdk_client

PROGRESS = "progress=tests.graph_forms:progress_writer"
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}


def _said(state: dict[str, Any]) -> list[str]:
    return [m["content"] for m in state["values"]["messages"]]


async def test_a_run_stops_at_its_breakpoints_and_a_run_with_no_input_goes_on(
    open_live: Any,
) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create())["thread_id"]
        stopped = await sdk.runs.wait(
            thread_id, "progress", input=PLAN, interrupt_before=["finish"]
        )
        before = await sdk.threads.get_state(thread_id)
        runs = await sdk.runs.list(thread_id)
        went_on = await sdk.runs.wait(thread_id, "progress", input=None)
        done = await sdk.threads.get_state(thread_id)

        other = (await sdk.threads.create())["thread_id"]
        await sdk.runs.wait(other, "progress", input=PLAN, interrupt_after=["report"])
        after = await sdk.threads.get_state(other)
        await sdk.runs.wait(other, "progress", input=PLAN, interrupt_before="*")
        everywhere = await sdk.threads.get_state(other)

    assert stopped["messages"][-1]["content"] == "Reported."  # `report` ran, `finish` did not
    assert before["next"] == ["finish"]
    assert runs[0]["status"] == "success"
    assert went_on["messages"][-1]["content"] == "Reported."
    assert done["next"] == []
    assert _said(done) == ["Plan a trip", "Reported."]
    assert after["next"] == ["finish"]
    assert everywhere["next"] == ["report"]  # stopped before the first node of the new input
    assert _said(everywhere) == ["Plan a trip", "Reported.", "Plan a trip"]


async def test_a_breakpoint_the_graph_does_not_have_is_refused_by_name(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        with pytest.raises(UnprocessableEntityError) as refused:
            await sdk.runs.create(None, "progress", input=PLAN, interrupt_after=["nowhere"])
        threads = await sdk.threads.search()

    error = refused.value.response.json()["error"]
    assert error["code"] == "invalid_breakpoint"
    assert error["details"] == {
        "field": "interrupt_after",
        "unknown": ["nowhere"],
        "nodes": ["finish", "report"],
    }
    assert threads == []  # refused before anything was stored
