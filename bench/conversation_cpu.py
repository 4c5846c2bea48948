"""Server CPU per consent conversation (message → consent → approve → final), measured.

Starts `consentry serve` on a fresh SQLite file (or on DATABASE_URL, e.g. an empty PostgreSQL
database) with the offline model, runs warm-up conversations, then N more, and reads the server
process's CPU time from /proc before and after:

    .venv/bin/python bench/conversation_cpu.py [N] [DATABASE_URL]

Linux only (reads /proc). Prints server CPU and wall time per conversation; on PostgreSQL the
database server's own CPU is not included.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

WARM_UP = 10


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _events(body: str) -> list[dict[str, object]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


def _conversation(client: httpx.Client) -> None:
    asked = _events(
        client.post("/v1/chat", json={"message": "Add a summary of our discussion to my note"}).text
    )
    consent = next(e for e in asked if e["type"] == "consent")
    resume = {"approval_id": consent["approval_id"], "decision": "approve"}
    done = _events(
        client.post("/v1/chat", json={"thread_id": consent["thread_id"], "resume": resume}).text
    )
    assert done[-1]["reason"] == "completed", done[-1]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    port = _free_port()
    database = Path(tempfile.mkdtemp()) / "bench.db"
    url = sys.argv[2] if len(sys.argv) > 2 else f"sqlite:///{database}"
    env = {**os.environ, "CONSENTRY_DATABASE_URL": url}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "backend.cli",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            for _ in range(WARM_UP):
                _conversation(client)
            cpu, wall = _cpu_seconds(server.pid), time.perf_counter()
            for _ in range(count):
                _conversation(client)
            cpu, wall = _cpu_seconds(server.pid) - cpu, time.perf_counter() - wall
        print(
            f"{count} conversations: server CPU {cpu / count * 1000:.1f} ms, "
            f"wall {wall / count * 1000:.1f} ms per conversation"
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
