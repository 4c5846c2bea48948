"""``consentry serve`` writes its log as JSON lines when stderr is not a terminal: the access lines
with their ids, the start-up and the stop, and nothing a person wrote."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from tests.system.server import serve_process

PRIVATE = "the code to the safe is 2718"


def test_a_served_request_is_one_json_access_line_and_every_line_is_json(tmp_path: Path) -> None:
    env = {"CONSENTRY_API_KEYS": "key-a=acme:alice"}
    with serve_process(tmp_path / "db.sqlite", env=env, args=["--log-level", "info"]) as (
        base_url,
        process,
    ):
        response = httpx.post(
            f"{base_url}/v1/chat",
            json={"message": PRIVATE},
            headers={"Authorization": "Bearer key-a", "X-Request-ID": "sys-1"},
            timeout=30,
        )
        assert response.status_code == 200
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)

    lines = [line for line in output.decode().splitlines() if line.strip()]
    # stdout and stderr come merged here: the one start-up line (stdout), and the log (stderr)
    started = [line for line in lines if line.startswith("Consentry is serving http://")]
    assert len(started) == 1, lines
    records = [json.loads(line) for line in lines if line not in started]  # every line parses
    (access,) = [r for r in records if r.get("request_id") == "sys-1" and "status" in r]
    assert (access["logger"], access["principal"], access["path"], access["status"]) == (
        "consentry.access",
        "acme/alice",
        "/v1/chat",
        200,
    )
    said = [r["message"] for r in records if r["logger"] == "consentry"]  # start-up and stop
    assert said == [
        f"database: SQLite {tmp_path / 'db.sqlite'}",
        "model: offline (deterministic, answers from your notes; no key needed)",
        "graphs: tutor",
        "stopped",
    ]
    assert not [r for r in records if r["logger"] == "uvicorn.access"]
    assert PRIVATE not in output.decode()
    assert "key-a" not in output.decode()
