"""The LangGraph SDK's assistants (``client.assistants``): each served graph's own, named by the
graph or its UUID, read-only; and the caller's own over a served graph (``create``, ``update``,
``delete``, ``get_versions``, ``set_latest``), each change a version (``runtime.assistants``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from consentry.api.http.deps import AssistantsDep, PrincipalDep, ThreadWriterDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.sdk._ids import SDK_ID
from consentry.runtime.assistants import Assistant as FoundAssistant
from consentry.runtime.assistants import AssistantChanges
from consentry.schemas.sdk import (
    Assistant,
    AssistantCountRequest,
    AssistantCreateRequest,
    AssistantLatestRequest,
    AssistantSchemas,
    AssistantSearchRequest,
    AssistantUpdateRequest,
    AssistantVersion,
    AssistantVersionsRequest,
)
from consentry_graphs.graph_io import GraphIO

__all__ = ["router"]

router = APIRouter(prefix="/assistants", tags=["langgraph-sdk"], responses=ERROR_RESPONSES)


@router.post("")
async def create_assistant(
    body: AssistantCreateRequest, owner: PrincipalDep, assistants: AssistantsDep
) -> Assistant:
    """An assistant of the caller's own over a served graph, at version 1."""
    created = await assistants.create(
        owner, _changes(body), assistant_id=body.assistant_id, if_exists=body.if_exists
    )
    return _assistant(created)


@router.post("/search")
async def search_assistants(
    body: AssistantSearchRequest, owner: PrincipalDep, assistants: AssistantsDep
) -> list[Assistant]:
    """The served graphs' assistants and the caller's own that match every filter given: the
    served ones by graph name, then the caller's newest first (or all by `sort_by`)."""
    found = await assistants.search(
        owner,
        graph=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        descending=body.sort_order == "desc",
    )
    return [_assistant(a) for a in found]


@router.post("/count")
async def count_assistants(
    body: AssistantCountRequest, owner: PrincipalDep, assistants: AssistantsDep
) -> int:
    """How many assistants match every filter (those of `search`)."""
    return await assistants.count(
        owner, graph=body.graph_id, name=body.name, metadata=body.metadata
    )


@router.get(f"/{{assistant_id:{SDK_ID}}}")
async def get_assistant(
    assistant_id: str, owner: PrincipalDep, assistants: AssistantsDep
) -> Assistant:
    """A served graph's assistant (by the graph's name or its UUID), or one of the caller's."""
    return _assistant(await assistants.get(owner, assistant_id))


@router.patch(f"/{{assistant_id:{SDK_ID}}}")
async def update_assistant(
    assistant_id: str,
    body: AssistantUpdateRequest,
    owner: PrincipalDep,
    assistants: AssistantsDep,
) -> Assistant:
    """A new version of the caller's assistant, in use at once: each field given replaces its
    own, `metadata` is merged. A served graph's assistant: 409 `assistant_read_only`."""
    return _assistant(await assistants.update(owner, assistant_id, _changes(body)))


@router.delete(f"/{{assistant_id:{SDK_ID}}}", status_code=204, response_class=Response)
async def delete_assistant(
    assistant_id: str,
    owner: PrincipalDep,
    assistants: AssistantsDep,
    writer: ThreadWriterDep,
    delete_threads: Annotated[
        bool,
        Query(
            description="Also delete the threads whose latest run was on it, as "
            "`threads.delete` does (409 `run_in_progress` while one runs: nothing is deleted)."
        ),
    ] = False,
) -> None:
    """Delete the caller's assistant and its versions (its threads stay, unless
    `delete_threads`)."""
    found = await assistants.get(owner, assistant_id)
    if delete_threads and found.stored:
        await writer.delete_all(owner, assistant_id=found.assistant_id)
    await assistants.delete(owner, assistant_id)


@router.post("/{assistant_id}/versions")
async def list_assistant_versions(
    assistant_id: str,
    body: AssistantVersionsRequest,
    owner: PrincipalDep,
    assistants: AssistantsDep,
) -> list[AssistantVersion]:
    """The assistant's versions, newest first (a served graph's own has its one)."""
    versions = await assistants.versions(
        owner, assistant_id, metadata=body.metadata, limit=body.limit, offset=body.offset
    )
    return [
        AssistantVersion(
            assistant_id=v.assistant_id,
            graph_id=v.graph,
            config=v.config,
            context=v.context,
            created_at=v.created_at,
            metadata=v.metadata,
            version=v.version,
            name=v.name,
            description=v.description,
        )
        for v in versions
    ]


@router.post("/{assistant_id}/latest")
async def set_latest_assistant_version(
    assistant_id: str,
    body: AssistantLatestRequest,
    owner: PrincipalDep,
    assistants: AssistantsDep,
) -> Assistant:
    """Use one of the assistant's versions (404 `assistant_version_not_found`)."""
    return _assistant(await assistants.set_latest(owner, assistant_id, body.version))


@router.get("/{assistant_id}/graph")
async def get_assistant_graph(
    assistant_id: str,
    owner: PrincipalDep,
    assistants: AssistantsDep,
    xray: Annotated[
        bool | Annotated[int, Query(ge=1, le=100)],
        Query(description="Draw subgraphs' nodes: `true`, or how many levels deep."),
    ] = False,
) -> dict[str, Any]:
    """The graph's nodes and edges, as LangGraph draws them (`get_graph().to_json()`)."""
    return assistants.drawing(await assistants.get(owner, assistant_id), xray=xray)


@router.get("/{assistant_id}/subgraphs")
@router.get("/{assistant_id}/subgraphs/{namespace}")
async def get_assistant_subgraphs(
    assistant_id: str,
    owner: PrincipalDep,
    assistants: AssistantsDep,
    namespace: str | None = None,
    recurse: Annotated[
        bool, Query(description="Also the subgraphs of subgraphs (namespaces joined by `|`).")
    ] = False,
) -> dict[str, AssistantSchemas]:
    """The graph's subgraphs (those of `namespace` only, when given), each with its JSON
    Schemas, by namespace."""
    found = await assistants.get(owner, assistant_id)
    described = assistants.subgraphs(found, namespace=namespace, recurse=recurse)
    return {name: _schemas(found.graph, io) for name, io in described.items()}


@router.get("/{assistant_id}/schemas")
async def get_assistant_schemas(
    assistant_id: str, owner: PrincipalDep, assistants: AssistantsDep
) -> AssistantSchemas:
    """The graph's JSON Schemas (those of `GET /v1/graphs`)."""
    found = await assistants.get(owner, assistant_id)
    return _schemas(found.graph, assistants.spec(found).io)


def _schemas(graph_id: str, io: GraphIO | None) -> AssistantSchemas:
    return AssistantSchemas(
        graph_id=graph_id,
        input_schema=io.input_schema if io else None,
        output_schema=io.output_schema if io else None,
        state_schema=io.state_schema if io else None,
        context_schema=io.context_schema if io else None,
    )


def _changes(body: AssistantCreateRequest | AssistantUpdateRequest) -> AssistantChanges:
    return AssistantChanges(
        graph=body.graph_id,
        name=body.name,
        description=body.description,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
    )


def _assistant(found: FoundAssistant) -> Assistant:
    return Assistant(
        assistant_id=found.assistant_id,
        graph_id=found.graph,
        config=found.config,
        context=found.context,
        created_at=found.created_at,
        updated_at=found.updated_at,
        metadata=found.metadata,
        version=found.version,
        name=found.name,
        description=found.description,
    )
