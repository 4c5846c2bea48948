"""What ``consentry serve`` (``make run``) tells a person: one line on stdout with the URL once
it listens; logs on stderr as text on a terminal and as JSON lines otherwise; and a refused
start-up as one sentence saying what to set, with a non-zero exit code."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.paths import ROOT
from tests.system.serve_cli import (
    STARTED,
    read_line,
    serve_cli,
    started_url,
    stopped_at_the_end,
)
from tests.system.server import STARTUP_TIMEOUT_SECONDS

SUMMARY = [
    "database: SQLite {database}",
    "model: offline (deterministic, answers from your notes; no key needed)",
    "graphs: tutor",
]
"""What start-up logs on a fresh database with the defaults, before the started line."""


def test_serve_prints_one_line_with_its_url_and_logs_json_lines_off_a_terminal(
    tmp_path: Path,
) -> None:
    database = tmp_path / "c.db"
    process = serve_cli(
        "--port",
        "0",  # the line names the port the system chose
        database=database,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with stopped_at_the_end(process):
        assert process.stdout is not None
        first = read_line(process.stdout.fileno()).decode()
        started = STARTED.fullmatch(first.rstrip("\n"))
        assert started, first
        assert httpx.get(f"{started.group(1)}healthz", timeout=10).status_code == 200
        process.send_signal(signal.SIGTERM)
        rest, log = process.communicate(timeout=30)

    assert rest == b"", "one line on stdout, no more"
    records = [json.loads(line) for line in log.decode().splitlines()]
    # A fresh database migrates 21 times; uvicorn starts and stops: none of it is said at info.
    assert [(r["level"], r["logger"], r["message"]) for r in records] == [
        ("info", "consentry", line.format(database=database)) for line in SUMMARY
    ] + [("info", "consentry", "stopped")]


def test_serve_logs_readable_text_on_a_terminal(tmp_path: Path) -> None:
    database = tmp_path / "c.db"
    terminal, their_end = pty.openpty()
    process = serve_cli("--port", "0", database=database, stdout=subprocess.PIPE, stderr=their_end)
    os.close(their_end)
    with stopped_at_the_end(process):
        logged = [read_line(terminal).decode().strip() for _ in SUMMARY]
        assert process.stdout is not None
        assert STARTED.fullmatch(read_line(process.stdout.fileno()).decode().rstrip("\n"))
    os.close(terminal)

    for line, expected in zip(logged, SUMMARY, strict=True):
        date, time, rest = line.split(" ", 2)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", date), line
        assert re.fullmatch(r"\d\d:\d\d:\d\d,\d{3}", time), line
        assert rest == f"INFO consentry: {expected.format(database=database)}"


def test_debug_shows_the_migrations_and_uvicorns_own_lines(tmp_path: Path) -> None:
    process = serve_cli(
        "--port",
        "0",
        "--log-level",
        "debug",
        database=tmp_path / "c.db",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with stopped_at_the_end(process):
        assert process.stdout is not None
        assert STARTED.fullmatch(read_line(process.stdout.fileno()).decode().rstrip("\n"))
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=30)

    messages = [json.loads(line)["message"] for line in log.decode().splitlines()]
    assert "Application startup complete." in messages
    assert sum(m.startswith("Running upgrade ") for m in messages) >= 21


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


def _unreachable_postgres(_: Path) -> str:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    return f"postgresql://consentry:secret@127.0.0.1:{port}/consentry"


def _below_a_file(tmp_path: Path) -> str:
    (tmp_path / "passwd").write_text("root:x:0:0\n")
    return f"sqlite:///{tmp_path / 'passwd' / 'x.db'}"


def _in_a_missing_folder(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'typo' / 'c.db'}"


@pytest.mark.parametrize("command", [["serve"], ["db", "upgrade"]])
@pytest.mark.parametrize(
    "database",
    [_unreachable_postgres, _below_a_file, _in_a_missing_folder],
    ids=lambda f: f.__name__,
)
def test_a_database_that_cannot_be_served_is_one_line_naming_the_setting(
    tmp_path: Path, command: list[str], database: Callable[[Path], str]
) -> None:
    url = database(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    result = subprocess.run(
        [sys.executable, "-m", "consentry.cli", *command],
        env={**os.environ, "CONSENTRY_DATABASE_URL": url},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_SECONDS,
        check=False,
    )

    assert (result.returncode, result.stdout) == (2, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith("consentry: CONSENTRY_DATABASE_URL: "), line
    assert "secret" not in line
    assert sorted(tmp_path.rglob("*")) == before, "nothing was created"


def test_a_missing_folder_under_data_is_created_and_said(tmp_path: Path) -> None:
    process = serve_cli(
        "--port",
        "0",
        database="sqlite:///data/team/c.db",
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with stopped_at_the_end(process):
        started_url(process)
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=30)

    first = json.loads(log.decode().splitlines()[0])["message"]
    assert first == "database: SQLite data/team/c.db (created the folder data/team)"
    assert (tmp_path / "data" / "team" / "c.db").is_file()
