"""The graphs the server serves (``GET /v1/graphs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # only for annotations: the wire models load without LangGraph
    from consentry_graphs.registry import GraphSpec

__all__ = ["GraphDetail", "GraphList"]

_UNAVAILABLE = (
    "; null when the graph's types give none (a field of a type pydantic cannot describe)."
)


class GraphDetail(BaseModel):
    """One served graph: what it takes, keeps and gives, and the consents it may ask."""

    name: str = Field(description="The `graph` of `POST /v1/chat`.")
    accepts_message: bool = Field(
        description="Whether a `message` can start it (its input has `messages`); any graph "
        "takes its own `input`."
    )
    input_schema: dict[str, Any] | None = Field(
        description="JSON Schema of its `input` (`POST /v1/chat`)" + _UNAVAILABLE
    )
    state_schema: dict[str, Any] | None = Field(
        description="JSON Schema of its state" + _UNAVAILABLE
    )
    output_schema: dict[str, Any] | None = Field(
        description="JSON Schema of its output" + _UNAVAILABLE
    )
    context_schema: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema of its `context_schema`, what a run's `context` is checked "
        "against; null when it has none (a run's `context` is then given as sent)",
    )
    consent_kinds: list[str] = Field(
        description="The consent kit's kinds it may ask, by name (their schemas: "
        "`GET /v1/consent-kinds`)."
    )

    @classmethod
    def of(cls, spec: GraphSpec) -> GraphDetail:
        io = spec.io
        return cls(
            name=spec.name,
            accepts_message=io is None or io.takes("messages"),
            input_schema=io.input_schema if io else None,
            state_schema=io.state_schema if io else None,
            output_schema=io.output_schema if io else None,
            context_schema=io.context_schema if io else None,
            consent_kinds=sorted(spec.consent_kinds),
        )


class GraphList(BaseModel):
    graphs: list[GraphDetail] = Field(description="By name.")
