"""The consent graph of ``consentry bench --graph memory_flow``: ``consent_flow``'s conversation
on a graph that also keeps a memory per person in LangGraph's Store, as a memory-using app does,
so a server's cost is its serving stack and its Store calls.

    analyze_message → draft_change → request_change_consent → apply_change | cancel_change

The nodes, edges, consent and answers are ``consent_flow``'s (:func:`add_consent_flow`); three
nodes also call the Store (``runtime.store``), in the person's namespace
``("memory_flow", "decisions", "<tenant>/<user>")`` (``store_labels.person_label``):

- ``analyze_message`` reads the person's most recent decisions: one ``asearch(namespace,
  limit=5)``, into the state's ``memories`` (where a model's prompt would take them; this graph
  has none);
- ``apply_change`` and ``cancel_change`` remember the decision: one ``aput(namespace, <the
  proposal's summary>, {"summary", "decision"})``, after the change is applied or cancelled.

So a conversation makes exactly two Store calls: a search in its message's run, a put in its
decision's run (``request_change_consent``, which runs again on the decision, calls none). The
put is keyed by what was proposed: a step run again writes the same item again, and a person
holds one item per proposal (the bench, whose every message is the same, one per person), so
the search reads a bounded number of items however many conversations ran. No ``query``: the
graph asks for no ranking, and what a put costs depends on the Store's index (none in the bench).

Consentry serves it with
``CONSENTRY_GRAPHS=memory_flow=consentry_graphs.examples.memory_flow:graph_spec`` and gives it
its own Store; the bench's naive baseline compiles :func:`build_memory_flow_graph` with LangGraph's
store on its kind of database (``AsyncSqliteStore``, ``AsyncPostgresStore``; ``bench.baseline``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from consentry_graphs.examples.consent_flow import (
    CHANGE,
    STEP_LABELS,
    ChangeProposal,
    ConsentFlowState,
    add_consent_flow,
    analyze_message,
    apply_change,
    cancel_change,
)
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services
from consentry_graphs.store_labels import person_label

__all__ = [
    "DECISIONS",
    "GRAPH_NAME",
    "RECALLED",
    "MemoryFlowState",
    "StoreMissingError",
    "build_memory_flow_graph",
    "graph_spec",
]

GRAPH_NAME = "memory_flow"
DECISIONS = ("memory_flow", "decisions")
"""The namespace of every person's remembered decisions; a person's own is this and their id."""
RECALLED = 5
"""The most decisions ``analyze_message`` reads (the most recent)."""


class MemoryFlowState(ConsentFlowState, total=False):
    memories: list[str]
    """The person's most recent decisions, ``"<decision>: <summary>"``, as read with the
    message."""


class StoreMissingError(RuntimeError):
    """The graph ran without a Store (compile it with one: a server gives it its own)."""


async def analyze_message_and_recall(
    state: MemoryFlowState, runtime: Runtime[Any]
) -> dict[str, Any]:
    found = await _store(runtime).asearch(_namespace(), limit=RECALLED)
    memories = [f"{item.value.get('decision')}: {item.value.get('summary')}" for item in found]
    return {**analyze_message(state), "memories": memories}


async def apply_change_and_remember(
    state: MemoryFlowState, runtime: Runtime[Any]
) -> dict[str, Any]:
    applied = await apply_change(state)
    await _remember(state, runtime)
    return applied


async def cancel_change_and_remember(
    state: MemoryFlowState, runtime: Runtime[Any]
) -> dict[str, Any]:
    cancelled = cancel_change(state)
    await _remember(state, runtime)
    return cancelled


async def _remember(state: MemoryFlowState, runtime: Runtime[Any]) -> None:
    """Keep the person's decision on the proposal, keyed by the proposal (one item each)."""
    proposal = ChangeProposal.model_validate(state["proposal"])
    decision = CHANGE.restore(state["decision"]).decision
    value = {"summary": proposal.summary, "decision": decision}
    await _store(runtime).aput(_namespace(), proposal.summary, value)


def _store(runtime: Runtime[Any]) -> BaseStore:
    if runtime.store is None:
        raise StoreMissingError(
            "memory_flow reads and writes the Store: compile it with one (Consentry gives "
            "every graph it serves its own)."
        )
    return runtime.store


def _namespace() -> tuple[str, ...]:
    return (*DECISIONS, person_label(graph_services().user))


def build_memory_flow_graph(
    model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    store: BaseStore | None = None,
) -> CompiledStateGraph[MemoryFlowState, None, MemoryFlowState, MemoryFlowState]:
    """The server passes its chat model to every graph (this one needs none) and gives it its
    Store; elsewhere pass ``store``."""
    builder = StateGraph(MemoryFlowState)
    add_consent_flow(
        builder,
        analyze=analyze_message_and_recall,
        apply=apply_change_and_remember,
        cancel=cancel_change_and_remember,
    )
    return builder.compile(checkpointer=checkpointer, store=store, name=GRAPH_NAME)


def graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=memory_flow=consentry_graphs.examples.memory_flow:graph_spec``
    loads."""
    return GraphSpec(
        name=GRAPH_NAME,
        build=build_memory_flow_graph,
        step_labels=STEP_LABELS,
        consent_kinds={CHANGE.name: CHANGE},
    )
