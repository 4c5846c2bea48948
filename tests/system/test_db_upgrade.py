"""``consentry db upgrade`` migrates a database explicitly; a server told not to migrate
(``CONSENTRY_RUN_MIGRATIONS=false``) refuses to start on a database that is not current, with a
message that says what to run, and serves once it is."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg

from consentry.storage.db.database import head_revision
from tests.postgres import PostgresCluster
from tests.system.server import serve


def _consentry(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "consentry.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_db_upgrade_migrates_and_a_server_that_does_not_migrate_needs_it(
    postgres: PostgresCluster,
) -> None:
    database_url = postgres.new_database()
    env = {"CONSENTRY_DATABASE_URL": database_url, "CONSENTRY_RUN_MIGRATIONS": "false"}

    refused = _consentry("serve", "--port", "0", env=env)
    upgraded = _consentry("db", "upgrade", env=env)
    again = _consentry("db", "upgrade", env=env)

    assert refused.returncode != 0
    assert "consentry db upgrade" in refused.stdout + refused.stderr
    assert (upgraded.returncode, upgraded.stdout.strip()) == (0, "database is up to date")
    assert (again.returncode, again.stdout.strip()) == (0, "database is up to date")
    with psycopg.connect(database_url) as conn:
        versions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    assert versions == [(head_revision(),)]
    with serve(database_url, env={"CONSENTRY_RUN_MIGRATIONS": "false"}) as base_url:
        projects = httpx.get(f"{base_url}/v1/projects", timeout=10)
    assert projects.status_code == 200


def test_db_upgrade_migrates_a_sqlite_file_too(tmp_path: Path) -> None:
    database = tmp_path / "consentry.db"

    upgraded = _consentry("db", "upgrade", env={"CONSENTRY_DATABASE_URL": f"sqlite:///{database}"})

    assert upgraded.returncode == 0, upgraded.stderr
    with sqlite3.connect(database) as conn:
        versions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    assert versions == [(head_revision(),)]
