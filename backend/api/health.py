"""``GET /healthz``: the process is up and its database answers."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

from backend.api.deps import ServicesDep

__all__ = ["router"]

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]
    model: str


@router.get("/healthz")
async def healthz(services: ServicesDep) -> Health:
    await services.db.ping()
    model = "offline" if services.settings.uses_offline_model else services.settings.llm_model
    return Health(status="ok", model=model)
