"""PostgreSQL restarted under a running server: requests in flight fail with 503
``database_unavailable`` (never a 500, nothing half-written), and the server serves again by
itself once the database is back. A cluster of its own, so no other test sees the outage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from consentry.app import create_app
from consentry.settings import Settings
from tests.lifespan import running
from tests.postgres import PostgresCluster, postgres_cluster
from tests.sse import kinds, parse_events

pytestmark = pytest.mark.postgres  # a cluster of its own, not the `postgres` fixture's

WAIT_SECONDS = 30.0


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as running:
        yield running


@pytest_asyncio.fixture
async def client(cluster: PostgresCluster) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=cluster.new_database(), sample_notes=False))
    async with running(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http


async def _until_served(client: httpx.AsyncClient) -> httpx.Response:
    """Once the database is back, the same request succeeds without restarting anything."""
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            response = await client.get("/v1/projects")
            if response.status_code == 200:
                return response
            assert response.status_code == 503, response.text
            await asyncio.sleep(0.2)


async def test_requests_during_a_database_restart_get_503_and_service_resumes_by_itself(
    client: httpx.AsyncClient, cluster: PostgresCluster
) -> None:
    project_id = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
    note = await client.post(
        f"/v1/projects/{project_id}/notes", json={"title": "RAG", "content": "Retrieval."}
    )
    assert note.status_code == 201

    await asyncio.to_thread(cluster.stop, "fast")  # a restart, as an operator does it
    try:
        created = await client.post(
            f"/v1/projects/{project_id}/notes", json={"title": "Lost", "content": "Never stored."}
        )
        chat = await client.post("/v1/chat", json={"message": "What is retrieval?"})
        listed = await client.get(f"/v1/projects/{project_id}/notes")
    finally:
        await asyncio.to_thread(cluster.start)

    for response in (created, chat, listed):
        assert response.status_code == 503, response.text
        assert response.json()["error"]["code"] == "database_unavailable"
        assert response.headers["Retry-After"] == "2"
    await _until_served(client)
    listed_after = await client.get(f"/v1/projects/{project_id}/notes")
    assert listed_after.status_code == 200, listed_after.text
    notes = listed_after.json()["notes"]
    assert [n["title"] for n in notes] == ["RAG"]  # nothing half-written
    answered = parse_events(
        (await client.post("/v1/chat", json={"message": "What is retrieval?"})).text
    )
    assert kinds(answered)[-1] == "final"
    assert answered[-1].reason == "completed"  # type: ignore[union-attr]
