"""Run ``consentry serve`` as a real process for system tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

STARTUP_TIMEOUT_SECONDS = 60.0
API_KEY = "k1"
"""The one key of the servers started with ``CONSENTRY_API_KEYS`` (principal ``t:u``)."""
NO_SAMPLE_NOTES = {"CONSENTRY_SAMPLE_NOTES": "false"}
"""Servers start with an empty default project, as most tests expect; pass
``env={"CONSENTRY_SAMPLE_NOTES": "true"}`` for the first-run experience (the README session)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve(database: Path | str, *, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start a server process on ``database``; yield its base URL; SIGKILL it on exit."""
    with serve_process(database, env=env) as (base_url, _):
        yield base_url


@contextmanager
def serve_process(
    database: Path | str, *, env: dict[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``serve``, also yielding the process (to signal it); SIGKILLed on exit if still alive.

    ``database``: a SQLite file, or a ``postgresql://`` URL (replicas share one). Sample notes
    are off unless ``env`` turns them on."""
    url = database if isinstance(database, str) else f"sqlite:///{database}"
    port = free_port()
    command = [sys.executable, "-m", "consentry.cli", "serve", "--port", str(port)]
    base_url = f"http://127.0.0.1:{port}"
    with subprocess.Popen(  # leaving it closes the output pipe
        [*command, "--log-level", "warning", *args],
        env={**os.environ, **NO_SAMPLE_NOTES, "CONSENTRY_DATABASE_URL": url, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as process:
        try:
            _wait_until_healthy(process, base_url)
            yield base_url, process
        except BaseException as failure:
            _stop(process)
            # The server's log tells why a test failed (a lost lease, an error it logged).
            output = process.stdout.read().decode(errors="replace") if process.stdout else ""
            failure.add_note(f"output of the server at {base_url}:\n{output or '(none)'}")
            raise
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)


def _wait_until_healthy(process: subprocess.Popen[bytes], base_url: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            raise RuntimeError(f"server exited with {process.returncode}:\n{output}")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"server at {base_url} did not become healthy")
