"""``GET /v1/graphs``: the graphs a client may start, with what each takes, keeps and gives."""

from __future__ import annotations

from fastapi import APIRouter

from consentry.api.http.deps import GraphsDep, PrincipalDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.schemas.graphs import GraphDetail, GraphList

__all__ = ["router"]

router = APIRouter(prefix="/v1/graphs", tags=["graphs"], responses=ERROR_RESPONSES)


@router.get("")
async def list_graphs(_: PrincipalDep, graphs: GraphsDep) -> GraphList:
    """Each served graph by name: the JSON Schemas of its input (what `POST /v1/chat` takes
    as `input`), state and output, made once at start-up, and the names of the consent kinds
    it may ask (their schemas: `GET /v1/consent-kinds`)."""
    return GraphList(graphs=[GraphDetail.of(graphs[name]) for name in sorted(graphs)])
