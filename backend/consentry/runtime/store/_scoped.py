"""The Store the served graphs are compiled with: it acts for the tenant of the run executing.

LangGraph gives a graph one store (``compile(store=...)``), shared by every run of it; the
graphs are compiled once and serve every tenant. So the store they get reads, at each call, the
tenant the executing task is scoped to (:func:`scoped_to`, set by the run executor around a run;
LangGraph's node tasks, and a sync node's worker thread, inherit it as they inherit the run's
other context). A call outside any run's scope is refused: a graph never reads or writes a store
that is not its run's owner's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from langgraph.store.base import BaseStore, Op, Result

from consentry.runtime.store._item_store import ItemStore

__all__ = ["ScopedStore", "StoreOutOfScopeError", "scoped_to"]

_TENANT: ContextVar[str | None] = ContextVar("consentry_store_tenant", default=None)


class StoreOutOfScopeError(RuntimeError):
    """The served graphs' store was called outside a run."""


@contextmanager
def scoped_to(tenant: str) -> Iterator[None]:
    """The store calls made inside the block (and by the tasks it starts) are ``tenant``'s."""
    token = _TENANT.set(tenant)
    try:
        yield
    finally:
        _TENANT.reset(token)


class ScopedStore(BaseStore):
    supports_ttl = True

    def __init__(self, items: ItemStore) -> None:
        self._items = items
        self.ttl_config = items.ttl

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._items.run_sync(_tenant(), ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._items.run(_tenant(), ops)


def _tenant() -> str:
    tenant = _TENANT.get()
    if tenant is None:
        raise StoreOutOfScopeError(
            "The Store is read and written inside a run: its items are the run owner's tenant's."
        )
    return tenant
