"""The Store: LangGraph's ``BaseStore`` on Consentry's database, one tenant's items at a time.

:class:`ItemStore` runs a batch of LangGraph's store operations (``GetOp``, ``PutOp``,
``SearchOp``, ``ListNamespacesOp``) for one tenant; :meth:`ItemStore.for_tenant` is that
tenant's ``BaseStore`` (what the ``/store`` routes use), and ``_scoped.ScopedStore`` the one the
served graphs are compiled with (it acts for the tenant of the run executing).

- **One transaction per batch.** A batch with a put runs in one write transaction, in order
  (a get after a put in the same batch sees it: LangGraph's own stores read the state before
  the batch); a batch of reads in one read transaction, and a read that refreshes a time to
  live writes the new expiries after it, for the items not written since.
- **Embeddings before the transaction.** A put's indexed texts (``index``: the configured fields,
  its own list, or ``False`` for none) and a search's ``query`` are embedded before the database
  is touched, so a slow embeddings server never holds a write transaction.
- **Search** filters in SQL by the filter's plain ``key: scalar`` conditions (the same JSON type
  and value) and pages there when nothing else is asked; operators (``$gt``...; an unknown one is
  refused), nested values and a ``query`` are applied to the prefix's matching items in a worker
  thread (off the loop), ranked by the best cosine similarity of the item's embeddings to the
  query's (items without one come after).
- **Time to live** in minutes, per item (``ttl``), refreshed by reads unless they say
  ``refresh_ttl=False``; an expired item is never read, and the expiry sweeper deletes it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from consentry.runtime.store._matching import (
    check_filter,
    cosine,
    matches_conditions,
    matches_filter,
    scalar_equalities,
)
from consentry.storage import store as _rows
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.store import ItemRow

__all__ = ["MAX_DEPTH", "MAX_KEY", "MAX_LABEL", "ItemStore", "StoreIndex", "TenantStore"]

MAX_DEPTH, MAX_LABEL, MAX_KEY = 32, 256, 1024
"""A namespace's labels and their length, a key's length (the ``/store`` routes' limits)."""
SYNC_CALL_SECONDS = 300.0
"""How long a sync node's call waits for the loop (a loop that never runs it: an error)."""


@dataclass(frozen=True)
class StoreIndex:
    """Semantic search: the embeddings model and the value fields embedded by default (``$``:
    the whole value as JSON; ``a.b``, ``a[*].b``... as LangGraph's ``IndexConfig`` names them)."""

    embeddings: Embeddings
    fields: Sequence[str] = field(default=("$",))


class ItemStore:
    def __init__(
        self,
        *,
        db: Database,
        clock: Callable[[], datetime],
        index: StoreIndex | None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self.index = index
        self.ttl = ttl
        try:  # the server's loop: where a sync node's calls are run
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # made outside a loop: its first batch's
            self._loop = None

    def for_tenant(self, tenant: str) -> TenantStore:
        """The tenant's items as a LangGraph ``BaseStore``."""
        return TenantStore(self, tenant)

    def run_sync(self, tenant: str, ops: Iterable[Op]) -> list[Result]:
        """:meth:`run` from a thread that is not the server's loop (a sync node's worker)."""
        loop = self._loop
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if loop is None or current is loop:
            raise RuntimeError(
                "The Store's synchronous methods are for sync nodes (run in a worker thread); "
                "in an async node, await its async methods (aget, aput, asearch...)."
            )
        future = asyncio.run_coroutine_threadsafe(self.run(tenant, ops), loop)
        try:
            return future.result(timeout=SYNC_CALL_SECONDS)
        except TimeoutError:
            future.cancel()
            raise

    async def run(self, tenant: str, ops: Iterable[Op]) -> list[Result]:
        """Run the batch for ``tenant``: one result per operation, in order."""
        self._loop = self._loop or asyncio.get_running_loop()
        batch = list(ops)
        for op in batch:
            _check(op)
        vectors = await self._embedded(batch)
        results: list[Result] = [None] * len(batch)
        refreshed: list[ItemRow] = []
        writes = any(isinstance(op, PutOp) for op in batch)
        async with self._db.write() if writes else self._db.read() as conn:
            for index, op in enumerate(batch):
                results[index] = await self._one(conn, tenant, op, vectors.get(index), refreshed)
                if writes and refreshed:  # before a later put of this batch replaces the item
                    await _rows.refresh(conn, tenant, refreshed, self._clock())
                    refreshed.clear()
        if refreshed:  # the items as read: one replaced since keeps its new expiry
            async with self._db.write() as conn:
                await _rows.refresh(conn, tenant, refreshed, self._clock())
        return results

    async def _one(
        self,
        conn: DbConnection,
        tenant: str,
        op: Op,
        vectors: list[list[float]] | None,
        refreshed: list[ItemRow],
    ) -> Result:
        now = self._clock()
        if isinstance(op, GetOp):
            found = await _rows.get_item(conn, tenant, op.namespace, op.key, now=now)
            if found is not None and found.ttl_minutes and self._refreshes(op.refresh_ttl):
                refreshed.append(found)
            if found is None:
                return None
            return Item(**_fields(found))
        if isinstance(op, PutOp):
            if op.value is None:
                await _rows.delete_item(conn, tenant, op.namespace, op.key)
            else:
                await _rows.put_item(
                    conn,
                    tenant,
                    op.namespace,
                    op.key,
                    value=op.value,
                    vectors=vectors,
                    ttl_minutes=op.ttl,
                    now=now,
                )
            return None
        if isinstance(op, SearchOp):
            return await self._search(conn, tenant, op, vectors, refreshed)
        if isinstance(op, ListNamespacesOp):
            return await _namespaces(conn, tenant, op, now)
        raise ValueError(f"Unknown store operation: {type(op).__name__}")

    async def _search(
        self,
        conn: DbConnection,
        tenant: str,
        op: SearchOp,
        query: list[list[float]] | None,
        refreshed: list[ItemRow],
    ) -> list[SearchItem]:
        equals = scalar_equalities(op.filter)
        in_sql = len(equals) == len(op.filter or {}) and query is None
        rows = await _rows.candidates(
            conn,
            tenant,
            op.namespace_prefix,
            equals=equals,
            now=self._clock(),
            limit=op.limit if in_sql else None,
            offset=op.offset,
        )
        scored: list[tuple[float | None, ItemRow]]
        if in_sql:
            scored = [(None, row) for row in rows]
        else:  # the prefix's items, filtered and ranked off the loop's thread
            scored = await asyncio.to_thread(_filtered, rows, op.filter, query)
            scored = scored[op.offset : op.offset + op.limit]
        if self._refreshes(op.refresh_ttl):
            refreshed.extend(row for _, row in scored if row.ttl_minutes)
        return [_item(row, score=score) for score, row in scored]

    def _refreshes(self, asked: bool | None) -> bool:
        if asked is not None:
            return asked
        return (self.ttl or {}).get("refresh_on_read", True)

    async def _embedded(self, batch: Sequence[Op]) -> dict[int, list[list[float]] | None]:
        """Each put's vectors and each search's query vector, by the operation's position."""
        if self.index is None:
            return {}
        embeddings = self.index.embeddings
        vectors: dict[int, list[list[float]] | None] = {}
        for position, op in enumerate(batch):
            if isinstance(op, PutOp) and op.value is not None and op.index is not False:
                fields = self.index.fields if op.index is None else op.index
                texts = _texts(op.value, fields)
                vectors[position] = await embeddings.aembed_documents(texts) if texts else None
            elif isinstance(op, SearchOp) and op.query:
                vectors[position] = [await embeddings.aembed_query(op.query)]
        return vectors


class TenantStore(BaseStore):
    """One tenant's items (``ItemStore.for_tenant``)."""

    supports_ttl = True

    def __init__(self, items: ItemStore, tenant: str) -> None:
        self._items = items
        self._tenant = tenant
        self.ttl_config = items.ttl

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._items.run_sync(self._tenant, ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._items.run(self._tenant, ops)


def _check(op: Op) -> None:
    """What LangGraph's stores check of an operation, and Consentry's limits of a put (those of
    the ``/store`` routes, so that every item can be read and deleted over HTTP)."""
    validate_op_namespace(op)
    if isinstance(op, SearchOp):
        check_filter(op.filter)
    if not isinstance(op, PutOp):
        return
    if not op.namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if op.value is None:  # a delete: nothing to keep within limits
        return
    if op.namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
        )
    if len(op.namespace) > MAX_DEPTH or any(len(label) > MAX_LABEL for label in op.namespace):
        raise InvalidNamespaceError(
            f"A namespace has at most {MAX_DEPTH} labels of at most {MAX_LABEL} characters."
        )
    if not 0 < len(op.key) <= MAX_KEY:
        raise ValueError(f"An item's key has 1 to {MAX_KEY} characters.")
    if not isinstance(op.value, Mapping):
        raise ValueError(f"An item's value is a dict, not {type(op.value).__name__}.")


def _texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    texts: list[str] = []
    for path in fields:
        if path == "$":
            texts.append(json.dumps(value, sort_keys=True, ensure_ascii=False))
        else:
            texts.extend(get_text_at_path(value, tokenize_path(path)))
    return [text for text in texts if text]


def _filtered(
    rows: list[ItemRow], filter: Mapping[str, Any] | None, query: list[list[float]] | None
) -> list[tuple[float | None, ItemRow]]:
    """The rows that meet ``filter``, ranked by their best similarity to ``query`` (those
    without an embedding after) when one is given."""
    kept = [row for row in rows if matches_filter(row.value, filter)]
    if not query:
        return [(None, row) for row in kept]
    scored = [(max(cosine(query[0], v) for v in row.vectors), row) for row in kept if row.vectors]
    scored.sort(key=lambda pair: pair[0], reverse=True)
    unscored: list[tuple[float | None, ItemRow]] = [(None, r) for r in kept if not r.vectors]
    return [*scored, *unscored]


async def _namespaces(
    conn: DbConnection, tenant: str, op: ListNamespacesOp, now: datetime
) -> list[tuple[str, ...]]:
    literal: tuple[str, ...] = ()
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            path = tuple(condition.path)
            literal = path[: path.index("*")] if "*" in path else path
            break
    found = await _rows.namespaces(conn, tenant, literal, now=now)
    kept: dict[tuple[str, ...], None] = {}
    for namespace in found:
        if matches_conditions(namespace, op.match_conditions):
            cut = namespace[: op.max_depth] if op.max_depth is not None else namespace
            kept.setdefault(cut, None)
    listed = sorted(kept)
    return listed[op.offset : op.offset + op.limit]


def _fields(row: ItemRow) -> dict[str, Any]:
    """What LangGraph's ``Item`` holds of a row."""
    return {
        "namespace": row.namespace,
        "key": row.key,
        "value": row.value,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def _item(row: ItemRow, *, score: float | None = None) -> SearchItem:
    return SearchItem(**_fields(row), score=score)
