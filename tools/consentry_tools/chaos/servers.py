"""The server processes a chaos run starts, and how it kills and freezes them.

Each server is a real ``python -m consentry.cli serve`` on a fixed loopback port (a restart comes
back on the same port, so clients find it again), with the settings of a fresh install: the
environment's ``CONSENTRY_*`` variables are dropped, the offline model answers, and only the
abuse limits are off (one chaos user sends far more than a person; docs/limits.md). On
PostgreSQL ``CONSENTRY_LEASE_SECONDS`` is short, so the runs of a killed replica are taken over in
seconds. The servers import Consentry from the same place as this process (``PYTHONPATH``). Each
writes its log to ``<work>/server-<n>.log``.

:class:`ServerFaults` strikes a server at a seeded random moment of a trial (after a random
number of events reached the clients, plus a random pause). A kill SIGKILLs it, restarts it, and
sometimes kills it again while it restarts (a double kill). A freeze SIGSTOPs it past its lease
(a paused VM, a swap or GC stall), long enough for another replica to take its runs over, then
SIGCONTs it: the woken process still believes it holds them, and every write it tries must be
refused by the run's fence. Of several replicas it strikes one that owns a run (named by
``threads.lease_owner``), waiting a moment for a run to start when none is running.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import consentry
import consentry_graphs as graphs
from consentry_tools.chaos.db_proxy import DatabaseProxy, OutageRecord
from consentry_tools.chaos.workload import Progress

__all__ = [
    "FreezeRecord",
    "KillRecord",
    "ServerFaults",
    "ServerProcess",
    "ServerStartError",
    "start_servers",
]

START_TIMEOUT_SECONDS = 90.0
KILL_JITTER_SECONDS = 0.04
"""The random pause after the chosen event: about the time a step takes on the offline model."""
FREEZE_LEASES = (1.5, 2.5)
"""A freeze lasts this many leases (uniformly between): past the lease, and past the moment the
other replicas' takeover loop (which wakes at the earliest expiry) finds it expired."""
SQLITE_FREEZE_SECONDS = (0.5, 2.0)
OUTAGE_LEASES = (0.5, 2.5)
"""The database stays away this many leases: sometimes shorter than the two thirds after which a
replica stops the runs it cannot renew, sometimes past the lease (their takeover)."""
"""On SQLite (one process, nobody to take over): a stall the clients wait through."""
OWNER_WAIT_SECONDS = 1.0
OWNER_POLL_SECONDS = 0.01
_OFF = "0"
_ABUSE_LIMITS_OFF = {
    f"CONSENTRY_{name}": _OFF
    for name in (
        "RATE_LIMIT_MESSAGES_PER_MINUTE",
        "RATE_LIMIT_DECISIONS_PER_MINUTE",
        "MAX_STREAMS_PER_PRINCIPAL",
        "MAX_ACTIVE_RUNS_PER_TENANT",
    )
}


class ServerStartError(RuntimeError):
    """A server exited or did not answer ``/healthz`` in time; the message ends with its log."""


@dataclass
class ServerProcess:
    name: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    start_seconds: list[float] = field(default_factory=list)
    """How long each start took until ``/healthz`` answered."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def spawn(self) -> None:
        command = [sys.executable, "-m", "consentry.cli", "serve", "--port", str(self.port)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, "--log-level", "warning"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C of the chaos run is not theirs
            )

    async def healthy(self) -> None:
        """Wait until ``/healthz`` answers; :class:`ServerStartError` if the process exits or
        does not answer within ``START_TIMEOUT_SECONDS``."""
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as http:
            while time.monotonic() - started < START_TIMEOUT_SECONDS:
                if self.process is None or self.process.poll() is not None:
                    raise ServerStartError(f"{self.name} exited at start-up:\n{self._log_tail()}")
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        self.start_seconds.append(time.monotonic() - started)
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise ServerStartError(f"{self.name} did not answer /healthz:\n{self._log_tail()}")

    async def kill(self) -> None:
        """SIGKILL: no shutdown, no lease given back. Returns once the process is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            await asyncio.to_thread(self.process.wait)

    def freeze(self) -> None:
        """SIGSTOP: the process, its event loop and its timers stop; its sockets stay open."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: it goes on where it stopped, unaware of the time that passed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def server_environment(database_url: str, *, lease_seconds: float | None) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CONSENTRY_") and name != "OPENAI_API_KEY"
    }
    # The servers import the very code this run imports (a checkout run without installing it).
    sources = [
        str(Path(str(package.__file__)).resolve().parents[1]) for package in (consentry, graphs)
    ]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*sources, env.get("PYTHONPATH")) if p)
    env |= _ABUSE_LIMITS_OFF | {"CONSENTRY_DATABASE_URL": database_url}
    if lease_seconds is not None:
        env["CONSENTRY_LEASE_SECONDS"] = str(lease_seconds)
    return env


async def start_servers(
    database_url: str, *, count: int, work: Path, lease_seconds: float | None
) -> list[ServerProcess]:
    """Start ``count`` servers on the database at once; each on a free port of its own."""
    env = server_environment(database_url, lease_seconds=lease_seconds)
    servers = [
        ServerProcess(f"server {n}", _free_port(), env, work / f"server-{n}.log")
        for n in range(1, count + 1)
    ]
    for server in servers:
        server.spawn()
    try:
        await asyncio.gather(*(server.healthy() for server in servers))
    except BaseException:
        await asyncio.gather(*(server.kill() for server in servers))
        raise
    return servers


@dataclass(frozen=True)
class KillRecord:
    server: str
    after_ticks: int
    open_requests: int
    """Client requests open when the SIGKILL was sent."""
    runs_cut: int
    """Runs the killed process held a lease on (read from the database after the kill)."""
    double: bool


@dataclass(frozen=True)
class FreezeRecord:
    server: str
    after_ticks: int
    open_requests: int
    """Client requests open when the SIGSTOP was sent."""
    seconds: float
    """How long the process stayed stopped."""
    runs_frozen: int
    """Threads whose run the frozen process held a lease on when it stopped."""
    runs_taken_over: int
    """Of those, the ones another replica took over (or finished) while it was stopped: the
    woken process's writes to them are what the fence must refuse."""


class ServerFaults:
    """Kills or freezes one server of ``servers`` in a trial, then brings it back."""

    def __init__(
        self,
        servers: Sequence[ServerProcess],
        *,
        rng: random.Random,
        double_kill_rate: float,
        leased_pids: Callable[[], Awaitable[dict[str, int]]],
        lease_seconds: float | None,
    ) -> None:
        """``lease_seconds``: the servers' lease (None on SQLite, which has no takeover)."""
        self._servers = list(servers)
        self._rng = rng
        self._owner_rng = random.Random(rng.random())
        """For the choice among owners, which depends on timing: the run's own sequence of
        draws (hence its kills and double kills) stays the same for a seed."""
        self._double_kill_rate = double_kill_rate
        self._leased_pids = leased_pids
        self._lease_seconds = lease_seconds

    async def kill_after(self, progress: Progress, ticks: int) -> KillRecord:
        """Once the clients' runs got ``ticks`` events far (or at once, if they are done), and a
        random pause, SIGKILL the server that owns a run (any, when none runs); restart it."""
        pause = self._rng.uniform(0, KILL_JITTER_SECONDS)
        double = self._rng.random() < self._double_kill_rate
        again_after = self._rng.uniform(0.2, 1.0)
        await progress.reached(ticks)
        await asyncio.sleep(pause)
        victim = await self._owner_of_a_run(progress)
        open_requests = progress.open_requests
        await victim.kill()
        pid = victim.pid
        runs_cut = sum(1 for owner in (await self._leased_pids()).values() if owner == pid)
        if double:
            victim.spawn()
            await asyncio.sleep(again_after * _typical(victim.start_seconds))
            await victim.kill()
        victim.spawn()
        await victim.healthy()
        return KillRecord(victim.name, ticks, open_requests, runs_cut, double)

    async def freeze_after(self, progress: Progress, ticks: int) -> FreezeRecord:
        """Once the clients' runs got ``ticks`` events far, and a random pause, SIGSTOP the
        server that owns a run past its lease (``FREEZE_LEASES``), then SIGCONT it."""
        pause = self._rng.uniform(0, KILL_JITTER_SECONDS)
        if self._lease_seconds is None:
            seconds = self._rng.uniform(*SQLITE_FREEZE_SECONDS)
        else:
            seconds = self._lease_seconds * self._rng.uniform(*FREEZE_LEASES)
        await progress.reached(ticks)
        await asyncio.sleep(pause)
        victim = await self._owner_of_a_run(progress)
        open_requests = progress.open_requests
        victim.freeze()
        try:
            held = {t for t, pid in (await self._leased_pids()).items() if pid == victim.pid}
            await asyncio.sleep(seconds)
            now = await self._leased_pids()
        finally:
            victim.thaw()
        taken = sum(1 for thread_id in held if now.get(thread_id) != victim.pid)
        return FreezeRecord(victim.name, ticks, open_requests, seconds, len(held), taken)

    async def database_away_after(
        self, progress: Progress, ticks: int, proxy: DatabaseProxy, *, outage: bool
    ) -> OutageRecord:
        """Once the clients' runs got ``ticks`` events far, and a random pause, cut every
        connection of the servers to the database (through ``proxy``); with ``outage``, refuse
        new ones for ``OUTAGE_LEASES`` leases too."""
        pause = self._rng.uniform(0, KILL_JITTER_SECONDS)
        seconds = (self._lease_seconds or 1.0) * self._rng.uniform(*OUTAGE_LEASES) if outage else 0
        await progress.reached(ticks)
        await asyncio.sleep(pause)
        open_requests = progress.open_requests
        proxy.refuse_for(seconds)
        cut = proxy.cut()
        await asyncio.sleep(seconds)
        return OutageRecord("database", ticks, open_requests, seconds, cut)

    async def _owner_of_a_run(self, progress: Progress) -> ServerProcess:
        """The replica holding the lease of a running thread: the first seen within
        ``OWNER_WAIT_SECONDS`` while the clients are at work, else any."""
        if len(self._servers) == 1:
            return self._servers[0]
        by_pid = {server.pid: server for server in self._servers}
        deadline = time.monotonic() + OWNER_WAIT_SECONDS
        while True:
            leased = (await self._leased_pids()).values()
            owners = sorted({pid for pid in leased if pid in by_pid})
            if owners:
                return by_pid[self._owner_rng.choice(owners)]
            if progress.finished or time.monotonic() > deadline:
                return self._owner_rng.choice(self._servers)
            await asyncio.sleep(OWNER_POLL_SECONDS)


def _typical(seconds: list[float]) -> float:
    return sorted(seconds)[len(seconds) // 2] if seconds else 2.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
