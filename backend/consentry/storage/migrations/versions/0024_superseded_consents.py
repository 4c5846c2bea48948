"""A consent pending on a branch of a thread's history that is no longer its head (a fork, a
state update) ends ``superseded``, with its ``consent_superseded`` audit record: the approvals
feed's two partial indexes take that record too.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_ACTIONS = "'consent_requested', 'consent_decided', 'consent_expired', 'consent_cancelled'"
_INDEXES = (
    ("ix_audit_owner_approvals", ["tenant", "user_id", "id"]),
    ("ix_audit_owner_approvals_time", ["tenant", "user_id", "created_at"]),
)


def _recreate(actions: str) -> None:
    predicate = sa.text(f"action IN ({actions})")
    for name, columns in _INDEXES:
        op.drop_index(name, "audit")
        op.create_index(name, "audit", columns, sqlite_where=predicate, postgresql_where=predicate)


def upgrade() -> None:
    _recreate(f"{_ACTIONS}, 'consent_superseded'")


def downgrade() -> None:
    _recreate(_ACTIONS)
