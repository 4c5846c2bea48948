"""The stored data, as the development tools (``consentry_tools``: the benchmark and the kill
trials) and the tests may reach it: the database handle, the tables, the checkpointer and the
Store (``ItemStore``: ``bench.store_calls`` measures its calls), and how a statement runs on the
hot path (``direct``, ``execute_unread``: ``bench.transaction_costs`` measures a transaction).

This is the one seam between the product and those tools (``.importlinter`` holds them to it):
what they read to check the invariants on the stored data, and what they damage on purpose to
prove that the checks catch it. Nothing in the product imports this module.
"""

from __future__ import annotations

from consentry.runtime.store import ItemStore
from consentry.storage.checkpoints import ConsentrySaver
from consentry.storage.db.database import Database, DbConnection, execute_unread, libpq_url
from consentry.storage.db.direct import direct
from consentry.storage.tables import (
    approvals,
    audit,
    effects,
    events,
    idempotency_keys,
    note_versions,
    runs,
    threads,
    transcript,
)

__all__ = [
    "ConsentrySaver",
    "Database",
    "DbConnection",
    "ItemStore",
    "approvals",
    "audit",
    "direct",
    "effects",
    "events",
    "execute_unread",
    "idempotency_keys",
    "libpq_url",
    "note_versions",
    "runs",
    "threads",
    "transcript",
]
