"""Graphs in every form ``CONSENTRY_GRAPHS`` accepts, and some it refuses, for the registry's
unit tests and the served-graphs integration tests (``tests.graph_forms:<attr>``).

The good ones are the word count example (``consentry_graphs.examples.word_count``) reached
another way: a factory of no arguments returning the compiled graph or the builder, a factory
taking ``(model, checkpointer)``, a ``GraphSpec`` factory. ``plain_typing_state`` is a graph whose
state is a ``typing.TypedDict`` (pydantic cannot describe it on Python 3.11), ``opaque_field``
one with a field of a type pydantic knows nothing about, ``context_graph`` one whose input has
the thread's ``project_id`` and ``note_id`` and says what it got, ``own_context`` one with its own
``context_schema`` that also reads Consentry's services, ``delta_items`` one whose state is kept
as deltas, ``progress_writer`` one that writes to LangGraph's stream writer.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any
from uuid import uuid4

import typing_extensions
from langchain_core.callbacks import dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from consentry_graphs.examples import word_count
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services

BUILT_WITH: list[tuple[BaseChatModel, BaseCheckpointSaver[Any]]] = []
"""What ``build_with_model`` was called with, in order."""


def compiled_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    return word_count.graph


def state_graph() -> StateGraph[Any, Any, Any, Any]:
    return word_count.builder


def build_with_model(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    BUILT_WITH.append((model, checkpointer))
    return word_count.builder.compile(checkpointer=checkpointer, name="words_built")


def graph_spec() -> GraphSpec:
    return GraphSpec(
        name="words_spec",
        build=lambda _, checkpointer: word_count.builder.compile(checkpointer=checkpointer),
        step_labels={"count_words": "Counting your words"},
        consent_kinds={},
    )


def interrupting_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The word count, compiled to stop before its only node (``interrupt_before``)."""
    return word_count.builder.compile(interrupt_before=["count_words"])


class TypingState(typing.TypedDict, total=False):
    topic: str
    notes: list[str]


def _echo(state: TypingState) -> dict[str, Any]:
    return {"notes": [*state.get("notes", []), state.get("topic", "")]}


_typing = StateGraph(TypingState)
_typing.add_node("echo", _echo)
_typing.add_edge(START, "echo")
_typing.add_edge("echo", END)
plain_typing_state = _typing.compile()


class Opaque:
    """A type pydantic has no schema for."""


class OpaqueState(typing.TypedDict, total=False):
    label: str
    thing: Opaque


_opaque = StateGraph(OpaqueState)
_opaque.add_node("noop", lambda state: {})
_opaque.add_edge(START, "noop")
_opaque.add_edge("noop", END)
opaque_field = _opaque.compile()


class ContextInput(typing_extensions.TypedDict, total=False):
    topic: str
    project_id: str
    note_id: str | None


class ContextState(ContextInput, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _tell_context(state: ContextState) -> dict[str, Any]:
    told = f"{state.get('topic')} in {state.get('project_id')} about {state.get('note_id')}"
    return {"messages": [AIMessage(told, id=f"msg-{uuid4().hex}")]}


_context = StateGraph(ContextState, input_schema=ContextInput)
_context.add_node("tell_context", _tell_context)
_context.add_edge(START, "tell_context")
_context.add_edge("tell_context", END)
context_graph = _context.compile()
"""A graph whose input has the thread's ``project_id`` and ``note_id``: it says what it got."""

# Refused entries.

no_entry_point: StateGraph[Any, Any, Any, Any] = StateGraph(TypingState)
no_entry_point.add_node("echo", _echo)

not_a_graph = 42


def returns_text() -> str:
    return "tutor"


def fails() -> GraphSpec:
    raise RuntimeError("no database for this graph")


def takes_three(model: Any, checkpointer: Any, store: Any) -> Any:
    raise AssertionError("never called")


def takes_config(config: dict[str, Any]) -> Any:
    raise AssertionError("never called")


def builds_text(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]) -> Any:
    return "not a graph"


def build_fails(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]) -> Any:
    raise RuntimeError("the model server is down")


# A graph with its own runtime context and configurable values (``test_run_options.py``).


@dataclass
class ModelChoice:
    """The graph's ``context_schema``: which model, how many words at most, and since when
    (a date, which a node formats as one)."""

    model: str = "small"
    max_words: int = 50
    since: date | None = None


def _tell_options(
    state: MessagesState, runtime: Runtime[ModelChoice], config: RunnableConfig
) -> dict[str, Any]:
    persona = config["configurable"].get("persona")
    told = (
        f"{runtime.context.model} model, {runtime.context.max_words} words, persona {persona}, "
        f"for {graph_services().user}"
    )
    if runtime.context.since is not None:
        told += f", since {runtime.context.since:%d %B %Y}"  # a date's format: text would fail
    return {"messages": [AIMessage(told, id=f"msg-{uuid4().hex}")]}


def _ask_to_go_on(state: MessagesState) -> dict[str, Any]:
    interrupt("Go on?")
    return {}


_options = StateGraph(MessagesState, context_schema=ModelChoice)
_options.add_node("tell_before", _tell_options)
_options.add_node("ask", _ask_to_go_on)
_options.add_node("tell_after", _tell_options)
_options.add_edge(START, "tell_before")
_options.add_edge("tell_before", "ask")
_options.add_edge("ask", "tell_after")
_options.add_edge("tell_after", END)
own_context = _options.compile()
"""Says the context and ``configurable`` values it runs with, asks to go on, and says them
again: what a resume runs with."""


# A graph whose state is kept as deltas (LangGraph's ``DeltaChannel``): a checkpoint holds no
# value of ``items``, which is rebuilt from its ancestors' writes. ``step_a`` then ``step_b``.


def _appended(state: list[str], writes: list[list[str]]) -> list[str]:
    return [*state, *(item for written in writes for item in written)]


class DeltaState(typing_extensions.TypedDict, total=False):
    items: Annotated[list[str], DeltaChannel(_appended)]


_delta = StateGraph(DeltaState)
_delta.add_node("step_a", lambda state: {"items": ["a"]})
_delta.add_node("step_b", lambda state: {"items": ["b"]})
_delta.add_edge(START, "step_a")
_delta.add_edge("step_a", "step_b")
_delta.add_edge("step_b", END)
delta_items = _delta.compile()


# A graph that reports its progress through LangGraph's stream writer, from a sync node (run in
# a worker thread): ``report`` then ``finish``.


def _report(state: MessagesState) -> dict[str, Any]:
    write = get_stream_writer()
    write({"progress": 50, "stage": "halfway"})
    dispatch_custom_event("reported", {"stage": "halfway"})  # a callback from this thread
    write({"progress": 100, "stage": "done"})
    return {"messages": [AIMessage("Reported.", id=f"msg-{uuid4().hex}")]}


_progress = StateGraph(MessagesState)
_progress.add_node("report", _report)
_progress.add_node("finish", lambda state: {})
_progress.add_edge(START, "report")
_progress.add_edge("report", "finish")
_progress.add_edge("finish", END)
progress_writer = _progress.compile()
