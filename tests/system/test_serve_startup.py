"""What ``consentry serve`` (``make run``) tells a person: one line on stdout with the URL once
it listens; logs on stderr as text on a terminal and as JSON lines otherwise; and a refused
start-up as one sentence saying what to set, with a non-zero exit code."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.paths import ROOT
from tests.system.server import STARTUP_TIMEOUT_SECONDS

STARTED = re.compile(
    r"Consentry is serving (http://127\.0\.0\.1:\d+/) \(the web app; the API's documentation at "
    r"/docs\)\. Stop it with Ctrl-C\."
)


def _serve(*args: str, database: Path, **streams: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "consentry.cli", "serve", *args],
        env={**os.environ, "CONSENTRY_DATABASE_URL": f"sqlite:///{database}"},
        cwd=ROOT,
        **streams,  # type: ignore[call-overload]
    )


def _read_line(fd: int, *, timeout: float = STARTUP_TIMEOUT_SECONDS) -> bytes:
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


@contextmanager
def _stopped_at_the_end(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    with process:  # leaving it closes the pipes
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)


def test_serve_prints_one_line_with_its_url_and_logs_json_lines_off_a_terminal(
    tmp_path: Path,
) -> None:
    process = _serve(
        "--port",
        "0",  # the line names the port the system chose
        database=tmp_path / "c.db",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with _stopped_at_the_end(process):
        assert process.stdout is not None
        first = _read_line(process.stdout.fileno()).decode()
        started = STARTED.fullmatch(first.rstrip("\n"))
        assert started, first
        assert httpx.get(f"{started.group(1)}healthz", timeout=10).status_code == 200
        process.send_signal(signal.SIGTERM)
        rest, log = process.communicate(timeout=30)

    assert rest == b"", "one line on stdout, no more"
    records = [json.loads(line) for line in log.decode().splitlines() if line.strip()]
    assert any(r["message"].startswith("Application startup complete") for r in records)


def test_serve_logs_readable_text_on_a_terminal(tmp_path: Path) -> None:
    terminal, their_end = pty.openpty()
    process = _serve(
        "--port", "0", database=tmp_path / "c.db", stdout=subprocess.PIPE, stderr=their_end
    )
    os.close(their_end)
    with _stopped_at_the_end(process):
        first_log = _read_line(terminal).decode().strip()
        assert process.stdout is not None
        assert STARTED.fullmatch(_read_line(process.stdout.fileno()).decode().rstrip("\n"))
    os.close(terminal)

    assert not first_log.startswith("{"), first_log
    assert re.fullmatch(r"\S+ \S+ INFO uvicorn\.error: Started server process \[\d+\]", first_log)


def test_a_public_address_without_api_keys_is_one_sentence_saying_what_to_set(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "consentry.cli", "serve", "--host", "0.0.0.0"],
        env={**os.environ, "CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_SECONDS,
        check=False,
    )

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "consentry: refusing to bind to 0.0.0.0 without CONSENTRY_API_KEYS (keyless mode serves "
        "one local user, on loopback only): set CONSENTRY_API_KEYS=token=tenant:user, or serve "
        "on 127.0.0.1\n"
    )


def test_a_malformed_setting_is_one_line_naming_its_variable(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "consentry.cli", "serve"],
        env={
            **os.environ,
            "CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
            "CONSENTRY_PORT": "eighty",
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_SECONDS,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "consentry: CONSENTRY_PORT: Input should be a valid integer, unable to parse string as an "
        "integer"
    ]
