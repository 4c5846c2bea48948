"""``GET /v1/consent-kinds``: every kind of consent the served graphs may ask for, with schemas."""

from __future__ import annotations

from fastapi import APIRouter

from consentry.api.http.deps import GraphsDep, PrincipalDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.schemas.consent_kinds import ConsentKindDetail, ConsentKindList

__all__ = ["router"]

router = APIRouter(prefix="/v1/consent-kinds", tags=["consent"], responses=ERROR_RESPONSES)


@router.get("")
async def list_consent_kinds(_: PrincipalDep, graphs: GraphsDep) -> ConsentKindList:
    """Each kind with its allowed decisions, expiry and the JSON Schemas of its proposal and of
    a person's edit, by graph and kind name; a client can render and validate any consent."""
    return ConsentKindList(
        consent_kinds=[
            ConsentKindDetail.of(graph_name, spec.consent_kinds[kind_name])
            for graph_name, spec in sorted(graphs.items())
            for kind_name in sorted(spec.consent_kinds)
        ]
    )
