"""A throwaway PostgreSQL cluster for the tests (``../shared/NOTES.md``).

``initdb``/``pg_ctl`` refuse to run as root, so as root they run as the ``postgres`` user. The
cluster listens on 127.0.0.1 at a free port, without fsync (its data dies with the tests), and
is stopped with ``-m immediate``. Each test gets its own database, made from ``template1``
(empty) or, for the integration tests' ``db_url``, from a database an app already migrated.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from itertools import count
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.schema import CreateIndex, CreateTable

from consentry.storage.db.database import Database

__all__ = ["PostgresCluster", "postgres_cluster"]


def _bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed (apt-get install -y postgresql); the tests need it"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PostgresCluster:
    bin_dir: str
    data_dir: str
    port: int
    as_user: list[str]
    _names: Iterator[int]
    _template: str | None = None
    synchronous_commit: bool = False
    """On: a commit is in the server's files when it returns, so an immediate stop (or
    restart) keeps every acknowledged commit (chaos restart trials). Off: faster."""

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, *, migrated: bool = False) -> str:
        """A fresh database; its URL. Empty, or ``migrated``: a copy of a database an app has
        already started on once (schema and checkpointer tables, no rows of its own), which
        saves each test the migrations (about 0.35 s on PostgreSQL)."""
        name = f"test_{next(self._names)}"
        template = f' TEMPLATE "{self._migrated_template()}"' if migrated else ""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{template}')
        return self.url(name)

    def _migrated_template(self) -> str:
        if self._template is None:
            name = f"template_{os.getpid()}"
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            # An app's start-up migrates it; in a thread of its own, with its own event loop
            # (a test's loop may be running).
            started = threading.Thread(target=asyncio.run, args=(_start_once(self.url(name)),))
            started.start()
            started.join()
            # A connection a stopping app abandoned mid-connect (a background loop cancelled at
            # shutdown) closes only when collected; a template must have no session at all.
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
            self._template = name
        return self._template

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_user, f"{self.bin_dir}/pg_ctl", "-D", self.data_dir, *args],
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {os.path.dirname(self.data_dir)} "
            f"-c fsync=off -c synchronous_commit={'on' if self.synchronous_commit else 'off'} "
            "-c full_page_writes=off "
            "-c max_connections=300"
        )
        log = os.path.join(os.path.dirname(self.data_dir), "log")
        self.pg_ctl("-l", log, "-w", "-o", options, "start")

    def stop(self, mode: str = "immediate") -> None:
        """``immediate`` drops what the cluster did not flush (it runs without fsync and with
        asynchronous commits); ``fast`` shuts down cleanly and keeps every commit."""
        self.pg_ctl("-m", mode, "-w", "stop")


async def _start_once(url: str) -> None:
    from consentry.app import create_app
    from consentry.settings import Settings
    from tests.lifespan import running

    async with running(create_app(Settings(database_url=url))):
        pass


@contextmanager
def postgres_cluster(*, synchronous_commit: bool = False) -> Iterator[PostgresCluster]:
    bin_dir = _bin_dir()
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    base = tempfile.mkdtemp(prefix="consentry-pg-")
    if as_user:
        shutil.chown(base, "postgres", "postgres")
    data_dir = os.path.join(base, "data")
    initdb = [f"{bin_dir}/initdb", "-D", data_dir, "-U", "postgres", "-A", "trust", "-E", "UTF8"]
    subprocess.run(
        [*as_user, *initdb, "--no-sync"],
        check=True,
        capture_output=True,
    )
    cluster = PostgresCluster(
        bin_dir, data_dir, _free_port(), as_user, count(1), synchronous_commit=synchronous_commit
    )
    cluster.start()
    try:
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            # A database per test adds up to gigabytes: deleting them took a worker 20 to 30 s
            # at the end of the suite. A detached `rm` does it while pytest exits: the shell
            # puts it in the background and returns at once, so no child is left unwaited.
            subprocess.run(
                ["sh", "-c", 'rm -rf "$1" &', "sh", base],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )


async def create_tables(conn: Any, metadata: sa.MetaData) -> None:
    """``metadata.create_all`` in a transaction of ``Database.write()`` on either database
    (PostgreSQL's connections run SQL, not SQLAlchemy's DDL execution)."""
    if hasattr(conn, "run_sync"):
        await conn.run_sync(metadata.create_all)
        return
    for table in metadata.sorted_tables:
        await conn.exec_driver_sql(str(CreateTable(table).compile(dialect=conn.dialect)))
        for index in table.indexes:
            await conn.exec_driver_sql(str(CreateIndex(index).compile(dialect=conn.dialect)))


@asynccontextmanager
async def opened_with_tables(url: str, metadata: sa.MetaData) -> AsyncIterator[Database]:
    """A :class:`Database` on ``url`` (either database), opened, with ``metadata``'s tables made;
    closed after."""
    database = Database(url)
    await database.open()
    async with database.write() as conn:
        await create_tables(conn, metadata)
    try:
        yield database
    finally:
        await database.close()
