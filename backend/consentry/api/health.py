"""``GET /healthz`` (the process is up and its database answers) and ``GET /readyz`` (it should
get traffic: database, schema, background tasks, not shutting down)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from consentry.api.http.deps import ReadinessDep, SettingsDep
from consentry.schemas.errors import ErrorBody, ErrorDetail

__all__ = ["router"]

router = APIRouter(tags=["health"])
NOT_READY_RETRY_AFTER_SECONDS = 5


class Health(BaseModel):
    status: Literal["ok"]
    model: str


class Ready(BaseModel):
    status: Literal["ready"]
    checks: dict[str, str]
    """Each check and ``ok``: ``database``, ``migrations``, ``workers``, ``shutdown``."""


@router.get("/healthz")
async def healthz(readiness: ReadinessDep, settings: SettingsDep) -> Health:
    await readiness.alive()
    model = "offline" if settings.uses_offline_model else settings.llm_model
    return Health(status="ok", model=model)


@router.get(
    "/readyz",
    response_model=Ready,
    responses={
        503: {
            "model": ErrorBody,
            "description": "`not_ready`: `details.checks` says which check failed and how.",
        }
    },
)
async def readyz(readiness: ReadinessDep) -> Ready | JSONResponse:
    """Ready for traffic, or 503 ``not_ready`` (with ``Retry-After``) naming what is not."""
    checks = await readiness.checks()
    if all(state == "ok" for state in checks.values()):
        return Ready(status="ready", checks=checks)
    failing = [name for name, state in checks.items() if state != "ok"]
    body = ErrorBody(
        error=ErrorDetail(
            code="not_ready",
            message="Not ready for traffic: " + ", ".join(failing) + ".",
            details={"checks": checks},
        )
    )
    return JSONResponse(
        body.model_dump(mode="json"),
        status_code=503,
        headers={"Retry-After": str(NOT_READY_RETRY_AFTER_SECONDS)},
    )
