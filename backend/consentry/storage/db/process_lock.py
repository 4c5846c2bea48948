"""One server process per SQLite file.

SQLite serializes writers, but Consentry's start-up recovery closes every run the database says is
running: with two processes on one file it would close the other one's live runs. So a server
holds an exclusive ``flock`` on ``<database>.lock`` for as long as it runs; the lock dies with the
process, however it ends (SIGKILL included). Several replicas need PostgreSQL.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DatabaseInUseError", "serving_lock"]


class DatabaseInUseError(RuntimeError):
    """Another Consentry process is serving this SQLite file."""


@contextmanager
def serving_lock(database: Path | None) -> Iterator[None]:
    """Hold the SQLite file for this process; on PostgreSQL (``None``) there is nothing to hold:
    replicas share the database, and leases keep their runs apart. The file's folder must exist
    (``database_check`` creates it under ``data/`` only, and refuses it elsewhere)."""
    if database is None:
        yield
        return
    lock_path = database.with_name(f"{database.name}.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DatabaseInUseError(
                f"another Consentry process is serving {database}; a SQLite database is served "
                "by one process at a time (stop the other one, or use another file)"
            ) from None
        yield
    finally:
        os.close(fd)
