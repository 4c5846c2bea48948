"""A graph whose run stays mid-way until the test lets it go, for a page reloaded during a run
(``tests/system/test_sdk_use_stream.py``).

    answer_question → wait_for_release → END

``answer_question`` streams the server's model's answer (the offline model's, word by word);
``wait_for_release`` writes ``$HELD_ANSWER_DIR/holding`` and waits until the test writes
``$HELD_ANSWER_DIR/release``, then says :data:`RELEASED`. Served with
``CONSENTRY_GRAPHS=held=tests.system.held_answer_graph:build_held_answer_graph``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

__all__ = ["HELD_ANSWER_DIR", "RELEASED", "build_held_answer_graph"]

HELD_ANSWER_DIR = "HELD_ANSWER_DIR"
"""The environment variable naming the folder the test and the server share."""
RELEASED = "Released: the run went on after the reload."
_POLL_SECONDS = 0.05


class HeldState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _folder() -> Path:
    return Path(os.environ[HELD_ANSWER_DIR])


async def wait_for_release(state: HeldState) -> dict[str, Any]:
    """Tell the test the run is mid-way, and wait until it says go on (another process)."""
    folder = _folder()
    await asyncio.to_thread((folder / "holding").write_text, "holding")
    # The test is another process: a file is what it can set; no asyncio.Event reaches here.
    while not await asyncio.to_thread((folder / "release").exists):  # noqa: ASYNC110
        await asyncio.sleep(_POLL_SECONDS)
    return {"messages": [AIMessage(RELEASED)]}


def build_held_answer_graph(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    async def answer_question(state: HeldState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(HeldState)
    builder.add_node(answer_question)
    builder.add_node(wait_for_release)
    builder.add_edge(START, "answer_question")
    builder.add_edge("answer_question", "wait_for_release")
    builder.add_edge("wait_for_release", END)
    return builder.compile(checkpointer=checkpointer)
