"""Indexes for the approvals inbox (owner, newest first) and the expiry sweeper (pending by
deadline).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_approvals_owner_created", "approvals", ["tenant", "user_id", "created_at"])
    op.create_index("ix_approvals_status_expires", "approvals", ["status", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_approvals_status_expires", "approvals")
    op.drop_index("ix_approvals_owner_created", "approvals")
