"""``GET /v1/me``: who the caller is (a frontend shows the display name, records the id)."""

from __future__ import annotations

from fastapi import APIRouter

from consentry.api.http.deps import PrincipalDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.schemas.me import Me

__all__ = ["router"]

router = APIRouter(prefix="/v1/me", tags=["me"], responses=ERROR_RESPONSES)


@router.get("")
async def read_me(caller: PrincipalDep) -> Me:
    """The caller's principal (`tenant/user`), its parts and its display name (null without
    one, as in keyless local mode)."""
    return Me.of(caller)
