"""An assistant as the SDK face reads it (:class:`Assistant`), what a client may change of one
(:class:`AssistantChanges`), and how a stored one is read, matched and sorted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import NAMESPACE_URL, UUID, uuid5

from consentry.errors import ConflictError
from consentry.storage.assistants import AssistantRecord
from consentry.storage.metadata_filters import MetadataValue

__all__ = [
    "Assistant",
    "AssistantChanges",
    "SortKey",
    "as_uuid",
    "assistant_exists",
    "assistant_uuid",
    "from_record",
    "matches",
    "sort_value",
]

SortKey = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]


def assistant_uuid(graph: str) -> str:
    """The stable UUID of a graph's assistant (the LangGraph Agent Server's for that graph)."""
    return str(uuid5(NAMESPACE_URL, graph))


@dataclass(frozen=True)
class Assistant:
    assistant_id: str
    """A UUID; a served graph's name is accepted wherever its assistant's id is."""
    graph: str
    created_at: datetime
    """A served graph's: when this server started serving it."""
    updated_at: datetime
    name: str
    description: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=lambda: {"created_by": "system"})
    version: int = 1
    stored: bool = False
    """Created by a client (False: a served graph's own)."""


@dataclass(frozen=True)
class AssistantChanges:
    """What a client gives an assistant: ``None`` leaves a field as it is."""

    graph: str | None = None
    name: str | None = None
    description: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


def as_uuid(value: str) -> str | None:
    try:
        return str(UUID(value))
    except ValueError:
        return None


def assistant_exists(assistant_id: str) -> ConflictError:
    return ConflictError(
        f"An assistant with id {assistant_id!r} exists.",
        code="assistant_exists",
        details={"assistant_id": assistant_id},
    )


def from_record(row: AssistantRecord) -> Assistant:
    return Assistant(
        assistant_id=row.id,
        graph=row.graph,
        created_at=row.created_at,
        updated_at=row.updated_at,
        name=row.name,
        description=row.description,
        config=row.config,
        context=row.context,
        metadata=row.metadata,
        version=row.version,
        stored=True,
    )


def matches(
    assistant: Assistant,
    graph: str | None,
    name: str | None,
    metadata: Mapping[str, MetadataValue] | None,
) -> bool:
    return (
        graph in (None, assistant.graph)
        and name in (None, assistant.name)
        and all(
            key in assistant.metadata
            and type(assistant.metadata[key]) is type(value)
            and assistant.metadata[key] == value
            for key, value in (metadata or {}).items()
        )
    )


def sort_value(assistant: Assistant, sort_by: SortKey) -> Any:
    return {
        "assistant_id": assistant.assistant_id,
        "graph_id": assistant.graph,
        "name": assistant.name,
        "created_at": assistant.created_at,
        "updated_at": assistant.updated_at,
    }[sort_by]
