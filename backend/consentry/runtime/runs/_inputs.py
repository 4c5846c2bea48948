"""What a run's graph starts with, as JSON: how a run queued by an API-only replica reaches the
worker that executes it.

A run starts with one or more graph inputs, in order: a new message (``{"messages":
[HumanMessage], "project_id", "note_id"}``), a resume (``Command(resume={approval_id: decision})``)
or ``None`` (continue a run that stopped half-way).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import messages_from_dict, messages_to_dict
from langgraph.types import Command

from consentry.runtime.runs._run_types import GraphInput

__all__ = ["dump_inputs", "load_inputs"]


def dump_inputs(inputs: list[GraphInput]) -> list[dict[str, Any]]:
    dumped: list[dict[str, Any]] = []
    for item in inputs:
        if item is None:
            dumped.append({"continue": True})
        elif isinstance(item, Command):
            dumped.append({"resume": item.resume})
        else:
            values = {k: v for k, v in item.items() if k != "messages"}
            dumped.append({"input": values, "messages": messages_to_dict(item["messages"])})
    return dumped


def load_inputs(dumped: list[dict[str, Any]]) -> list[GraphInput]:
    loaded: list[GraphInput] = []
    for item in dumped:
        if "continue" in item:
            loaded.append(None)
        elif "resume" in item:
            loaded.append(Command(resume=item["resume"]))
        else:
            loaded.append({**item["input"], "messages": messages_from_dict(item["messages"])})
    return loaded
