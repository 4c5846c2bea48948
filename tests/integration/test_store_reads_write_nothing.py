"""A Store read of items that do not expire writes nothing: a ``get`` or a ``search`` is its one
read transaction, and only an item with a time to live makes a read open a write transaction (to
restart it). Before, every read that found items opened an empty write transaction after its
read, whether or not any of them expired (found by ``consentry bench --graph memory_flow``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from consentry.runtime.clock import utc_now
from consentry.runtime.store import ItemStore
from consentry.storage.db.database import Database


class CountingDatabase(Database):
    """The database, counting its read and write transactions."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.opened: list[str] = []

    def read(self, **kwargs: Any) -> AbstractAsyncContextManager[Any]:
        self.opened.append("read")
        return super().read(**kwargs)

    def write(self, **kwargs: Any) -> AbstractAsyncContextManager[Any]:
        self.opened.append("write")
        return super().write(**kwargs)


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[CountingDatabase]:
    db = CountingDatabase(f"sqlite:///{tmp_path / 'store.db'}")
    await db.open()
    await db.migrate()
    yield db
    await db.close()


async def test_reads_of_items_without_a_ttl_open_only_their_read(
    database: CountingDatabase,
) -> None:
    store = ItemStore(db=database, clock=utc_now, index=None, ttl=None).for_tenant("acme")
    await store.aput(("memories", "alice"), "tone", {"text": "brief"})
    database.opened.clear()

    found = await store.asearch(("memories", "alice"), limit=5)
    item = await store.aget(("memories", "alice"), "tone")

    assert [hit.key for hit in found] == ["tone"]
    assert item is not None
    assert database.opened == ["read", "read"]


async def test_a_read_of_an_expiring_item_restarts_its_ttl_in_a_write(
    database: CountingDatabase,
) -> None:
    store = ItemStore(db=database, clock=utc_now, index=None, ttl=None).for_tenant("acme")
    await store.aput(("memories", "alice"), "tone", {"text": "brief"}, ttl=10)
    database.opened.clear()

    await store.asearch(("memories", "alice"), limit=5)
    await store.aget(("memories", "alice"), "tone", refresh_ttl=False)

    assert database.opened == ["read", "write", "read"]
