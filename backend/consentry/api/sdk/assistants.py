"""The LangGraph SDK's assistants (``client.assistants.search``, ``count``, ``get``, ``get_graph``,
``get_schemas``): each served graph is one, named by its graph or its UUID; none is created,
changed or deleted by a client."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from consentry.api.http.deps import AssistantsDep, PrincipalDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.sdk._ids import SDK_ID
from consentry.runtime.assistants import Assistant as ServedAssistant
from consentry.runtime.assistants import Assistants
from consentry.schemas.sdk import (
    Assistant,
    AssistantCountRequest,
    AssistantSchemas,
    AssistantSearchRequest,
)

__all__ = ["router"]

router = APIRouter(prefix="/assistants", tags=["langgraph-sdk"], responses=ERROR_RESPONSES)

_METADATA = {"created_by": "system"}


@router.post("/search")
async def search_assistants(
    body: AssistantSearchRequest, _: PrincipalDep, assistants: AssistantsDep
) -> list[Assistant]:
    """The served graphs' assistants that match every filter given, by graph name (or
    `sort_by`)."""
    found = [_assistant(served) for served in _matching(body, assistants)]
    if body.sort_by is not None:
        found.sort(key=lambda a: str(getattr(a, body.sort_by or "graph_id")))
    if body.sort_order == "desc":
        found.reverse()
    return found[body.offset : body.offset + body.limit]


@router.post("/count")
async def count_assistants(
    body: AssistantCountRequest, _: PrincipalDep, assistants: AssistantsDep
) -> int:
    """How many assistants match every filter (those of `search`)."""
    return len(_matching(body, assistants))


def _matching(
    body: AssistantSearchRequest | AssistantCountRequest, assistants: Assistants
) -> list[ServedAssistant]:
    return [
        served
        for served in assistants.all()
        if body.graph_id in (None, served.graph)
        and body.name in (None, served.graph)
        and all(_METADATA.get(key) == value for key, value in (body.metadata or {}).items())
    ]


@router.get(f"/{{assistant_id:{SDK_ID}}}")
async def get_assistant(assistant_id: str, _: PrincipalDep, assistants: AssistantsDep) -> Assistant:
    """A served graph's assistant, by the graph's name or the assistant's UUID."""
    return _assistant(assistants.get(assistant_id))


@router.get("/{assistant_id}/graph")
async def get_assistant_graph(
    assistant_id: str,
    _: PrincipalDep,
    assistants: AssistantsDep,
    xray: Annotated[
        bool | Annotated[int, Query(ge=1, le=100)],
        Query(description="Draw subgraphs' nodes: `true`, or how many levels deep."),
    ] = False,
) -> dict[str, Any]:
    """The graph's nodes and edges, as LangGraph draws them (`get_graph().to_json()`)."""
    return assistants.drawing(assistant_id, xray=xray)


@router.get("/{assistant_id}/schemas")
async def get_assistant_schemas(
    assistant_id: str, _: PrincipalDep, assistants: AssistantsDep
) -> AssistantSchemas:
    """The graph's JSON Schemas (those of `GET /v1/graphs`)."""
    served = assistants.get(assistant_id)
    io = assistants.spec(assistant_id).io
    return AssistantSchemas(
        graph_id=served.graph,
        input_schema=io.input_schema if io else None,
        output_schema=io.output_schema if io else None,
        state_schema=io.state_schema if io else None,
        context_schema=io.context_schema if io else None,
    )


def _assistant(served: ServedAssistant) -> Assistant:
    return Assistant(
        assistant_id=served.assistant_id,
        graph_id=served.graph,
        created_at=served.created_at,
        updated_at=served.created_at,
        metadata=dict(_METADATA),
        name=served.graph,
    )
