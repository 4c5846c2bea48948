"""The served graphs as the LangGraph SDK's assistants: one per graph, never created, changed or
deleted by a client. An assistant's id is its graph's name, or the UUID the LangGraph Agent Server
gives a graph's default assistant (``uuid5(NAMESPACE_URL, name)``): an app that kept either id
finds the same assistant here. Its drawing is made once per graph (and ``xray`` depth)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from consentry.errors import NotFoundError
from consentry.runtime.graph_state import as_json
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["Assistant", "Assistants", "assistant_uuid"]


def assistant_uuid(graph: str) -> str:
    """The stable UUID of a graph's assistant (the LangGraph Agent Server's for that graph)."""
    return str(uuid5(NAMESPACE_URL, graph))


@dataclass(frozen=True)
class Assistant:
    assistant_id: str
    """The UUID (``assistant_uuid``); the graph's name is accepted wherever an id is."""
    graph: str
    created_at: datetime
    """When this server started serving it."""


class Assistants:
    """The served graphs by assistant id (their name or UUID)."""

    def __init__(
        self,
        *,
        graphs: Mapping[str, GraphSpec],
        compiled: Callable[[str], CompiledGraph],
        created_at: datetime,
    ) -> None:
        self._graphs = graphs
        self._compiled = compiled
        self._by_id = {
            key: Assistant(assistant_uuid(name), name, created_at)
            for name in sorted(graphs)
            for key in (name, assistant_uuid(name))
        }
        self._drawings: dict[tuple[str, int | bool], dict[str, Any]] = {}

    def all(self) -> list[Assistant]:
        """Every served graph's assistant, by graph name."""
        return [self._by_id[name] for name in sorted(self._graphs)]

    def get(self, assistant_id: str) -> Assistant:
        """The assistant named by its graph or its UUID; ``NotFoundError`` otherwise."""
        found = self._by_id.get(assistant_id)
        if found is None:
            raise NotFoundError.of("assistant", assistant_id)
        return found

    def spec(self, assistant_id: str) -> GraphSpec:
        return self._graphs[self.get(assistant_id).graph]

    def drawing(self, assistant_id: str, *, xray: int | bool = False) -> dict[str, Any]:
        """The graph's nodes and edges (LangGraph's ``get_graph(xray=...).to_json()``), made
        once per graph and depth."""
        graph = self.get(assistant_id).graph
        key = (graph, xray)
        if key not in self._drawings:
            drawn = as_json(self._compiled(graph).get_graph(xray=xray).to_json())
            for node in drawn.get("nodes", []):
                data = node.get("data")
                if isinstance(data, dict):
                    data.pop("id", None)  # the Python import path of a node's runnable
            self._drawings[key] = drawn
        return self._drawings[key]
