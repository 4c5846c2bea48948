"""What a compiled graph takes and gives: the JSON Schemas of its input, state and output, and
the check of a client's ``input`` against the graph's input fields. Made once per served graph at
start-up (:func:`describe_graph`), never per request.

The schemas are LangGraph's (``get_input_jsonschema()``, ``get_output_jsonschema()``, the
builder's state schema). On Python 3.11 pydantic refuses ``typing.TypedDict`` (it wants
``typing_extensions.TypedDict``), so LangGraph cannot describe a state written with it; the
schema is then made field by field from the graph's channels, every field optional (the way
LangGraph describes a state of any other type). A schema pydantic cannot make at all (a field of
a type it does not know) is ``None``, ``GraphIO.unavailable`` says why, and start-up goes on: a
graph that runs is served even when it cannot be described.

The input check (:meth:`GraphIO.check_input`), in the graph's terms:

- a key that is not one of the graph's input fields is refused: LangGraph would drop it silently;
- a messages field (one with LangGraph's ``add_messages`` reducer) takes what ``add_messages``
  takes: a message or a list of them, each ``{"role", "content"}``, ``{"type", "content"}`` or a
  string. They are made messages here, each with an id when it has none, so the transcript, a
  replay and a retry of the run all see the same messages;
- any other field is validated as JSON against its type (pydantic, strict: ``"3"`` is not an
  int), and its value given to the graph as it was sent.

A graph whose input is one value rather than fields (``StateGraph(int)``, a functional-API
``entrypoint``) gets its input unchecked.

The context check (:meth:`GraphIO.check_context`): a run's ``context`` is validated against the
graph's ``context_schema`` (a dataclass, a TypedDict or a pydantic model), absent fields taking
their defaults, and kept as JSON; the run gets it as the schema's type
(:meth:`GraphIO.context_value`). A graph with no ``context_schema`` gets the object as sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, partial
from inspect import isclass
from typing import Any
from uuid import uuid4

from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.channels.base import BaseChannel
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph, StateGraph
from langgraph.managed.base import is_managed_value
from langgraph.pregel import Pregel
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import TypedDict

__all__ = ["GraphIO", "InputMismatchError", "InputProblem", "describe_graph", "new_message_id"]

JsonSchema = dict[str, Any]


def new_message_id() -> str:
    """The id the server gives a user message (``msg-`` and 32 hex digits)."""
    return f"msg-{uuid4().hex}"


@dataclass(frozen=True)
class InputProblem:
    """One reason an ``input`` does not fit: where (``loc``, the field first), what, and
    pydantic's error type (or ``unknown_field``, ``invalid_messages``)."""

    loc: tuple[str | int, ...]
    msg: str
    type: str


class InputMismatchError(ValueError):
    """An ``input`` does not fit the graph's input fields; ``problems`` says where and why."""

    def __init__(self, problems: list[InputProblem]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, p.loc))}: {p.msg}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class GraphIO:
    """A served graph's JSON Schemas and input fields (:func:`describe_graph`)."""

    input_schema: JsonSchema | None
    state_schema: JsonSchema | None
    output_schema: JsonSchema | None
    input_fields: frozenset[str] | None
    """The keys its input may have; None: its input is one value, not checked."""
    message_fields: frozenset[str] = frozenset()
    """The input fields that hold messages (``add_messages``)."""
    unavailable: tuple[str, ...] = ()
    """What could not be described (a schema, a field's check), and why: for the server's log."""
    field_checks: Mapping[str, TypeAdapter[Any]] = field(default_factory=dict, repr=False)
    """The type of each input field that is checked (not the messages fields)."""
    context_schema: JsonSchema | None = None
    """The JSON Schema of the graph's ``context_schema`` (None: it has none, or it cannot be
    described)."""
    context_check: TypeAdapter[Any] | None = field(default=None, repr=False)
    """The check of a run's ``context`` (None: the graph has no ``context_schema``)."""

    def check_context(self, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A run's ``context`` as the graph takes it (JSON): validated against the graph's
        ``context_schema``, absent fields taking their defaults (no ``context`` is ``{}`` then);
        as sent when it has none. Raises :class:`InputMismatchError` naming every field that
        does not fit."""
        if self.context_check is None:
            return None if value is None else dict(value)
        if value is None:
            return dict(self._default_context)
        return self._checked_context(value)

    @cached_property
    def _default_context(self) -> dict[str, Any]:
        """The context a run given none gets (its schema's defaults), made once."""
        return self._checked_context({})

    def _checked_context(self, value: Mapping[str, Any]) -> dict[str, Any]:
        assert self.context_check is not None
        try:
            checked = self.context_check.validate_json(json.dumps(dict(value)))
        except ValidationError as exc:
            raise InputMismatchError(
                [
                    InputProblem(tuple(error["loc"]), error["msg"], error["type"])
                    for error in exc.errors(
                        include_url=False, include_context=False, include_input=False
                    )
                ]
            ) from None
        except (ValueError, TypeError) as exc:  # a validator of the schema's that raised so
            raise InputMismatchError([InputProblem((), _said(exc), "invalid_type")]) from None
        dumped: dict[str, Any] = self.context_check.dump_python(checked, mode="json")
        return dumped

    def context_value(self, value: Mapping[str, Any] | None) -> Any:
        """A checked context (JSON, :meth:`check_context`) as the graph's ``context_schema``
        makes it: a dataclass or model with its fields' own types (a date a date, not text)."""
        if self.context_check is None or value is None:
            return value
        return self.context_check.validate_json(json.dumps(dict(value)))

    def takes(self, name: str) -> bool:
        """Whether the graph's input has the field ``name``."""
        return self.input_fields is None or name in self.input_fields

    def check_input(
        self, value: Mapping[str, Any], *, new_id: Callable[[], str] = new_message_id
    ) -> dict[str, Any]:
        """``value`` as the graph's input: its messages fields as messages (``new_id`` names
        those without an id), every other value as given. Raises :class:`InputMismatchError`
        naming every field that does not fit."""
        problems: list[InputProblem] = []
        checked: dict[str, Any] = {}
        for name, item in value.items():
            if not self.takes(name):
                known = ", ".join(sorted(self.input_fields or ()))
                problems.append(
                    InputProblem(
                        (name,),
                        f"not an input field of this graph (it takes: {known})",
                        "unknown_field",
                    )
                )
            elif name in self.message_fields:
                try:
                    checked[name] = _messages(item, new_id)
                # langchain-core's message conversion raises NotImplementedError for a
                # message type it does not know: a client's bad input, said as such
                except (ValueError, TypeError, NotImplementedError):
                    problems.append(
                        InputProblem(
                            (name,),
                            "messages are a message or a list of messages, each a string or an "
                            'object with "role" (or "type") and "content"',
                            "invalid_messages",
                        )
                    )
            else:
                problems.extend(_field_problems(name, item, self.field_checks.get(name)))
                checked[name] = item
        if problems:
            raise InputMismatchError(problems)
        return checked


def _messages(value: Any, new_id: Callable[[], str]) -> list[BaseMessage]:
    """As ``add_messages`` reads them: one message or a list; each gets an id if it has none."""
    items = value if isinstance(value, list) else [value]
    if any(not isinstance(item, str | dict) for item in items):
        raise TypeError("a message is a string or an object")
    messages = convert_to_messages(items)
    return [m if m.id else m.model_copy(update={"id": new_id()}) for m in messages]


def _field_problems(name: str, value: Any, check: TypeAdapter[Any] | None) -> list[InputProblem]:
    if check is None:
        return []
    try:
        check.validate_json(json.dumps(value), strict=True)
    except ValidationError as exc:
        return [
            InputProblem((name, *error["loc"]), error["msg"], error["type"])
            for error in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
    except (ValueError, TypeError):  # a validator of the field's type that raised otherwise
        return [InputProblem((name,), "does not fit the type of this field", "invalid_type")]
    return []


def describe_graph(graph: Pregel[Any, Any, Any, Any]) -> GraphIO:
    """The JSON Schemas and input fields of ``graph``, as well as they can be made."""
    unavailable: list[str] = []

    def attempt(what: str, make: Callable[[], JsonSchema | None]) -> JsonSchema | None:
        try:
            return make()
        except Exception as exc:  # pydantic's errors, and what a type's own hooks raise
            unavailable.append(f"no {what} schema: {_said(exc)}")
            return None

    context_check = _context_check(graph, unavailable)
    context_schema = attempt("context", graph.get_context_jsonschema) if context_check else None
    if not isinstance(graph, CompiledStateGraph):  # a functional-API entrypoint, a raw Pregel
        return GraphIO(
            input_schema=attempt("input", graph.get_input_jsonschema),
            state_schema=None,
            output_schema=attempt("output", graph.get_output_jsonschema),
            input_fields=None,
            unavailable=tuple(unavailable),
            context_schema=context_schema,
            context_check=context_check,
        )
    builder: StateGraph[Any, Any, Any, Any] = graph.builder
    schemas = {
        what: attempt(what, partial(_schema_of, builder, typ))
        for what, typ in (
            ("input", builder.input_schema),
            ("state", builder.state_schema),
            ("output", builder.output_schema),
        )
    }
    fields, messages, checks = _input_fields(builder, unavailable)
    return GraphIO(
        input_schema=schemas["input"],
        state_schema=schemas["state"],
        output_schema=schemas["output"],
        input_fields=fields,
        message_fields=messages,
        unavailable=tuple(unavailable),
        field_checks=checks,
        context_schema=context_schema,
        context_check=context_check,
    )


def _context_check(
    graph: Pregel[Any, Any, Any, Any], unavailable: list[str]
) -> TypeAdapter[Any] | None:
    schema = graph.context_schema
    if schema is None:
        return None
    try:
        return TypeAdapter(schema)
    except Exception as exc:  # pydantic's errors, and what a type's own hooks raise
        unavailable.append(f"no check of a run's context: {_said(exc)}")
        return None


def _input_fields(
    builder: StateGraph[Any, Any, Any, Any], unavailable: list[str]
) -> tuple[frozenset[str] | None, frozenset[str], dict[str, TypeAdapter[Any]]]:
    """The graph's input fields (None for an input of one value), those of them that hold
    messages, and the type check of each other field pydantic can check."""
    schema = builder.schemas[builder.input_schema]
    names = [name for name, spec in schema.items() if not is_managed_value(spec)]
    if names == ["__root__"]:
        return None, frozenset(), {}
    messages: set[str] = set()
    checks: dict[str, TypeAdapter[Any]] = {}
    for name in names:
        channel = builder.channels.get(name, schema[name])  # the state's, if the state has it
        if not isinstance(channel, BaseChannel):
            continue
        if _holds_messages(channel):
            messages.add(name)
            continue
        try:
            checks[name] = TypeAdapter(channel.UpdateType)
        except Exception as exc:  # a type pydantic cannot validate: the field goes unchecked
            unavailable.append(f"input field {name!r} not checked: {_said(exc)}")
    return frozenset(names), frozenset(messages), checks


def _holds_messages(channel: BaseChannel[Any, Any, Any]) -> bool:
    if not isinstance(channel, BinaryOperatorAggregate):
        return False
    operator = getattr(channel.operator, "func", channel.operator)  # add_messages, or a partial
    return operator is add_messages


def _schema_of(builder: StateGraph[Any, Any, Any, Any], typ: Any) -> JsonSchema:
    """The JSON Schema of one of the builder's schemas (``typ``), with the fields of its
    channels. Remembered by type: every server of a process (a test suite starts hundreds)
    builds the same graphs, and the schemas of messages cost tens of milliseconds to make."""
    fields = tuple(
        (name, channel.UpdateType)
        for name in builder.schemas[typ]
        if isinstance(channel := builder.channels.get(name), BaseChannel)
    )
    try:
        hash((typ, fields))
    except TypeError:  # a type that cannot be a key: made every time
        return _make_schema(typ, fields)
    return _remembered_schema(typ, fields)


def _make_schema(typ: Any, fields: tuple[tuple[str, Any], ...]) -> JsonSchema:
    """As LangGraph makes it (``get_input_jsonschema``: a pydantic model's own, or its type's);
    if pydantic refuses the type (``typing.TypedDict`` on Python 3.11), from its fields, each
    optional."""
    try:
        if isclass(typ) and issubclass(typ, BaseModel):
            return typ.model_json_schema()
        return TypeAdapter(typ).json_schema()
    except Exception:
        title = getattr(typ, "__name__", "State")
        # Made at run time from the fields: the functional form is the only one.
        by_fields = TypedDict(title, dict(fields), total=False)  # type: ignore[misc]  # noqa: UP013
        return TypeAdapter(by_fields).json_schema()


_remembered_schema = lru_cache(maxsize=256)(_make_schema)
"""The schemas made so far, shared: never changed by their readers."""


def _said(exc: Exception | None) -> str:
    """An exception in one line, for the server's log (pydantic adds a link on the next)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"
