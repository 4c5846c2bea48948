"""LangGraph's checkpointer, opened once per process on the same SQLite file as the app tables."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from backend.storage.database import BUSY_TIMEOUT_SECONDS

__all__ = ["open_checkpointer"]


@asynccontextmanager
async def open_checkpointer(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """Open the saver with our busy timeout (``from_conn_string`` cannot set one) and set it up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_SECONDS)
    try:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver
    finally:
        await conn.close()
