"""Every integration test runs on both databases: a SQLite file and a fresh PostgreSQL database
(in the session's throwaway cluster, ``tests/postgres.py``), already migrated: the app's own
start-up migration is then a check that finds nothing to do (migrations are tested on empty
databases in ``tests/system/test_db_upgrade.py`` and ``test_replica_boot.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.integration import gate_graph


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'consentry.db'}"
    cluster = request.getfixturevalue("postgres")
    url: str = cluster.new_database(migrated=True)
    return url


@pytest_asyncio.fixture
async def gate() -> AsyncIterator[asyncio.Event]:
    """The gate ``gate_graph``'s runs wait at, closed; opened at the end, so no run stays
    held."""
    gate_graph.GATE, gate_graph.REACHED = asyncio.Event(), asyncio.Event()
    yield gate_graph.GATE
    gate_graph.GATE.set()
