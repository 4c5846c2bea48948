"""Crons (the LangGraph SDK's ``client.crons``): an owner's schedules of runs, each on a thread
or on a new thread every time."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata, owner_columns

__all__ = ["crons"]

_SCHEDULED = sa.text("next_run_at IS NOT NULL")

crons = sa.Table(
    "crons",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    *owner_columns(),
    # The assistant as the client named it (a graph's name or a stored assistant's id).
    sa.Column("assistant_id", sa.String(64), nullable=False),
    # Its thread (deleted with it); None: a new thread for each run (a "stateless" cron).
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=True
    ),
    sa.Column("schedule", sa.String(128), nullable=False),
    sa.Column("timezone", sa.String(64), nullable=True),
    sa.Column("end_time", UTCDateTime, nullable=True),
    # The run each tick starts, as a run request of the SDK (``RunCreate`` as JSON).
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("metadata", sa.JSON(none_as_null=True), nullable=True),
    # A stateless cron's new thread once its run has ended: "delete" or "keep".
    sa.Column("on_run_completed", sa.String(8), nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False),
    # The next tick; None when it has none (disabled, or past its end). A process takes a tick
    # by moving it on (compare-and-set) in the transaction that queues the tick's run.
    sa.Column("next_run_at", UTCDateTime, nullable=True),
    # The run and thread of its latest tick (the next waits while a person has to answer it).
    sa.Column("last_run_id", sa.String(36), nullable=True),
    sa.Column("last_thread_id", sa.String(36), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_crons_owner_created", "tenant", "user_id", "created_at"),
    sa.Index("ix_crons_due", "next_run_at", sqlite_where=_SCHEDULED, postgresql_where=_SCHEDULED),
)
