"""PostgreSQL restarted mid-run (``--restart-rate``): ``pg_ctl restart -m immediate`` on the
cluster's data directory (``--postgres-data``), as a crash and a restart of the database server
would be. Every connection of every replica (their ``LISTEN`` ones too) is dropped at once, new
ones are refused while the server recovers, and what it had committed is there when it is back.

The restart runs as the owner of the data directory (``runuser`` when this process is root, as
PostgreSQL refuses to run as root). Every database of that cluster goes down with it: give the
run a cluster of its own. Its commits must be synchronous (``synchronous_commit`` on, the
default): an immediate shutdown loses a commit still in the server's memory, which would be
counted as a lost decision that no server could have kept (``fsync`` off is fine: the machine
does not crash, the files are in its cache).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from consentry_tools.chaos.workload import Progress

__all__ = ["PostgresRestarter", "RestartError", "RestartRecord"]

STRIKE_JITTER_SECONDS = 0.04
RESTART_TIMEOUT_SECONDS = 60
SERVER_LOG = "consentry-chaos.log"
"""The restarted server's log, in its data directory."""


class RestartError(RuntimeError):
    """The cluster cannot be restarted by this run; the message says why."""


@dataclass(frozen=True)
class RestartRecord:
    after_ticks: int
    open_requests: int
    """Client requests open when the restart began."""
    seconds: float
    """How long the restart took, until the server accepted connections again."""


class PostgresRestarter:
    """Restarts the cluster of ``data_dir`` (see the module)."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        version = _read(data_dir / "PG_VERSION")
        found = Path(f"/usr/lib/postgresql/{version}/bin/pg_ctl")
        pg_ctl = str(found) if found.exists() else shutil.which("pg_ctl")
        if pg_ctl is None:
            raise RestartError("pg_ctl not found (apt-get install -y postgresql)")
        owner = pwd.getpwuid(data_dir.stat().st_uid).pw_name
        as_owner = ["runuser", "-u", owner, "--"] if os.geteuid() == 0 and owner != "root" else []
        self._command = [*as_owner, pg_ctl, "-D", str(data_dir)]

    async def check(self, database_url: str) -> None:
        """Refuse a cluster this run cannot restart without losing commits, or whose data
        directory is not the server's behind ``database_url``."""
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            commit = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            if commit is not None and commit[0] == "off":
                raise RestartError(
                    "the cluster runs with synchronous_commit off: a restart would lose "
                    "acknowledged commits; restart trials need it on (the default)"
                )
            try:
                row = await (await conn.execute("SHOW data_directory")).fetchone()
            except psycopg.errors.InsufficientPrivilege:
                return  # (only a superuser may see it: trust the option)
        if row is not None and not await asyncio.to_thread(_same, Path(row[0]), self._data_dir):
            raise RestartError(
                f"--postgres-data {self._data_dir} is not the data directory of the server of "
                f"--database-url ({row[0]})"
            )

    async def restart(self) -> float:
        """Restart it at once (``-m immediate``); how long until it accepted connections."""
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *self._command,
            "restart",
            "-l",  # (the server's own output, which must not go to this pipe)
            str(self._data_dir / SERVER_LOG),
            "-m",
            "immediate",
            "-w",
            "-t",
            str(RESTART_TIMEOUT_SECONDS),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, error = await process.communicate()
        if process.returncode != 0:
            raise RestartError(f"pg_ctl restart failed: {error.decode(errors='replace')}")
        return time.monotonic() - started

    async def restart_after(
        self, progress: Progress, ticks: int, rng: random.Random
    ) -> RestartRecord:
        """Once the clients' runs got ``ticks`` events far, and a random pause, restart it."""
        pause = rng.uniform(0, STRIKE_JITTER_SECONDS)
        await progress.reached(ticks)
        await asyncio.sleep(pause)
        open_requests = progress.open_requests
        return RestartRecord(ticks, open_requests, await self.restart())


def _same(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise RestartError(f"{path.parent} is not a PostgreSQL data directory: {exc}") from exc
