"""Graph registry: the names a client may pass as ``graph``, and how to build each one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graphs.consent import ConsentKind
from graphs.tutor.graph import CONSENT_KINDS as TUTOR_CONSENT_KINDS
from graphs.tutor.graph import STEP_LABELS as TUTOR_STEP_LABELS
from graphs.tutor.graph import build_tutor_graph

__all__ = ["GRAPHS", "GraphSpec"]

CompiledGraph = CompiledStateGraph[Any, Any, Any, Any]


@dataclass(frozen=True)
class GraphSpec:
    """What the server needs to know about a graph to serve it."""

    name: str
    build: Callable[[BaseChatModel, BaseCheckpointSaver[Any]], CompiledGraph]
    step_labels: Mapping[str, str]
    consent_kinds: Mapping[str, ConsentKind[Any, Any]]

    def label_for(self, node: str) -> str:
        return self.step_labels.get(node, node.replace("_", " ").capitalize())


GRAPHS: Mapping[str, GraphSpec] = {
    "tutor": GraphSpec(
        name="tutor",
        build=build_tutor_graph,
        step_labels=TUTOR_STEP_LABELS,
        consent_kinds=TUTOR_CONSENT_KINDS,
    ),
}
