"""The consent kinds the server publishes (``GET /v1/consent-kinds``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from consentry_graphs.wire_types import Decision

if TYPE_CHECKING:  # only for annotations: the wire models load without LangGraph
    from consentry_graphs.consent import ConsentKind

__all__ = ["ConsentKindDetail", "ConsentKindList"]


class ConsentKindDetail(BaseModel):
    """One kind of consent a graph may ask for, with the JSON Schemas of its payloads."""

    graph: str = Field(description="The graph that asks it (the `graph` of `POST /v1/chat`).")
    kind: str = Field(description="The `kind` of its `consent` events.")
    description: str
    allowed_decisions: list[Decision]
    ttl_seconds: int | None = Field(
        description="How long a request stays open; null: the server's default "
        "(`CONSENTRY_CONSENT_TTL_SECONDS`)."
    )
    always_ask: bool = Field(
        description="A person must decide, whatever the thread's consent policy says."
    )
    proposal_schema: dict[str, Any] = Field(
        description="JSON Schema of the `proposal` of its `consent` events."
    )
    edit_schema: dict[str, Any] | None = Field(
        description="JSON Schema of `edited` for decision `edit`; null when it takes no edits."
    )

    @classmethod
    def of(cls, graph: str, kind: ConsentKind[Any, Any]) -> ConsentKindDetail:
        return cls(graph=graph, **kind.json_schemas())


class ConsentKindList(BaseModel):
    consent_kinds: list[ConsentKindDetail]
