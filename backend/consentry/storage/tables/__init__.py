"""The app tables (SQLAlchemy Core); the Alembic migrations in ``migrations/`` create them. One
``MetaData`` (``_columns``), the tables by family in private modules; import them from here."""

from __future__ import annotations

from consentry.storage.tables._assistants import assistant_versions, assistants
from consentry.storage.tables._columns import UTCDateTime, metadata
from consentry.storage.tables._consents import (
    approvals,
    audit,
    effects,
    idempotency_keys,
    tenant_usage,
)
from consentry.storage.tables._crons import crons
from consentry.storage.tables._notes import note_versions, notes, projects
from consentry.storage.tables._store import store_items
from consentry.storage.tables._threads import (
    events,
    run_queue,
    runs,
    threads,
    tool_calls,
    transcript,
)
from consentry.storage.tables._webhooks import webhook_deliveries

__all__ = [
    "UTCDateTime",
    "approvals",
    "assistant_versions",
    "assistants",
    "audit",
    "crons",
    "effects",
    "events",
    "idempotency_keys",
    "metadata",
    "note_versions",
    "notes",
    "projects",
    "run_queue",
    "runs",
    "store_items",
    "tenant_usage",
    "threads",
    "tool_calls",
    "transcript",
    "webhook_deliveries",
]
