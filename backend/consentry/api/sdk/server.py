"""``GET /info`` and ``GET /ok``: the LangGraph Agent Server's own routes a client calls before
anything else (Agent Chat UI checks ``/info`` answers when it loads). Neither needs a key, as
neither says anything about anybody's data."""

from __future__ import annotations

from importlib.metadata import version

from fastapi import APIRouter

from consentry.schemas.sdk import ServerFlags, ServerInfo

__all__ = ["router"]

router = APIRouter(tags=["langgraph-sdk"])

_INFO = ServerInfo(
    version=version("consentry"),
    langgraph_py_version=version("langgraph"),
    flags=ServerFlags(assistants=True),
    host={"kind": "self-hosted"},
)
"""Read once, at import: the versions do not change while the server runs."""


@router.get("/info")
async def server_info() -> ServerInfo:
    """What this server is: Consentry, its version, LangGraph's, and what it offers."""
    return _INFO


@router.get("/ok")
async def ok() -> dict[str, bool]:
    """The Agent Server's liveness check (Consentry's own, with the database: `/healthz`)."""
    return {"ok": True}
