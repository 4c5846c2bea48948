"""SQLite's strikes: the disk of its file full for a while (``--disk-full-rate``), or its write
lock held by another process for a while (``--lock-rate``).

- **The disk.** The run keeps the SQLite file on a tmpfs of its own (:class:`SqliteDisk`),
  mounted when the run starts and unmounted when it ends (``mount`` needs root). A strike shrinks
  the tmpfs to what its files use (``mount -o remount,size=…``, refused and tried again if a
  write landed meanwhile), so that every write that grows the database, its WAL or its shared
  memory fails as on a full disk (``ENOSPC``: SQLite's ``SQLITE_FULL``), then gives the space
  back. Nothing of the machine's own disks is touched.
- **The lock.** A connection of the run's own takes SQLite's write lock (``BEGIN IMMEDIATE``) and
  holds it, as a ``sqlite3`` shell or a backup tool would. The server's writes wait for it: its
  busy timeout (``BUSY_TIMEOUT_SECONDS``) is longer than the strike.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from consentry_tools.chaos.workload import Progress

__all__ = [
    "DISK_FULL",
    "FileRecord",
    "SqliteDisk",
    "SqliteStrikeError",
    "hold_write_lock",
    "strike_file",
]

DISK_BYTES = 4 << 30
"""The tmpfs's size while it has room: its pages are memory only once written."""
FULL_SECONDS = (0.5, 2.5)
"""How long a strike keeps the disk full, or the file locked."""
SHRINK_TRIES = 50
LOCK_WAIT_SECONDS = 30.0
"""How long the run's own ``BEGIN IMMEDIATE`` may wait for the server's transaction."""
STRIKE_JITTER_SECONDS = 0.04
DISK_FULL = "database or disk is full"
"""SQLite's words for ``SQLITE_FULL``, in the log line of every request or run that met it."""

FileFault = Literal["disk_full", "lock"]


class SqliteStrikeError(RuntimeError):
    """The tmpfs cannot be mounted, shrunk or given its room back, or the file's lock cannot be
    taken; the message says why."""


@dataclass(frozen=True)
class FileRecord:
    kind: FileFault
    after_ticks: int
    open_requests: int
    """Client requests open when the disk filled up, or the lock was taken."""
    seconds: float
    """How long it lasted."""


class SqliteDisk:
    """A size-limited tmpfs at ``path``, for a SQLite file whose disk a strike fills up."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    @asynccontextmanager
    async def mounted(cls, path: Path) -> AsyncIterator[SqliteDisk]:
        """Mount it (root only), and unmount it when done: what it held is gone then."""
        if os.geteuid() != 0:
            raise SqliteStrikeError(
                "a full disk is a size-limited tmpfs the run mounts: run it as root"
            )
        await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True)
        await _mount("-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0700", "tmpfs", str(path))
        try:
            yield cls(path)
        finally:
            if not await _run("umount", str(path)):
                # Still busy (a server that did not exit): detached now, gone once it is freed.
                await _run("umount", "--lazy", str(path))
                sys.stderr.write(f"consentry chaos: {path} was busy; unmounted lazily\n")

    def used_bytes(self) -> int:
        stats = os.statvfs(self.path)
        return (stats.f_blocks - stats.f_bfree) * stats.f_frsize

    def free_bytes(self) -> int:
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    async def fill(self) -> None:
        """No room left: the tmpfs shrunk to what its files use."""
        for _ in range(SHRINK_TRIES):
            if await _run("mount", "-o", f"remount,size={self.used_bytes()}", str(self.path)):
                return  # (refused while a write made the files larger than the size asked)
        raise SqliteStrikeError(f"could not fill {self.path}: its files kept growing")

    async def free(self) -> None:
        await _mount("-o", f"remount,size={DISK_BYTES}", str(self.path))

    def copy_to(self, folder: Path) -> None:
        """Keep what it holds (before it is unmounted) in ``folder``."""
        shutil.copytree(self.path, folder, dirs_exist_ok=True)


@asynccontextmanager
async def hold_write_lock(database: Path) -> AsyncIterator[None]:
    """SQLite's write lock on ``database``, held by a connection of this process meanwhile."""
    connection = await asyncio.to_thread(
        sqlite3.connect,
        database,
        timeout=LOCK_WAIT_SECONDS,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        try:
            await asyncio.to_thread(connection.execute, "BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise SqliteStrikeError(
                f"could not take {database}'s write lock in {LOCK_WAIT_SECONDS:.0f} s: the server "
                f"held it all that time ({exc})"
            ) from exc
        try:
            yield
        finally:
            await asyncio.to_thread(connection.execute, "ROLLBACK")
    finally:
        await asyncio.to_thread(connection.close)


async def strike_file(
    kind: FileFault,
    *,
    progress: Progress,
    ticks: int,
    rng: random.Random,
    disk: SqliteDisk | None,
    database: Path,
) -> FileRecord:
    """Once the clients' runs got ``ticks`` events far, and a random pause: fill ``disk`` up, or
    take ``database``'s write lock, for ``FULL_SECONDS``; then give it back."""
    pause = rng.uniform(0, STRIKE_JITTER_SECONDS)
    seconds = rng.uniform(*FULL_SECONDS)
    await progress.reached(ticks)
    await asyncio.sleep(pause)
    open_requests = progress.open_requests
    if kind == "lock":
        async with hold_write_lock(database):
            await asyncio.sleep(seconds)
    else:
        assert disk is not None, "a full disk needs the run's tmpfs"
        await disk.fill()
        try:
            await asyncio.sleep(seconds)
        finally:
            await disk.free()
    return FileRecord(kind, ticks, open_requests, seconds)


async def _mount(*args: str) -> None:
    if not await _run("mount", *args):
        raise SqliteStrikeError(f"mount {' '.join(args)} failed")


async def _run(*command: str) -> bool:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    return await process.wait() == 0
