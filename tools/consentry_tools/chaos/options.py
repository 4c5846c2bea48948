"""What one ``consentry chaos`` run does: how many trials, on which database, with how many
clients, kills and planted faults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["ChaosOptions", "DatabaseKind"]

DatabaseKind = Literal["sqlite", "postgres"]


@dataclass(frozen=True)
class ChaosOptions:
    database: DatabaseKind
    trials: int
    seed: int
    database_url: str | None = None
    """SQLite: a file that does not exist yet (default: one in a new temporary folder).
    PostgreSQL: an empty database, or any database of a server where a new one may be created."""
    clients: int = 4
    """Concurrent clients per trial, each on its own note and thread."""
    conversations: int = 2
    """Message → consent → decision rounds per client and trial."""
    replicas: int = 1
    """Server processes on the database (PostgreSQL only for more than one)."""
    kill_rate: float = 1.0
    """Share of trials with a strike: a SIGKILL, or (by the rates below) a freeze, the database's
    connections cut, the database away, its disk full or its file locked."""
    freeze_rate: float = 0.0
    """Share of strikes that freeze a server (SIGSTOP past its lease, then SIGCONT) instead of
    killing it."""
    cut_rate: float = 0.0
    """PostgreSQL: share of strikes that cut every connection of the servers to the database at
    once (through the run's proxy, ``db_proxy``) instead of killing a server."""
    outage_rate: float = 0.0
    """PostgreSQL: share of strikes that cut them and refuse new ones for a while (the database
    away)."""
    disk_full_rate: float = 0.0
    """SQLite: share of strikes that fill the disk of the server's file for a while (a tmpfs the
    run mounts, ``sqlite_faults``) instead of killing the server."""
    lock_rate: float = 0.0
    """SQLite: share of strikes that hold the file's write lock from another process for a
    while."""
    restart_rate: float = 0.0
    """PostgreSQL: share of strikes that restart the database server (``pg_ctl restart -m
    immediate`` on ``postgres_data``, ``pg_restarts``) instead of killing a replica."""
    postgres_data: Path | None = None
    """The data directory of the cluster of ``database_url``, for ``restart_rate``."""
    double_kill_rate: float = 0.15
    """Share of kills followed by a second SIGKILL while the server restarts."""
    race_rate: float = 0.25
    """Share of decisions raced by a second, different decision (another tab)."""
    lease_seconds: float = 3.0
    """``CONSENTRY_LEASE_SECONDS`` of the servers on PostgreSQL: how soon a live replica takes over
    the runs of a killed one."""
    plant: tuple[str, ...] = ()
    """Faults to plant in the database after the last trial (``faults.FAULTS``)."""
    keep: bool = False
    """Keep the database and the server logs even when nothing was violated (they are always
    kept when something was)."""
    json_path: Path | None = None
    work_dir: Path | None = None
    """Where the SQLite file and the server logs go (default: a new temporary folder)."""
    details: int = 10
    """How many violations to print in full."""

    @property
    def through_proxy(self) -> bool:
        """Whether the servers reach the database through the run's proxy (``db_proxy``)."""
        return self.cut_rate > 0 or self.outage_rate > 0

    @property
    def other_strikes(self) -> tuple[float, ...]:
        """The rates of the strikes that are not kills, in the order a trial draws them."""
        return (
            self.freeze_rate,
            self.cut_rate,
            self.outage_rate,
            self.disk_full_rate,
            self.lock_rate,
            self.restart_rate,
        )
