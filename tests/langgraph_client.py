"""The LangGraph SDK's Python client (``langgraph-sdk``) pointed at a live Consentry server, as
an SDK user builds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

__all__ = ["parts", "sdk_client"]


@asynccontextmanager
async def sdk_client(client: httpx.AsyncClient) -> AsyncIterator[LangGraphClient]:
    """The SDK's client on ``client``'s server (closed after)."""
    sdk = get_client(url=str(client.base_url))
    try:
        yield sdk
    finally:
        await sdk.aclose()


async def parts(stream: Any) -> list[Any]:
    """Every part of a streamed run, to its end."""
    return [part async for part in stream]
