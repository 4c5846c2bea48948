"""Whether ``CONSENTRY_DATABASE_URL`` can be served, said in one sentence before anything starts.

``consentry serve`` and ``consentry db upgrade`` call :func:`check_database` first, so that a
database that cannot be used is one line naming the setting and what to do (exit code 2), not a
traceback from the middle of start-up:

- SQLite: the file's folder must exist, be a folder and be writable, and an existing file must be
  a SQLite database. A missing folder is created only under ``data/`` of the current directory
  (where the default database lives), and the start-up line says so; anywhere else it is refused,
  since a typo in a path would otherwise create a new empty database beside the real one.
- PostgreSQL: one connection is opened (with a short timeout) and closed; the refusal names the
  server and database (never the password) and libpq's reason.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psycopg

from consentry.storage.db.database import libpq_url

__all__ = ["DATA_FOLDER", "DatabaseCheck", "DatabaseSettingError", "check_database"]

DATA_FOLDER = Path("data")
"""Where the default database lives (relative to the current directory): a missing folder under
it is created; anywhere else a missing folder is refused."""
CONNECT_TIMEOUT_SECONDS = 5
_SETTING = "CONSENTRY_DATABASE_URL"


class DatabaseSettingError(ValueError):
    """The database cannot be served; the message is one sentence naming the setting and the
    fix."""


@dataclass(frozen=True)
class DatabaseCheck:
    """What the check found: how to name the database to a person, and whether its folder was
    created for it."""

    described: str
    """``SQLite data/consentry.db`` or ``PostgreSQL consentry on db.internal:5432``."""
    created_folder: Path | None = None


def check_database(url: str, *, sqlite_path: Path | None) -> DatabaseCheck:
    """Check the database of ``url`` (``sqlite_path``: its file, or None on PostgreSQL);
    :class:`DatabaseSettingError` says what is wrong. Blocking: for a command before its event
    loop starts."""
    if sqlite_path is not None:
        return _check_sqlite(sqlite_path)
    return _check_postgres(url)


def _check_sqlite(path: Path) -> DatabaseCheck:
    described = f"SQLite {path}"
    folder = path.parent
    created = None
    if not folder.is_dir():
        blocker = _first_existing(folder)
        if not blocker.is_dir():
            raise DatabaseSettingError(
                f"{_SETTING}: {blocker} is a file, not a folder, so {path} cannot be created "
                "there; choose a path in a folder"
            )
        if not _under(folder, DATA_FOLDER):
            raise DatabaseSettingError(
                f"{_SETTING}: the folder {folder} does not exist; create it (mkdir -p {folder}) "
                f"or choose a file in a folder that exists (only folders under {DATA_FOLDER}/ "
                "are created for you)"
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseSettingError(
                f"{_SETTING}: cannot create the folder {folder}: {exc.strerror}"
            ) from None
        created = folder
    if path.is_dir():
        raise DatabaseSettingError(f"{_SETTING}: {path} is a folder; name a file in it")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabaseSettingError(
            f"{_SETTING}: cannot write in the folder {folder} (permission denied); choose a "
            "folder this user can write in"
        )
    if path.exists():
        _require_sqlite_file(path)
    return DatabaseCheck(described, created)


def _require_sqlite_file(path: Path) -> None:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
            connection.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DatabaseSettingError(
            f"{_SETTING}: {path} cannot be opened as a SQLite database ({exc}); point the "
            "setting at a Consentry database, or at a new file"
        ) from None


def _first_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _under(folder: Path, root: Path) -> bool:
    return folder.resolve().is_relative_to(root.resolve())


def _check_postgres(url: str) -> DatabaseCheck:
    conninfo = libpq_url(url)
    try:
        where = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise DatabaseSettingError(
            f"{_SETTING} is not a PostgreSQL URL libpq accepts: {exc}"
        ) from None
    server = f"{where.get('host') or 'localhost'}:{where.get('port') or 5432}"
    database = where.get("dbname") or where.get("user")
    described = f"PostgreSQL {database} on {server}" if database else f"PostgreSQL on {server}"
    try:
        connection = psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT_SECONDS)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DatabaseSettingError(
            f"{_SETTING}: cannot connect to {described}: {reason}. Start the server, or fix the "
            "URL (postgresql://user:password@host:5432/database)"
        ) from None
    connection.close()
    return DatabaseCheck(described)
