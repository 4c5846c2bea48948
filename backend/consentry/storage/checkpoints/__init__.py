"""Consentry's own LangGraph checkpointer (``ConsentrySaver``), on the app's database.

Public: :class:`ConsentrySaver`, what a run hands it (:data:`RUN_KEY`, :class:`StepCommitter`,
:class:`CheckpointFence`, :class:`TurnStart`), what a read keeps for a run (:class:`HeadRead`,
:data:`READ_KEY`) and :func:`open_checkpointer`, which the server's lifespan calls once. The
statements (``_sql``), what each call does (``_operations``), the drivers that run it
(``_drivers``) and the saver's own parts (``_saver`` with ``_pending``, ``_serialized``,
``_turns`` (retention ``turns`` and forks), ``_head_read`` (a run's first read),
``_in_transaction`` (its writes in the caller's transaction) and ``_sync_connection``) are
private; ``legacy`` copies the checkpoints of LangGraph's own savers once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from consentry.storage.checkpoints._operations import CheckpointFence
from consentry.storage.checkpoints._saver import (
    READ_KEY,
    RUN_KEY,
    RUN_MARK,
    ConsentrySaver,
    HeadRead,
    StepCommitter,
    TurnStart,
)
from consentry.storage.checkpoints.legacy import import_legacy_checkpoints
from consentry.storage.db.database import Database

__all__ = [
    "READ_KEY",
    "RUN_KEY",
    "RUN_MARK",
    "CheckpointFence",
    "ConsentrySaver",
    "HeadRead",
    "StepCommitter",
    "TurnStart",
    "open_checkpointer",
    "saver_of",
]


@asynccontextmanager
async def open_checkpointer(db: Database, database_url: str) -> AsyncIterator[ConsentrySaver]:
    """The server's checkpointer on ``db`` (migrated), after the one-time copy of the
    checkpoints LangGraph's savers kept before (``legacy``)."""
    saver = ConsentrySaver(db, database_url=database_url)
    await import_legacy_checkpoints(db, saver, database_url)
    try:
        yield saver
    finally:
        saver.close_sync()


def saver_of(graph: Any) -> ConsentrySaver:
    """A served graph's checkpointer: the server's (every served graph is compiled with it)."""
    saver = graph.checkpointer
    assert isinstance(saver, ConsentrySaver)
    return saver
