"""A database written by release 0 (LangGraph's ``SqliteSaver`` / ``AsyncPostgresSaver`` kept the
checkpoints) upgrades to Consentry's own checkpointer: the threads paused on a consent resume
from the checkpoint they paused at, and a finished thread takes its next message.

The databases are ``tests/fixtures/release_0/`` (written by that release's own server through
its HTTP API, ``make_fixtures.py``; what each thread holds and should do is in
``manifest.json``): a tutor thread waiting for a note edit's approval, an ``ask_city`` thread
waiting for a raw interrupt's answer, and a tutor thread that finished a conversation.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from consentry.app import create_app
from consentry.settings import Settings
from tests.lifespan import running
from tests.postgres import PostgresCluster
from tests.sse import chat, kinds

FIXTURES = Path(__file__).parents[1] / "fixtures" / "release_0"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
CITY = "city=consentry_graphs.examples.ask_city:graph"


def _release_database(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        copy = tmp_path / "release_0.db"
        shutil.copyfile(FIXTURES / "sqlite.db", copy)
        return f"sqlite:///{copy}"
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    url = cluster.new_database()
    dump = str(FIXTURES / "postgres.sql")
    subprocess.run(
        [f"{cluster.bin_dir}/psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", dump],
        check=True,
        capture_output=True,
    )
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def release(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The release's database (a copy) and what its manifest says of it."""
    kind: str = request.param
    url = _release_database(kind, tmp_path, request)
    threads = {t["name"]: t for t in MANIFEST["databases"][kind]["threads"]}
    return url, threads


def _opener(url: str) -> Callable[[], Any]:
    @asynccontextmanager
    async def _open() -> AsyncIterator[httpx.AsyncClient]:
        settings = Settings(database_url=url, graphs=CITY, sample_notes=False)
        app = create_app(settings)
        async with running(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                client.services = app.state.services  # type: ignore[attr-defined]
                yield client

    return _open


async def _copied(client: httpx.AsyncClient, thread_id: str) -> int:
    query = sa.text("SELECT count(*) FROM graph_checkpoints WHERE thread_id = :t")
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        return int(await conn.scalar(query, {"t": thread_id}))


async def test_threads_paused_under_the_old_checkpointer_resume_after_the_upgrade(
    release: tuple[str, dict[str, Any]],
) -> None:
    url, threads = release
    tutor, city = threads["tutor_paused"], threads["city_paused"]
    finished = threads["tutor_finished"]
    open_app = _opener(url)

    async with open_app() as client:
        # Every checkpoint of the old tables was copied, as it was (the same newest id).
        for thread in (tutor, city, finished):
            assert await _copied(client, thread["thread_id"]) == len(
                thread["checkpoint"]["history_checkpoint_ids"]
            )
            state = (await client.get(f"/threads/{thread['thread_id']}/state")).json()
            assert (
                state["checkpoint"]["checkpoint_id"] == thread["checkpoint"]["newest_checkpoint_id"]
            ), state
        waiting = (await client.get(f"/v1/threads/{tutor['thread_id']}")).json()
        assert [c["approval_id"] for c in waiting["pending_consents"]] == [
            p["approval_id"] for p in tutor["pending"]
        ]

        approved = await chat(client, tutor["resume"]["request"])
        answered = await chat(client, city["resume"]["request"])

        expected = tutor["resume"]["expect"]
        assert kinds(approved) == expected["events"]
        assert approved[-1].reason == expected["final_reason"]  # type: ignore[union-attr]
        note = expected["note"]
        versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
        assert [v["version"] for v in versions][-1] == note["version"]
        current = (await client.get(f"/v1/notes/{note['note_id']}")).json()
        assert current["content"] == note["content"]

        assert kinds(answered) == city["resume"]["expect"]["events"]
        said = [e.content for e in answered if e.type == "message"]  # type: ignore[union-attr]
        assert said == [city["resume"]["expect"]["message"]]

        follow_up = await chat(
            client, {"thread_id": finished["thread_id"], "message": "What is a syllabary?"}
        )
        assert follow_up[-1].reason == "completed"  # type: ignore[union-attr]
        state = (await client.get(f"/threads/{finished['thread_id']}/state")).json()
        assert len(state["values"]["messages"]) == finished["checkpoint"]["state_message_count"] + 2
        # The old saver's checkpoints are the thread's history; the resume adds its turn.
        kept = await _copied(client, tutor["thread_id"])
        assert kept == len(tutor["checkpoint"]["history_checkpoint_ids"]) + 1

    # A second start copies nothing again (the copy is recorded), and loses nothing.
    async with open_app() as client:
        assert await _copied(client, tutor["thread_id"]) == kept
        done = (await client.get(f"/v1/threads/{tutor['thread_id']}")).json()
        assert done["status"] == "idle"
        assert done["pending_consents"] == []
