"""A graph's Store write in a step the server is SIGKILLed in: the new server closes the cut run,
a recovery run does the step again, which writes the same item again, and one item is stored
(``tests/memory_graphs.py``: keyed by the message's id, as docs/memory.md advises)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.memory_graphs import STORE_WRITTEN
from tests.system.kill_points import KillPoints
from tests.system.kill_points_graph import KILL_POINTS_DIR
from tests.system.server import serve

WAIT_SECONDS = 30.0


@pytest.fixture
def points(tmp_path: Path) -> KillPoints:
    return KillPoints.in_folder(tmp_path)


async def _memories(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    found = await http.post("/store/items/search", json={"namespace_prefix": ["memories"]})
    items: list[dict[str, Any]] = found.json()["items"]
    return items


async def test_a_store_write_in_a_step_run_again_after_a_kill_is_stored_once(
    tmp_path: Path, points: KillPoints
) -> None:
    database = tmp_path / "consentry.db"
    env = {
        "CONSENTRY_GRAPHS": "memory=tests.memory_graphs:memory_graph",
        KILL_POINTS_DIR: str(points.folder),
    }
    points.stop_at(STORE_WRITTEN)
    message = {"role": "user", "content": "remember I like tea"}
    with serve(database, env=env) as url:
        async with httpx.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as http:
            started = await http.post(
                "/runs", json={"assistant_id": "memory", "input": {"messages": [message]}}
            )
            run = started.json()
            await points.reached(STORE_WRITTEN)
            before = await _memories(http)
    # SIGKILLed in the step, after its write: no checkpoint of the step.
    points.go_on()
    with serve(database, env=env) as url:
        async with httpx.AsyncClient(base_url=url, timeout=WAIT_SECONDS) as http:
            # The run the kill cut is closed; a recovery run does the step again from its
            # checkpoint (the thread's newest run).
            closed = await http.get(f"/threads/{run['thread_id']}/runs/{run['run_id']}/join")
            runs = (await http.get(f"/threads/{run['thread_id']}/runs")).json()
            recovered = await http.get(f"/threads/{run['thread_id']}/runs/{runs[0]['run_id']}/join")
            state = await http.get(f"/threads/{run['thread_id']}/state")
            after = await _memories(http)

    assert started.status_code == 200, started.text
    assert [item["value"] for item in before] == [{"text": "I like tea"}]
    assert closed.json()["__error__"]["error"] == "server_restarted"
    assert runs[0]["run_id"] != run["run_id"]
    assert recovered.json() == state.json()["values"]
    said = [str(m["content"]) for m in state.json()["values"]["messages"]]
    assert said == ["remember I like tea", "I remember: I like tea", "", "1 memories"]
    # The same one item, written again by the step run again (not a second one).
    (first,), (again,) = before, after
    assert [again[k] for k in ("key", "value", "created_at")] == [
        first[k] for k in ("key", "value", "created_at")
    ]
    assert again["updated_at"] > first["updated_at"]
