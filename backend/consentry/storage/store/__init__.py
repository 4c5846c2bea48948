"""The Store's rows (LangGraph's ``BaseStore`` items, each a tenant's): read, written,
refreshed and swept in the caller's transaction (``_rows``). The store itself is
``runtime.store``."""

from __future__ import annotations

from consentry.storage.store._rows import (
    MOST_DIRECT_CONDITIONS,
    ItemRow,
    candidates,
    delete_expired,
    delete_item,
    get_item,
    joined,
    namespaces,
    put_item,
    refresh,
)

__all__ = [
    "MOST_DIRECT_CONDITIONS",
    "ItemRow",
    "candidates",
    "delete_expired",
    "delete_item",
    "get_item",
    "joined",
    "namespaces",
    "put_item",
    "refresh",
]
