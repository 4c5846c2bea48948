"""How ``consentry serve`` (``make run``) stops: Ctrl-C or SIGTERM ends it with one line and exit
code 0, at once even with a tab open (its streams end with a reconnect hint), and a server started
right after on the same database serves."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.system.serve_cli import says_stopped, serve_cli, started_url, stopped_at_the_end

STOP_WITHIN_SECONDS = 2.0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_with_a_tab_open_ends_its_streams_and_the_process_within_two_seconds(
    tmp_path: Path, stop: signal.Signals
) -> None:
    database = tmp_path / "c.db"
    process = serve_cli(
        "--port", "0", database=database, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with stopped_at_the_end(process), httpx.Client(timeout=30) as client:
        url = started_url(process)
        # What a tab of the web app holds open: the approvals feed, which never ends by itself.
        with client.stream("GET", f"{url}v1/approvals/stream") as feed:
            assert feed.status_code == 200
            lines = feed.iter_lines()
            assert [next(lines) for _ in range(4)] == [
                "id: 0",
                "event: ready",
                'data: {"pending":0}',
                "",
            ]
            process.send_signal(stop)
            asked = time.monotonic()
            rest = list(lines)
        _, log = process.communicate(timeout=30)
        stopped_in = time.monotonic() - asked

    assert rest == [
        ": the run continues elsewhere: reconnect with Last-Event-ID",
        "retry: 2000",
        "",
    ]
    assert stopped_in < STOP_WITHIN_SECONDS
    assert process.returncode == 0
    assert says_stopped(log)
    assert "Traceback" not in log.decode()

    again = serve_cli(
        "--port", "0", database=database, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with stopped_at_the_end(again):
        assert httpx.get(f"{started_url(again)}healthz", timeout=10).status_code == 200
