"""Every integration test runs on both databases: a SQLite file and a fresh PostgreSQL database
(in the session's throwaway cluster, ``tests/postgres.py``), already migrated: the app's own
start-up migration is then a check that finds nothing to do (migrations are tested on empty
databases in ``tests/system/test_db_upgrade.py`` and ``test_replica_boot.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'consentry.db'}"
    cluster = request.getfixturevalue("postgres")
    url: str = cluster.new_database(migrated=True)
    return url
