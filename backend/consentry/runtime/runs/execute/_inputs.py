"""What a run's graph starts with, as JSON: how a run queued by an API-only replica reaches the
worker that executes it.

A run starts with one or more graph inputs, in order: a new message (``{"messages":
[HumanMessage], "project_id", "note_id"}``) or a client's own ``input`` (any JSON object, its
messages fields made messages: ``consentry_graphs.graph_io``), a resume
(``Command(resume={approval_id: decision})``) or ``None`` (continue a run that stopped half-way).

An input is stored as ``{"input": <its JSON values>}``, with its lists of messages apart:
``"messages"`` for the ``messages`` field (the shape runs have always been stored in) and
``"message_fields"`` for any other field of messages.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langgraph.types import Command

from consentry.runtime.runs.execute._run_types import GraphInput

__all__ = ["dump_inputs", "load_inputs"]


def dump_inputs(inputs: list[GraphInput]) -> list[dict[str, Any]]:
    dumped: list[dict[str, Any]] = []
    for item in inputs:
        if item is None:
            dumped.append({"continue": True})
        elif isinstance(item, Command):
            dumped.append({"resume": item.resume})
        else:
            dumped.append(_dump_input(item))
    return dumped


def load_inputs(dumped: list[dict[str, Any]]) -> list[GraphInput]:
    loaded: list[GraphInput] = []
    for item in dumped:
        if "continue" in item:
            loaded.append(None)
        elif "resume" in item:
            loaded.append(Command(resume=item["resume"]))
        else:
            values = dict(item["input"])
            if "messages" in item:
                values["messages"] = messages_from_dict(item["messages"])
            for name, messages in item.get("message_fields", {}).items():
                values[name] = messages_from_dict(messages)
            loaded.append(values)
    return loaded


def _dump_input(item: dict[str, Any]) -> dict[str, Any]:
    lists = {name: value for name, value in item.items() if _is_messages(value)}
    dumped: dict[str, Any] = {"input": {k: v for k, v in item.items() if k not in lists}}
    if "messages" in lists:
        dumped["messages"] = messages_to_dict(lists.pop("messages"))
    if lists:
        dumped["message_fields"] = {name: messages_to_dict(m) for name, m in lists.items()}
    return dumped


def _is_messages(value: object) -> bool:
    """A non-empty list of messages (an empty one is stored as the JSON it is)."""
    return (
        isinstance(value, list) and bool(value) and all(isinstance(m, BaseMessage) for m in value)
    )
