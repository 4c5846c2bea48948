"""A heartbeat that cannot renew its leases for two thirds of the lease (the database away, its
disk full, its file locked) stops the runs where another replica could take them over
(PostgreSQL), and not where no other process can (SQLite, one process on the file): there a run
goes on through its database's trouble instead of being left for the next start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import sqlalchemy as sa

from consentry.runtime.replicas import LeaseKeeper
from consentry.runtime.replicas import _leases as lease_module
from consentry.storage.db.database import Database, DbConnection
from tests.conftest import ManualClock

LEASE_SECONDS = 30.0


async def test_runs_stop_for_failed_renewals_only_where_another_replica_could_take_them(
    db_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(db_url)
    await db.open()
    lost: list[set[str]] = []
    keeper = LeaseKeeper(db=db, clock=clock, lease_seconds=LEASE_SECONDS, on_lost=lost.append)

    @asynccontextmanager
    async def disk_full() -> AsyncIterator[DbConnection]:
        raise sa.exc.OperationalError("UPDATE threads", None, Exception("database or disk is full"))
        yield  # (never reached: an async generator)

    try:
        keeper.track("run-1")
        monkeypatch.setattr(db, "lease_write", disk_full)
        renewed_at = lease_module.monotonic()
        monkeypatch.setattr(lease_module, "monotonic", lambda: renewed_at + LEASE_SECONDS)
        await keeper.renew()
    finally:
        await keeper.stop()
        await db.close()

    assert lost == ([{"run-1"}] if db.is_postgres else [])
