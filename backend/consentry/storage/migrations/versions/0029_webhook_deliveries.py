"""Webhooks (the LangGraph SDK's ``webhook=`` on a run): the URL a run posts its record to when
it ends (``runs.webhook``), and the outbox of those posts (``webhook_deliveries``), written in the
transaction that ends the run.

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 'pending'")
_SETTLED = sa.text("status <> 'pending'")


def upgrade() -> None:
    op.add_column("runs", sa.Column("webhook", sa.Text, nullable=True))
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("graph", sa.String(64), nullable=False),
        sa.Column("run_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_ended_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.String(24), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("metadata", sa.JSON, nullable=True),
        sa.Column("run_values", sa.JSON, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("last_error", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["next_attempt_at"],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_index(
        "ix_webhook_deliveries_settled",
        "webhook_deliveries",
        ["updated_at"],
        sqlite_where=_SETTLED,
        postgresql_where=_SETTLED,
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_settled", "webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", "webhook_deliveries")
    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("webhook")
