"""Consent records (proposal hash, edit, comment), thread consent policy, the audit trail and
idempotency keys.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "approvals", sa.Column("proposal_hash", sa.String(80), server_default="", nullable=False)
    )
    op.add_column("approvals", sa.Column("edited", sa.JSON(), nullable=True))
    op.add_column("approvals", sa.Column("comment", sa.Text(), nullable=True))
    op.add_column(
        "threads", sa.Column("consent_policy", sa.String(16), server_default="ask", nullable=False)
    )
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("approval_id", sa.String(64), nullable=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("actor", sa.String(260), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_thread", "audit", ["thread_id", "id"])
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("request_hash", sa.String(80), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.JSON(), nullable=True),
        sa.Column("thread_id", sa.String(36), nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "user_id", "key"),
    )
    op.create_index("ix_idempotency_created", "idempotency_keys", ["created_at"])


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("audit")
    op.drop_column("threads", "consent_policy")
    op.drop_column("approvals", "comment")
    op.drop_column("approvals", "edited")
    op.drop_column("approvals", "proposal_hash")
