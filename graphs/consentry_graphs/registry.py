"""Graph registry: the names a client may pass as ``graph``, and how to build each one.

The tutor is built in. A deployment adds its own graphs without forking: ``CONSENTRY_GRAPHS``
maps names to import paths ``package.module:factory``, where ``factory()`` returns a
:class:`GraphSpec` (see ``docs/consent-kit.md``). :func:`load_graphs` imports them at start-up and
fails with a :class:`GraphLoadError` that says which entry is wrong and why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from consentry_graphs.consent import ConsentKind
from consentry_graphs.tutor.graph import CONSENT_KINDS as TUTOR_CONSENT_KINDS
from consentry_graphs.tutor.graph import STEP_LABELS as TUTOR_STEP_LABELS
from consentry_graphs.tutor.graph import build_tutor_graph

__all__ = ["BUILTIN_GRAPHS", "GraphLoadError", "GraphSpec", "load_graphs"]

CompiledGraph = CompiledStateGraph[Any, Any, Any, Any]


@dataclass(frozen=True)
class GraphSpec:
    """What the server needs to know about a graph to serve it.

    ``build(model, checkpointer)`` compiles the graph once per server, with the server's chat
    model and checkpointer. The graph gets the caller's services through LangGraph's runtime
    context (``consentry_graphs.services.GraphContext``) and, for a new message, the input
    ``{"messages": [HumanMessage], "project_id": str, "note_id": str | None}``. Every kind the
    graph asks with ``ConsentKind.ask`` must be in ``consent_kinds``.
    """

    name: str
    build: Callable[[BaseChatModel, BaseCheckpointSaver[Any]], CompiledGraph]
    step_labels: Mapping[str, str]
    consent_kinds: Mapping[str, ConsentKind[Any, Any]]

    def label_for(self, node: str) -> str:
        return self.step_labels.get(node, node.replace("_", " ").capitalize())


BUILTIN_GRAPHS: Mapping[str, GraphSpec] = {
    "tutor": GraphSpec(
        name="tutor",
        build=build_tutor_graph,
        step_labels=TUTOR_STEP_LABELS,
        consent_kinds=TUTOR_CONSENT_KINDS,
    ),
}


class GraphLoadError(ValueError):
    """A ``CONSENTRY_GRAPHS`` entry cannot be loaded; the message names the entry and the cause."""


def load_graphs(extra: Mapping[str, str]) -> dict[str, GraphSpec]:
    """The built-in graphs plus ``extra`` (name → ``package.module:factory``), by name."""
    graphs = dict(BUILTIN_GRAPHS)
    for name, path in extra.items():
        if name in graphs:
            raise GraphLoadError(
                f"CONSENTRY_GRAPHS: {name!r} is the name of a built-in graph; choose another"
            )
        spec = _load_spec(name, path)
        graphs[name] = spec if spec.name == name else replace(spec, name=name)
    return graphs


def _load_spec(name: str, path: str) -> GraphSpec:
    where = f"CONSENTRY_GRAPHS: graph {name!r} ({path})"
    module_name, _, factory_name = path.partition(":")
    if not module_name or not factory_name:
        raise GraphLoadError(f"{where}: the import path must look like `package.module:factory`")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raises while importing
        raise GraphLoadError(f"{where}: cannot import module {module_name!r}: {exc}") from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise GraphLoadError(f"{where}: module {module_name!r} has no function {factory_name!r}")
    try:
        spec = factory()
    except (Exception, SystemExit) as exc:
        raise GraphLoadError(f"{where}: {factory_name}() failed: {exc!r}") from exc
    if not isinstance(spec, GraphSpec):
        raise GraphLoadError(
            f"{where}: {factory_name}() returned {type(spec).__name__}, "
            "not a consentry_graphs.registry.GraphSpec"
        )
    return spec
