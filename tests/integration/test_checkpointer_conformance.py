"""``ConsentrySaver`` passes LangGraph's own checkpointer conformance suite
(``langgraph-checkpoint-conformance``), every capability (the base ones and ``delete_for_runs``,
``copy_thread``, ``prune``), on SQLite and PostgreSQL, through its async methods; and its
synchronous methods read and write the same tables (a graph run with ``invoke``)."""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from consentry.storage.checkpoints import ConsentrySaver
from consentry.storage.db.database import Database


async def test_consentry_saver_passes_langgraph_conformance_suite(db_url: str) -> None:
    @checkpointer_test(name="ConsentrySaver")
    async def consentry_saver() -> AsyncIterator[ConsentrySaver]:
        db = Database(db_url)
        await db.open()
        await db.migrate()
        saver = ConsentrySaver(db, database_url=db_url)
        try:
            yield saver
        finally:
            saver.close_sync()
            await db.close()

    report = await validate(consentry_saver)
    report.print_report()
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    assert report.passed_all_base()
    tested = {name for name, result in report.results.items() if result.detected}
    assert tested == {capability.value for capability in ALL_CAPABILITIES}
    assert all(result.passed for result in report.results.values())


class Asked(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def ask_name(state: Asked) -> Asked:
    return {"answers": [str(interrupt("your name?"))]}


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    await database.open()
    await database.migrate()
    try:
        yield database
    finally:
        await database.close()


async def test_sync_methods_run_a_graph_and_async_ones_read_it(db: Database, db_url: str) -> None:
    saver = ConsentrySaver(db, database_url=db_url)
    builder = StateGraph(Asked)
    builder.add_node(ask_name)
    builder.add_edge(START, "ask_name")
    builder.add_edge("ask_name", END)
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "sync-thread"}}
    try:
        first = graph.invoke({"answers": []}, config)
        assert [i.value for i in first["__interrupt__"]] == ["your name?"]
        waiting = await graph.aget_state(config)
        assert [i.value for i in waiting.interrupts] == ["your name?"]
        done = await graph.ainvoke(Command(resume="Ada"), config)
        assert done == {"answers": ["Ada"]}
        assert graph.get_state(config).values == {"answers": ["Ada"]}
        history = [s.metadata["step"] for s in graph.get_state_history(config) if s.metadata]
        assert history == sorted(history, reverse=True)
        assert len(history) >= 3
    finally:
        saver.close_sync()
