"""``consentry serve`` as a person starts it, for the tests of what it says and how it stops:
a process of its own, its first line of output, and its end."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.paths import ROOT
from tests.system.server import STARTUP_TIMEOUT_SECONDS

STARTED = re.compile(
    r"Consentry is serving (http://127\.0\.0\.1:\d+/) \(the web app; the API's documentation at "
    r"/docs\)\. Stop it with Ctrl-C\."
)


def says_stopped(log: bytes) -> bool:
    """Whether the last line of ``log`` (stderr as JSON lines) is the server's "stopped"."""
    record = json.loads(log.decode().splitlines()[-1])
    return (record["level"], record["logger"], record["message"]) == (
        "info",
        "consentry",
        "stopped",
    )


def serve_cli(
    *args: str,
    database: Path | str,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    **streams: int,
) -> subprocess.Popen[bytes]:
    """``consentry serve ARGS`` on ``database`` (a SQLite file, or a URL as it is)."""
    url = database if isinstance(database, str) else f"sqlite:///{database}"
    return subprocess.Popen(
        [sys.executable, "-m", "consentry.cli", "serve", *args],
        env={**os.environ, "CONSENTRY_DATABASE_URL": url, **(env or {})},
        cwd=cwd,
        **streams,  # type: ignore[call-overload]
    )


def read_line(fd: int, *, timeout: float = STARTUP_TIMEOUT_SECONDS) -> bytes:
    """One line from ``fd`` (waiting at most ``timeout``), without reading past it."""
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line within {timeout} s; got {line!r}"
        if select.select([fd], [], [], left)[0]:
            byte = os.read(fd, 1)
            assert byte, f"closed after {line!r}"
            line += byte
    return line


def started_url(process: subprocess.Popen[bytes]) -> str:
    """The URL of the first line ``process`` prints, which must be the started line."""
    assert process.stdout is not None
    first = read_line(process.stdout.fileno()).decode()
    started = STARTED.fullmatch(first.rstrip("\n"))
    assert started, first
    return started.group(1)


@contextmanager
def stopped_at_the_end(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """``process``, SIGKILLed at the end if it is still running."""
    with process:  # leaving it closes the pipes
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
