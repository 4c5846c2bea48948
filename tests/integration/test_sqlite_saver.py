"""LangGraph's SQLite checkpointer on its own connection thread (``ThreadedSqliteSaver``): a
graph runs on it as on any async saver, and ``prune`` keeps the newest checkpoint of a thread
(with its pending writes, so an interrupted run still resumes) or deletes the thread."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import pytest_asyncio
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from consentry.storage.sqlite_saver import ThreadedSqliteSaver

WAIT_SECONDS = 10.0


class Counted(TypedDict, total=False):
    count: int
    seen: Annotated[list[str], operator.add]


def count_up(state: Counted) -> Counted:
    return {"count": state.get("count", 0) + 1, "seen": ["count_up"]}


def note_count(state: Counted) -> Counted:
    return {"seen": [f"note_count:{state['count']}"]}


def counting_graph(saver: ThreadedSqliteSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(Counted)
    graph.add_node(count_up)
    graph.add_node(note_count)
    graph.add_edge(START, "count_up")
    graph.add_edge("count_up", "note_count")
    graph.add_edge("note_count", END)
    return graph.compile(checkpointer=saver)


class Asked(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]
    work: Annotated[list[str], operator.add]


def consent_graph(
    saver: ThreadedSqliteSaver, *, work_runs: list[str]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``ask`` interrupts while ``work``, in the same step, finishes: ``work``'s result waits as a
    pending write of the newest checkpoint and must not run again on resume."""

    def prepare(_state: Asked) -> Asked:
        return {"answers": ["prepared"]}

    def ask(_state: Asked) -> Asked:
        return {"answers": [interrupt("May I?")]}

    def work(_state: Asked) -> Asked:
        work_runs.append("work")
        return {"work": ["done"]}

    graph = StateGraph(Asked)
    graph.add_node(prepare)
    graph.add_node(ask)
    graph.add_node(work)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "ask")
    graph.add_edge("prepare", "work")
    graph.add_edge("ask", END)
    graph.add_edge("work", END)
    return graph.compile(checkpointer=saver)


def on_thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture
def checkpoint_path(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints.db"


@pytest_asyncio.fixture
async def saver(checkpoint_path: Path) -> AsyncIterator[ThreadedSqliteSaver]:
    opened = await ThreadedSqliteSaver.open(str(checkpoint_path), timeout_seconds=5)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def rows(checkpoint_path: Path) -> Callable[[str, str], int]:
    """How many rows of a table (``checkpoints``, ``writes``) a thread has, read from the file."""

    def count(table: str, thread_id: str) -> int:
        with closing(sqlite3.connect(checkpoint_path)) as conn:
            query = f"SELECT count(*) FROM {table} WHERE thread_id = ?"
            found: int = conn.execute(query, (thread_id,)).fetchone()[0]
        return found

    return count


async def _run_three_times(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str) -> None:
    async with asyncio.timeout(WAIT_SECONDS):
        for n in range(3):
            await graph.ainvoke({"seen": [f"input:{n}"]}, on_thread(thread_id), durability="sync")


THREE_RUNS = {
    "count": 3,
    "seen": [
        *("input:0", "count_up", "note_count:1"),
        *("input:1", "count_up", "note_count:2"),
        *("input:2", "count_up", "note_count:3"),
    ],
}


async def test_a_graph_keeps_its_state_across_invocations_on_one_thread(
    saver: ThreadedSqliteSaver,
) -> None:
    graph = counting_graph(saver)

    await _run_three_times(graph, "t")

    state = await graph.aget_state(on_thread("t"))
    assert state.values == THREE_RUNS
    assert state.next == ()
    newest = await saver.aget_tuple(on_thread("t"))
    assert newest is not None
    assert (
        newest.config["configurable"]["checkpoint_id"]
        == (state.config["configurable"]["checkpoint_id"])
    )


async def test_alist_lists_a_thread_s_checkpoints_newest_first_and_honours_limit(
    saver: ThreadedSqliteSaver,
) -> None:
    await _run_three_times(counting_graph(saver), "t")

    listed = [c async for c in saver.alist(on_thread("t"))]
    two = [c async for c in saver.alist(on_thread("t"), limit=2)]

    # Each invocation: its input, then one step per superstep (input applied, two nodes).
    assert [(c.metadata["step"], c.metadata["source"]) for c in listed] == [
        (step, "input" if step % 4 == 3 else "loop") for step in range(10, -2, -1)
    ]
    ids = [c.config["configurable"]["checkpoint_id"] for c in listed]
    assert ids == sorted(ids, reverse=True)
    assert [c.config for c in two] == [c.config for c in listed[:2]]


async def test_pruning_keeps_only_the_newest_checkpoint_and_the_graph_continues_from_it(
    saver: ThreadedSqliteSaver, rows: Callable[[str, str], int]
) -> None:
    graph = counting_graph(saver)
    await _run_three_times(graph, "pruned")
    await _run_three_times(graph, "untouched")
    untouched = (rows("checkpoints", "untouched"), rows("writes", "untouched"))
    assert untouched[0] > 1
    newest = await saver.aget_tuple(on_thread("pruned"))
    assert newest is not None

    await saver.aprune(["pruned"], strategy="keep_latest")

    assert rows("checkpoints", "pruned") == 1
    assert [c.config async for c in saver.alist(on_thread("pruned"))] == [newest.config]
    assert (rows("checkpoints", "untouched"), rows("writes", "untouched")) == untouched
    assert (await graph.aget_state(on_thread("pruned"))).values == THREE_RUNS

    async with asyncio.timeout(WAIT_SECONDS):
        after = await graph.ainvoke({"seen": ["input:3"]}, on_thread("pruned"), durability="sync")
    assert after == {
        "count": 4,
        "seen": [*THREE_RUNS["seen"], "input:3", "count_up", "note_count:4"],
    }


async def test_an_interrupted_run_resumes_after_pruning_with_its_pending_writes(
    saver: ThreadedSqliteSaver, rows: Callable[[str, str], int]
) -> None:
    work_runs: list[str] = []
    graph = consent_graph(saver, work_runs=work_runs)
    config = on_thread("asked")

    async with asyncio.timeout(WAIT_SECONDS):
        paused = await graph.ainvoke({"answers": []}, config, durability="sync")
    assert [i.value for i in paused["__interrupt__"]] == ["May I?"]
    assert rows("checkpoints", "asked") > 1

    await saver.aprune(["asked"], strategy="keep_latest")

    assert rows("checkpoints", "asked") == 1
    waiting = await graph.aget_state(config)
    assert waiting.next == ("ask",)
    assert [i.value for task in waiting.tasks for i in task.interrupts] == ["May I?"]
    async with asyncio.timeout(WAIT_SECONDS):
        resumed = await graph.ainvoke(Command(resume="yes"), config, durability="sync")
    assert resumed == {"answers": ["prepared", "yes"], "work": ["done"]}
    assert work_runs == ["work"]  # its pending write survived: it did not run again


async def test_pruning_with_the_delete_strategy_removes_the_thread(
    saver: ThreadedSqliteSaver, rows: Callable[[str, str], int]
) -> None:
    graph = counting_graph(saver)
    await _run_three_times(graph, "deleted")
    await _run_three_times(graph, "untouched")
    untouched = rows("checkpoints", "untouched")

    await saver.aprune(["deleted"], strategy="delete")

    assert (rows("checkpoints", "deleted"), rows("writes", "deleted")) == (0, 0)
    assert await saver.aget_tuple(on_thread("deleted")) is None
    assert (await graph.aget_state(on_thread("deleted"))).values == {}
    assert rows("checkpoints", "untouched") == untouched


async def test_pruning_with_an_unknown_strategy_raises_and_deletes_nothing(
    saver: ThreadedSqliteSaver, rows: Callable[[str, str], int]
) -> None:
    await _run_three_times(counting_graph(saver), "t")
    before = rows("checkpoints", "t")

    with pytest.raises(ValueError, match="Unknown prune strategy: 'keep_none'"):
        await saver.aprune(["t"], strategy="keep_none")

    assert rows("checkpoints", "t") == before


async def test_close_ends_the_checkpointer_thread(checkpoint_path: Path) -> None:
    def checkpointer_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "sqlite-checkpointer"}

    before = checkpointer_threads()
    saver = await ThreadedSqliteSaver.open(str(checkpoint_path), timeout_seconds=5)
    started = checkpointer_threads() - before
    assert len(started) == 1

    async with asyncio.timeout(WAIT_SECONDS):
        await saver.close()

    assert not started & set(threading.enumerate())
