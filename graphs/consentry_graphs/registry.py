"""Graph registry: the names a client may pass as ``graph``, and how to build each one.

The tutor is built in. A deployment adds its own graphs without forking: ``CONSENTRY_GRAPHS``
maps names to ``package.module:attr`` or ``path/to/file.py:attr`` (``consentry serve --config
langgraph.json`` fills it from a LangGraph project's ``graphs``), where ``attr`` is any of:

- a compiled graph (``builder.compile()``, or any ``Pregel``): served with the server's
  checkpointer in place of its own (``graph.copy``), everything else kept (interrupts before or
  after nodes, its name, its config);
- a ``StateGraph`` builder: compiled with the server's checkpointer;
- a function with no arguments returning one of these, or a :class:`GraphSpec`;
- a function taking ``(model, checkpointer)``, the server's chat model and checkpointer,
  returning a compiled graph (or a builder).

A graph that is not a ``GraphSpec`` asks no consent of the kit (``consent_kinds`` is empty: its
raw ``interrupt()`` calls are consents of their own) and its steps are labelled from its node
names. :func:`load_graphs` imports every entry at start-up and fails with a
:class:`GraphLoadError` that names the entry and the cause; :func:`build_graphs` compiles each
graph once with the server's model and checkpointer and describes what it takes and gives
(``graph_io``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph, StateGraph
from langgraph.pregel import Pregel

from consentry_graphs.consent import ConsentKind
from consentry_graphs.declared_kinds import check_declared_kinds
from consentry_graphs.graph_io import GraphIO, describe_graph
from consentry_graphs.tutor.graph import CONSENT_KINDS as TUTOR_CONSENT_KINDS
from consentry_graphs.tutor.graph import STEP_LABELS as TUTOR_STEP_LABELS
from consentry_graphs.tutor.graph import build_tutor_graph

__all__ = ["BUILTIN_GRAPHS", "GraphLoadError", "GraphSpec", "build_graphs", "load_graphs"]

log = logging.getLogger(__name__)

CompiledGraph = CompiledStateGraph[Any, Any, Any, Any]
Build = Callable[[BaseChatModel, BaseCheckpointSaver[Any]], CompiledGraph]


@dataclass(frozen=True)
class GraphSpec:
    """What the server needs to know about a graph to serve it.

    ``build(model, checkpointer)`` compiles the graph once per server, with the server's chat
    model and checkpointer. The graph gets the caller's services through LangGraph's runtime
    context (``consentry_graphs.services.GraphServices``) and, for a new message, the input
    ``{"messages": [HumanMessage], "project_id": str, "note_id": str | None}`` (or the caller's
    own ``input``). Every kind the graph asks with ``ConsentKind.ask`` must be in
    ``consent_kinds``.
    """

    name: str
    build: Build
    step_labels: Mapping[str, str]
    consent_kinds: Mapping[str, ConsentKind[Any, Any]]
    io: GraphIO | None = None
    """What the compiled graph takes and gives (its JSON Schemas, the check of an ``input``):
    set by :func:`build_graphs`; None on a spec that was not built."""

    def label_for(self, node: str) -> str:
        """The node's label, else one made from its name: ``ask_city`` → "Ask city", a
        middleware's hook ``HumanInTheLoopMiddleware.after_model`` → "After model
        (HumanInTheLoopMiddleware)"."""
        if node in self.step_labels:
            return self.step_labels[node]
        owner, dot, hook = node.rpartition(".")
        words = " ".join(hook.replace("_", " ").split())
        label = words[:1].upper() + words[1:]
        return f"{label} ({owner})" if dot else label


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
    """The built-in graphs plus ``extra`` (name → ``package.module:attr`` or
    ``path/to/file.py:attr``), by name."""
    graphs = dict(BUILTIN_GRAPHS)
    for name, path in extra.items():
        if name in graphs:
            raise GraphLoadError(
                f"CONSENTRY_GRAPHS: {name!r} is the name of a built-in graph; choose another"
            )
        spec = _Entry(name, path).spec()
        graphs[name] = spec if spec.name == name else replace(spec, name=name)
    return graphs


def build_graphs(
    specs: Mapping[str, GraphSpec], model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]
) -> tuple[dict[str, GraphSpec], dict[str, CompiledGraph]]:
    """Compile every graph once with the server's ``model`` and ``checkpointer``: the specs,
    each with what its graph takes and gives (``GraphSpec.io``), and the compiled graphs. A
    graph whose nodes use a consent kind it does not declare is refused
    (``declared_kinds.check_declared_kinds``)."""
    built: dict[str, GraphSpec] = {}
    compiled: dict[str, CompiledGraph] = {}
    for name, spec in specs.items():
        try:
            graph = spec.build(model, checkpointer)
        except GraphLoadError:
            raise
        except Exception as exc:
            raise GraphLoadError(f"graph {name!r} cannot be built: {exc!r}") from exc
        problem = check_declared_kinds(name, graph, spec.consent_kinds)
        if problem is not None:
            raise GraphLoadError(problem)
        io = describe_graph(graph)
        for problem in io.unavailable:
            log.warning("graph %r: %s", name, problem)
        built[name], compiled[name] = replace(spec, io=io), graph
    return built, compiled


class _Entry:
    """One ``CONSENTRY_GRAPHS`` entry, loaded into a :class:`GraphSpec`."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.path = name, path
        self.where = f"CONSENTRY_GRAPHS: graph {name!r} ({path})"

    def fail(self, cause: str) -> GraphLoadError:
        return GraphLoadError(f"{self.where}: {cause}")

    def spec(self) -> GraphSpec:
        location, _, attr = self.path.rpartition(":")
        if not location or not attr:
            raise self.fail(
                "the import path must look like `package.module:attr` or `path/to/file.py:attr`"
            )
        module = self._import_file(location) if location.endswith(".py") else self._import(location)
        if not hasattr(module, attr):
            raise self.fail(f"module {location!r} has no attribute {attr!r}")
        target = getattr(module, attr)
        if isinstance(target, GraphSpec | Pregel | StateGraph):
            return self._spec_of(target, attr)
        if not callable(target):
            raise self.fail(
                f"{attr!r} is of type {type(target).__name__}: name a compiled graph, a "
                "StateGraph, a GraphSpec, or a function returning one"
            )
        if self._takes_model_and_checkpointer(target, attr):
            return self._plain(self._factory_build(target, attr))
        try:
            made = target()
        except (Exception, SystemExit) as exc:
            raise self.fail(f"{attr}() failed: {exc!r}") from exc
        if not isinstance(made, GraphSpec | Pregel | StateGraph):
            raise self.fail(
                f"{attr}() returned {type(made).__name__}, not a compiled graph, a StateGraph or "
                "a consentry_graphs.registry.GraphSpec"
            )
        return self._spec_of(made, f"{attr}()")

    def _import(self, module_name: str) -> ModuleType:
        try:
            return importlib.import_module(module_name)
        except Exception as exc:  # ImportError, or whatever the module raises while importing
            raise self.fail(f"cannot import module {module_name!r}: {exc}") from exc

    def _import_file(self, location: str) -> ModuleType:
        """A graph's file, imported once under a name made from its absolute path (its own
        imports resolve from ``sys.path``: ``consentry serve`` puts the project there)."""
        path = Path(location).resolve()
        if not path.is_file():
            raise self.fail(f"no file {str(path)!r}")
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
        module_name = f"consentry_graph_file_{digest}"
        if module_name in sys.modules:
            return sys.modules[module_name]
        found = importlib.util.spec_from_file_location(module_name, path)
        if found is None or found.loader is None:
            raise self.fail(f"cannot import {str(path)!r} as Python")
        module = importlib.util.module_from_spec(found)
        sys.modules[module_name] = module
        try:
            found.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            del sys.modules[module_name]
            raise self.fail(f"cannot import file {str(path)!r}: {exc!r}") from exc
        return module

    def _takes_model_and_checkpointer(self, factory: Callable[..., Any], attr: str) -> bool:
        """False for a function of no arguments; True for one that takes the two positional
        arguments ``(model, checkpointer)``; a :class:`GraphLoadError` for any other."""
        try:
            parameters = list(inspect.signature(factory).parameters.values())
        except (TypeError, ValueError):  # a callable without a signature Python can read
            return False
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        required = [p for p in parameters if p.default is p.empty and p.kind not in variadic]
        if not required:
            return False
        positional = [
            p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        takes_two = len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)
        if takes_two and len(required) <= 2 and all(p in positional for p in required):
            return True
        raise self.fail(
            f"{attr}() takes {', '.join(p.name for p in required)}: a graph factory takes no "
            "arguments, or (model, checkpointer)"
        )

    def _factory_build(self, factory: Callable[..., Any], attr: str) -> Build:
        def build(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]) -> CompiledGraph:
            try:
                made = factory(model, checkpointer)
            except (Exception, SystemExit) as exc:
                raise self.fail(f"{attr}(model, checkpointer) failed: {exc!r}") from exc
            if not isinstance(made, Pregel | StateGraph):
                raise self.fail(
                    f"{attr}(model, checkpointer) returned {type(made).__name__}, not a compiled "
                    "graph or a StateGraph"
                )
            return self._with_checkpointer(made, checkpointer, attr)

        return build

    def _spec_of(
        self,
        target: GraphSpec | Pregel[Any, Any, Any, Any] | StateGraph[Any, Any, Any, Any],
        what: str,
    ) -> GraphSpec:
        if isinstance(target, GraphSpec):
            return target
        if isinstance(target, StateGraph):
            try:
                target.validate()  # compiled once, with the server's checkpointer, by build
            except Exception as exc:
                raise self.fail(f"{what} cannot be compiled: {exc}") from exc
        graph = target
        return self._plain(
            lambda _, checkpointer: self._with_checkpointer(graph, checkpointer, what)
        )

    def _with_checkpointer(
        self,
        graph: Pregel[Any, Any, Any, Any] | StateGraph[Any, Any, Any, Any],
        checkpointer: BaseCheckpointSaver[Any],
        what: str,
    ) -> CompiledGraph:
        if isinstance(graph, StateGraph):
            try:
                return graph.compile(checkpointer=checkpointer)
            except Exception as exc:
                raise self.fail(f"{what} cannot be compiled: {exc}") from exc
        if graph.checkpointer is not checkpointer:
            graph = graph.copy(update={"checkpointer": checkpointer})
        # A functional-API entrypoint is a Pregel, not a CompiledStateGraph: the server uses
        # only what every Pregel has (astream, aget_state, channels, checkpointer).
        return cast(CompiledGraph, graph)

    def _plain(self, build: Build) -> GraphSpec:
        return GraphSpec(name=self.name, build=build, step_labels={}, consent_kinds={})
