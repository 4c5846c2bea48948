"""The Store: LangGraph's ``BaseStore`` (cross-thread memory) on Consentry's database, each
tenant's items apart.

:class:`ItemStore` runs LangGraph's store operations for one tenant (``_item_store``, over the
rows of ``storage.store`` and the comparisons of ``_matching``); :class:`TenantStore` is one
tenant's ``BaseStore`` (the ``/store`` routes'), :class:`ScopedStore` the one the served graphs
are compiled with, acting for the tenant :func:`scoped_to` names (``_scoped``: the run's
owner's).
"""

from __future__ import annotations

from consentry.runtime.store._item_store import ItemStore, StoreIndex, TenantStore
from consentry.runtime.store._matching import InvalidFilterError
from consentry.runtime.store._scoped import ScopedStore, StoreOutOfScopeError, scoped_to

__all__ = [
    "InvalidFilterError",
    "ItemStore",
    "ScopedStore",
    "StoreIndex",
    "StoreOutOfScopeError",
    "TenantStore",
    "scoped_to",
]
