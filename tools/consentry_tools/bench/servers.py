"""Servers the benchmark starts on this machine, and what it reads of them: CPU time and peak
memory from ``/proc`` (Linux), and the bytes their database holds."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from consentry_tools.bench.databases import libpq_url

__all__ = ["DatabaseKind", "LocalServer", "start_baseline", "start_consentry"]

DatabaseKind = Literal["sqlite", "postgres"]

_START_TIMEOUT_SECONDS = 60.0
_NO_ABUSE_LIMITS = {
    f"CONSENTRY_{name}": "0"
    for name in (
        "RATE_LIMIT_MESSAGES_PER_MINUTE",
        "RATE_LIMIT_DECISIONS_PER_MINUTE",
        "MAX_STREAMS_PER_PRINCIPAL",
        "MAX_ACTIVE_RUNS_PER_TENANT",
    )
}
"""Rate limits and caps (docs/limits.md) would refuse the load generator's one user."""


@dataclass
class LocalServer:
    name: str
    process: subprocess.Popen[bytes]
    base_url: str
    database_url: str
    """``sqlite:///<path>`` or ``postgresql://…``: where its state lives."""

    @property
    def database(self) -> DatabaseKind:
        return "sqlite" if self.database_url.startswith("sqlite:///") else "postgres"

    def cpu_seconds(self) -> float:
        """User + system CPU the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_bytes(self) -> int:
        """The most resident memory the process has had (``VmHWM``)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    def database_bytes(self) -> int:
        """Bytes in use in the database (SQLite: pages in use, WAL included; PostgreSQL: the
        database's size on disk)."""
        if self.database_url.startswith("sqlite:///"):
            path = self.database_url.removeprefix("sqlite:///")
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                free = conn.execute("PRAGMA freelist_count").fetchone()[0]
                size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int((pages - free) * size)
        import psycopg

        with psycopg.connect(libpq_url(self.database_url)) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_consentry(database_url: str, *, env: dict[str, str] | None = None) -> LocalServer:
    """``consentry serve`` with every guarantee on (its defaults), on a free loopback port.
    The abuse limits are off (the load is one user sending as fast as the server answers)."""
    port = _free_port()
    command = [sys.executable, "-m", "consentry.cli", "serve", "--port", str(port)]
    command += ["--log-level", "warning"]
    environment = {
        **os.environ,
        **_NO_ABUSE_LIMITS,
        **(env or {}),
        "CONSENTRY_DATABASE_URL": database_url,
    }
    return _start("consentry", command, environment, port, database_url)


def start_baseline(database: Path | str) -> LocalServer:
    """The naive FastAPI + LangGraph endpoint (``bench.baseline``): on ``AsyncSqliteSaver`` with
    a SQLite file (``baseline``), on ``AsyncPostgresSaver`` with a ``postgresql://`` URL of an
    empty database (``baseline-pg``)."""
    port = _free_port()
    command = [sys.executable, "-m", "consentry_tools.bench.baseline", "--port", str(port)]
    command += ["--database", str(database)]
    if isinstance(database, str) and database.startswith("postgres"):
        return _start("baseline-pg", command, dict(os.environ), port, database)
    return _start("baseline", command, dict(os.environ), port, f"sqlite:///{database}")


def _start(
    name: str, command: list[str], env: dict[str, str], port: int, database_url: str
) -> LocalServer:
    # What the server prints goes to stderr: the bench's stdout is its report.
    process = subprocess.Popen(command, env=env, stdout=sys.stderr)
    server = LocalServer(name, process, f"http://127.0.0.1:{port}", database_url)
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    with httpx.Client(base_url=server.base_url, timeout=5) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited at start-up (code {process.returncode})")
            try:
                if client.get("/healthz").status_code == 200:
                    return server
            except httpx.TransportError:
                time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{name} did not answer /healthz within {_START_TIMEOUT_SECONDS:.0f} s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
