"""The database a chaos run fills: a new SQLite file, or a PostgreSQL database that is empty.
Given a PostgreSQL URL of a database with tables, or of ``postgres`` (the maintenance database),
the run creates ``consentry_chaos_<time>_<pid>`` on that server (its user needs ``CREATEDB``) and
drops it after a run that found nothing."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from consentry.stored import libpq_url
from consentry_tools.chaos.options import ChaosOptions

__all__ = ["ChaosDatabase", "DatabaseSetupError", "prepare_database"]

MAINTENANCE_DATABASES = frozenset({"postgres", "template1"})
"""Databases a URL names to reach a server: the run creates its own next to them."""


class DatabaseSetupError(RuntimeError):
    """The given database cannot be used; the message says why."""


@dataclass(frozen=True)
class ChaosDatabase:
    url: str
    created: str | None = None
    """The PostgreSQL database this run created (dropped after a clean run), if any."""
    admin_url: str | None = None

    async def drop(self) -> None:
        if self.created is None or self.admin_url is None:
            return
        async with await psycopg.AsyncConnection.connect(self.admin_url, autocommit=True) as conn:
            await conn.execute(f'DROP DATABASE IF EXISTS "{self.created}" WITH (FORCE)')


async def prepare_database(options: ChaosOptions, folder: Path) -> ChaosDatabase:
    """``folder``: where a new SQLite file goes, unless the options name one."""
    if options.database == "sqlite":
        url = options.database_url or f"sqlite:///{folder / 'consentry.db'}"
        if not url.startswith("sqlite:///"):
            raise DatabaseSetupError(f"--database sqlite needs a sqlite:/// URL, not {url!r}")
        if await asyncio.to_thread(Path(url.removeprefix("sqlite:///")).exists):
            raise DatabaseSetupError(f"{url} exists already: give a new file")
        return ChaosDatabase(url)
    if not options.database_url:
        raise DatabaseSetupError("--database postgres needs --database-url postgresql://…")
    given = libpq_url(options.database_url)
    try:
        async with await psycopg.AsyncConnection.connect(given, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
            )
            row = await cursor.fetchone()
            maintenance = make_url(given).database in MAINTENANCE_DATABASES
            if row is not None and row[0] == 0 and not maintenance:
                return ChaosDatabase(given)
            name = f"consentry_chaos_{int(time.time())}_{os.getpid()}"
            await conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise DatabaseSetupError(f"cannot prepare a database at {_safe(given)}: {exc}") from exc
    url = make_url(given).set(database=name).render_as_string(hide_password=False)
    return ChaosDatabase(url, created=name, admin_url=given)


def _safe(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)
