"""What LangGraph's checkpoints say a thread's graph waits for, read as the server reads them:
the project's checkpointer (``open_checkpointer``) and the tutor graph built on it, and
``aget_state(...).interrupts``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from consentry.stored import ConsentrySaver, Database
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.registry import BUILTIN_GRAPHS, CompiledGraph

__all__ = ["GraphPosition", "Positions", "open_positions"]


@dataclass(frozen=True)
class GraphPosition:
    interrupts: tuple[str, ...]
    """The ids of the interrupts the latest checkpoint waits on (an approval id each)."""
    next_nodes: tuple[str, ...]


class Positions:
    def __init__(self, graph: CompiledGraph) -> None:
        self._graph = graph

    async def of(self, thread_ids: Sequence[str]) -> dict[str, GraphPosition]:
        positions: dict[str, GraphPosition] = {}
        for thread_id in thread_ids:
            state = await self._graph.aget_state({"configurable": {"thread_id": thread_id}})
            positions[thread_id] = GraphPosition(
                interrupts=tuple(interrupt.id for interrupt in state.interrupts),
                next_nodes=tuple(state.next),
            )
        return positions


@asynccontextmanager
async def open_positions(database_url: str) -> AsyncIterator[Positions]:
    """The tutor graph on the database's checkpointer (the chaos clients only use the tutor)."""
    db = Database(database_url, pool_size=2)
    await db.open()
    try:
        saver: Any = ConsentrySaver(db, database_url=database_url)
        yield Positions(BUILTIN_GRAPHS["tutor"].build(OfflineChatModel(), saver))
    finally:
        await db.close()
