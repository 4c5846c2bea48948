"""Log lines are JSON objects naming the request, the principal, the thread and the run, and
never carry what people wrote (messages, notes, proposals) or their keys."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from consentry.observability.logs import JsonLogFormatter
from tests.openai_stub import OpenAIStub

SECRET_MESSAGE = "my bank PIN is zq4711, what is retrieval?"
SECRET_NOTE = "Diary: the surprise party is on Friday."
API_KEYS = "key-alice=acme:alice"
ALICE = {"Authorization": "Bearer key-alice"}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(JsonLogFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def captured() -> Iterator[_Lines]:
    handler = _Lines()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


async def test_a_request_and_the_run_it_starts_log_json_lines_with_their_ids(
    open_client: Callable[..., Any], stub: OpenAIStub, captured: _Lines
) -> None:
    stub.reply('{"intent": "answer", "query": "retrieval"}')
    stub.fail(503)  # one retry: the retry layer logs a warning inside the run
    stub.reply("Retrieval finds documents first.")
    settings = stub.app_settings(llm_max_attempts=2, llm_retry_base_seconds=0.01)
    async with open_client(api_keys=API_KEYS, **settings) as client:
        projects = (await client.get("/v1/projects", headers=ALICE)).json()["projects"]
        note = await client.post(
            f"/v1/projects/{projects[0]['project_id']}/notes",
            json={"title": "Private", "content": SECRET_NOTE},
            headers=ALICE,
        )
        assert note.status_code == 201, note.text
        response = await client.post(
            "/v1/chat",
            json={"message": SECRET_MESSAGE},
            headers={**ALICE, "X-Request-ID": "req-42"},
        )
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]

    assert response.status_code == 200
    assert response.headers["X-Request-ID"] == "req-42"
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    records = captured.records
    (access,) = [r for r in records if r.get("request_id") == "req-42" and "status" in r]
    assert access == {
        "ts": access["ts"],
        "level": "info",
        "logger": "consentry.access",
        "message": "POST /v1/chat 200",
        "request_id": "req-42",
        "principal": "acme/alice",
        "method": "POST",
        "path": "/v1/chat",
        "status": 200,
        "outcome": "completed",
        "duration_ms": access["duration_ms"],
    }
    (retry,) = [r for r in records if r["logger"] == "consentry_graphs.models.retrying"]
    assert (retry["level"], retry["request_id"], retry["principal"]) == (
        "warning",
        "req-42",
        "acme/alice",
    )
    assert (retry["thread_id"], retry["run_id"]) == (thread_id, run_id)
    everything = "\n".join(captured.lines)
    for private in (
        SECRET_MESSAGE,
        "zq4711",  # not hex: no id or timestamp can contain it by chance
        SECRET_NOTE,
        "surprise",
        "key-alice",
        "Retrieval finds",
    ):
        assert private not in everything


async def test_a_request_without_a_sane_request_id_gets_a_new_one(
    open_client: Callable[..., Any], captured: _Lines
) -> None:
    async with open_client() as client:
        given = await client.get("/v1/threads", headers={"X-Request-ID": "bad id\twith spaces"})
        fresh = await client.get("/v1/threads")

    ids = [given.headers["X-Request-ID"], fresh.headers["X-Request-ID"]]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert ids[0] != ids[1]
    access = [r for r in captured.records if r["logger"] == "consentry.access"]
    assert [(r["request_id"], r["principal"], r["status"]) for r in access] == [
        (ids[0], "local/local", 200),
        (ids[1], "local/local", 200),
    ]


async def test_probes_log_at_debug_and_refused_requests_still_get_a_line(
    open_client: Callable[..., Any], captured: _Lines
) -> None:
    async with open_client(api_keys=API_KEYS) as client:
        assert (await client.get("/healthz")).status_code == 200
        refused = await client.post("/v1/chat", json={"message": SECRET_MESSAGE})

    assert refused.status_code == 401
    access = [r for r in captured.records if r["logger"] == "consentry.access"]
    assert [(r["path"], r["status"], "principal" in r) for r in access] == [
        ("/v1/chat", 401, False)
    ]
    assert SECRET_MESSAGE not in "\n".join(captured.lines)


def test_an_exception_is_logged_with_its_type_and_traceback_in_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "tests.logs", logging.ERROR, __file__, 1, "failed", (), exc_info=sys.exc_info()
        )
    line = JsonLogFormatter().format(record)

    assert "\n" not in line
    parsed = json.loads(line)
    assert (parsed["level"], parsed["message"], parsed["exc_type"]) == (
        "error",
        "failed",
        "ValueError",
    )
    assert "boom" in parsed["traceback"]
