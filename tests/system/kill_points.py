"""The test's side of the kill points (``tests/system/kill_points_graph.py``): the folder the test
and the server processes share to stop a graph at a label."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

__all__ = ["KillPoints", "interrupt_stored"]

WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class KillPoints:
    """The folder the test and the server share to stop the graph at a label."""

    folder: Path

    @classmethod
    def in_folder(cls, parent: Path) -> KillPoints:
        folder = parent / "kill-points"
        folder.mkdir()
        return cls(folder)

    def stop_at(self, label: str) -> None:
        (self.folder / "stop-at").write_text(label)

    def go_on(self) -> None:
        """The next server runs through every point."""
        (self.folder / "stop-at").unlink()

    async def reached(self, label: str) -> None:
        """Wait until the server's graph stands at ``label`` (it is another process: poll)."""
        marker = self.folder / f"reached-{label}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        while not marker.exists():
            if loop.time() > deadline:
                pytest.fail(f"the server did not reach kill point {label!r} in {WAIT_SECONDS} s")
            await asyncio.sleep(0.05)


def interrupt_stored(database: Path | str, thread_id: str) -> bool:
    """Whether the thread's checkpoint holds an interrupt (a pending write of the checkpointer's,
    ``storage.checkpoints``): in a SQLite file, or a PostgreSQL database by URL."""
    if isinstance(database, Path):
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            found = db.execute(
                "SELECT count(*) FROM graph_checkpoint_writes "
                "WHERE thread_id = ? AND channel = '__interrupt__'",
                (thread_id,),
            ).fetchone()
    else:
        with psycopg.connect(database) as conn:
            found = conn.execute(
                "SELECT count(*) FROM graph_checkpoint_writes "
                "WHERE thread_id = %s AND channel = '__interrupt__'",
                (thread_id,),
            ).fetchone()
    return bool(found and found[0])
