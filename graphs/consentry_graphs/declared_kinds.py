"""A graph's consent kinds, checked against what it declares.

Every kind a graph asks with ``ConsentKind.ask`` must be in its ``GraphSpec``'s ``consent_kinds``:
the server checks a person's decision against the kind before it resumes the graph, and it
cannot check against a kind it does not know. Two checks catch the mistake:

- **at start-up** (:func:`check_declared_kinds`, from ``registry.build_graphs``): the kinds a
  graph's nodes name (in their code, in the functions of their module that they call, through a
  module they import) must be declared, each under its own name. A graph that is not a
  ``GraphSpec`` declares none. The server then refuses to start, naming the node and the kind.
- **while it runs**, for a kind the first check could not see (asked from another module's
  code): the run fails with :class:`UndeclaredConsentKindError`, whose ``code`` and message the
  run's ``error`` event carries to the graph's developer.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any, ClassVar

from consentry_graphs.consent import ConsentKind

__all__ = [
    "GraphDefinitionError",
    "InvalidResponseSchemaError",
    "UndeclaredConsentKindError",
    "check_declared_kinds",
]


class GraphDefinitionError(TypeError):
    """A graph did something its definition does not allow, found while it runs: a mistake in
    the graph's code. The run fails with ``code`` and this message, meant for its developer."""

    code: ClassVar[str] = "graph_definition_error"


class UndeclaredConsentKindError(GraphDefinitionError):
    code = "consent_kind_not_declared"

    def __init__(self, graph: str, kind: str) -> None:
        super().__init__(
            f"The graph {graph!r} asked for a consent of kind {kind!r}, which it does not "
            f"declare: add it to its GraphSpec's consent_kinds ({{{kind!r}: <its ConsentKind>}})."
        )


class InvalidResponseSchemaError(GraphDefinitionError):
    code = "invalid_response_schema"

    def __init__(self, graph: str, problem: str) -> None:
        super().__init__(
            f"The graph {graph!r} called interrupt(response_schema=...) with something that is "
            f"not a JSON Schema: {problem}"
        )


def check_declared_kinds(
    graph_name: str, graph: Any, declared: Mapping[str, ConsentKind[Any, Any]]
) -> str | None:
    """What is wrong with the kinds ``graph`` declares and its nodes use, in one sentence; None
    when nothing is."""
    for name, kind in declared.items():
        if name != kind.name:
            return (
                f"graph {graph_name!r}: consent_kinds names the kind {kind.name!r} {name!r}; "
                f"declare each kind under its own name ({{{kind.name!r}: ...}})"
            )
    for node, kind in _kinds_named_by_nodes(graph):
        if kind.name not in declared:
            return (
                f"graph {graph_name!r}: node {node!r} uses the consent kind {kind.name!r}, "
                f"which the graph does not declare; add {{{kind.name!r}: <its ConsentKind>}} "
                "to its GraphSpec's consent_kinds (docs/consent-kit.md)"
            )
    return None


def _kinds_named_by_nodes(graph: Any) -> Iterator[tuple[str, ConsentKind[Any, Any]]]:
    builder = getattr(graph, "builder", None)
    for name, spec in getattr(builder, "nodes", {}).items():
        runnable = getattr(spec, "runnable", None)
        for function in (getattr(runnable, "afunc", None), getattr(runnable, "func", None)):
            if function is not None:
                for kind in _kinds_named_by(function):
                    yield name, kind


def _kinds_named_by(function: Any) -> list[ConsentKind[Any, Any]]:
    found: list[ConsentKind[Any, Any]] = []
    seen: set[int] = set()
    pending = [_plain_function(function)]
    module = getattr(pending[0], "__module__", None)
    while pending:
        current = pending.pop()
        if not isinstance(current, FunctionType) or id(current) in seen:
            continue
        seen.add(id(current))
        names = set(_names(current.__code__))
        scope: dict[str, Any] = dict(current.__globals__)
        for cell_name, cell in zip(
            current.__code__.co_freevars, current.__closure__ or (), strict=False
        ):
            try:
                scope[cell_name] = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
        for name in names:
            value = scope.get(name)
            values = [value]
            if isinstance(value, ModuleType):  # `kinds.REFUND`
                values = [getattr(value, attr, None) for attr in names]
            for candidate in values:
                if isinstance(candidate, ConsentKind) and candidate not in found:
                    found.append(candidate)
                elif isinstance(candidate, FunctionType) and candidate.__module__ == module:
                    pending.append(candidate)
    return found


def _plain_function(function: Any) -> Any:
    while isinstance(function, functools.partial):
        function = function.func
    if isinstance(function, MethodType):
        function = function.__func__
    return inspect.unwrap(function) if callable(function) else function


def _names(code: CodeType) -> Iterator[str]:
    yield from code.co_names
    yield from code.co_freevars
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _names(constant)
