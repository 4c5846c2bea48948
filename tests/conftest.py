"""Fixtures: a real app on a real SQLite file, reached over in-process ASGI HTTP."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from consentry.app import create_app
from consentry.settings import Settings
from tests.lifespan import running
from tests.live_server import serve_app
from tests.openai_stub import OpenAIStub, serve_openai_stub
from tests.postgres import PostgresCluster, postgres_cluster


class ManualClock:
    """A clock the test moves forward itself (no sleeping to test expiry)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


AppFactory = Callable[..., Any]
NO_SAMPLE_NOTES: dict[str, Any] = {"sample_notes": False}
"""The apps of ``open_client`` and ``open_live`` start with an empty default project, as most tests
expect; ``open_client(sample_notes=True)`` for the first-run experience (test_sample_notes.py)."""


MARKER_OF_FIXTURE = {"postgres": "postgres", "browser": "chromium"}
"""What a test needs beyond Python, told by the fixtures it uses (markers in pytest.ini)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test that uses the ``postgres`` or ``browser`` fixture, even through another
    fixture, so ``-m "not postgres"`` leaves it out (``make test-fast``)."""
    for item in items:
        for fixture, marker in MARKER_OF_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from each test, never from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("CONSENTRY_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster for the whole run (``tests/postgres.py``)."""
    with postgres_cluster() as cluster:
        yield cluster


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'consentry.db'}"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def open_client(db_url: str, clock: ManualClock) -> Callable[..., Any]:
    """``async with open_client(**settings) as client``: a fresh app instance on the same DB."""

    @asynccontextmanager
    async def _open(**overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        settings = Settings(database_url=db_url, **{**NO_SAMPLE_NOTES, **overrides})
        app: FastAPI = create_app(settings, clock=clock)
        async with running(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                client.services = app.state.services  # type: ignore[attr-defined]
                yield client

    return _open


@pytest_asyncio.fixture
async def client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client() as c:
        yield c


@pytest.fixture
def open_live(db_url: str, clock: ManualClock) -> Callable[..., Any]:
    """``async with open_live(**settings) as (client, services)``: a real uvicorn server (real
    HTTP and real concurrency) for a fresh app on the test's database."""

    @asynccontextmanager
    async def _open(**overrides: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
        settings = Settings(database_url=db_url, **{**NO_SAMPLE_NOTES, **overrides})
        app: FastAPI = create_app(settings, clock=clock)
        async with serve_app(app) as base_url:
            limits = httpx.Limits(max_connections=100)
            async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
                yield client, app.state.services

    return _open


@pytest_asyncio.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    """A scripted OpenAI-compatible server on a free port (``tests/openai_stub.py``)."""
    async with serve_openai_stub() as running:
        try:
            yield running
        finally:
            running.release()  # a held request must not keep the stub from stopping
