"""The webhook outbox (migration 0029): one row per run end to post, written in the transaction
that ends the run, so that a crash between that commit and the POST still delivers it."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata

__all__ = ["webhook_deliveries"]

_PENDING = sa.text("status = 'pending'")
_SETTLED = sa.text("status <> 'pending'")

# No foreign key to the run or its thread: a thread deleted once its run ended (the SDK's
# ``on_completion="delete"``) still has its run's end posted, from what the row keeps.
webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    # The delivery id: ``X-Consentry-Delivery``, the same on every attempt.
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("run_id", sa.String(36), nullable=False),
    sa.Column("thread_id", sa.String(36), nullable=False),
    sa.Column("tenant", sa.String(128), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    # What the body is built from: the run's graph, times, end and metadata, and the thread's
    # values when it ended (``webhooks.WebhookPayload``).
    sa.Column("graph", sa.String(64), nullable=False),
    sa.Column("run_started_at", UTCDateTime, nullable=False),
    sa.Column("run_ended_at", UTCDateTime, nullable=False),
    sa.Column("reason", sa.String(24), nullable=False),
    sa.Column("error_code", sa.String(64), nullable=True),
    sa.Column("metadata", sa.JSON(none_as_null=True), nullable=True),
    sa.Column("run_values", sa.JSON(none_as_null=True), nullable=True),
    # ``pending`` until a 2xx (``delivered``) or the retry window is over (``failed``).
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    # When the next attempt is due; while an attempt is under way (``lease_owner`` set), when
    # its lease expires (a replica killed mid-send leaves it for another once it has).
    sa.Column("next_attempt_at", UTCDateTime, nullable=False),
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("last_error", sa.String(200), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index(
        "ix_webhook_deliveries_due",
        "next_attempt_at",
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    ),
    # The settled rows the expiry sweeper prunes, oldest first.
    sa.Index(
        "ix_webhook_deliveries_settled",
        "updated_at",
        sqlite_where=_SETTLED,
        postgresql_where=_SETTLED,
    ),
)
