"""The approvals feed (``GET /v1/approvals/stream``) reads an owner's approval changes from the
audit trail: after a cursor, and (PostgreSQL) those of the last seconds again. Two partial indexes
on the consent records only.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_CONSENT_RECORDS = sa.text(
    "action IN ('consent_requested', 'consent_decided', 'consent_expired', 'consent_cancelled')"
)


def upgrade() -> None:
    for name, columns in (
        ("ix_audit_owner_approvals", ["tenant", "user_id", "id"]),
        ("ix_audit_owner_approvals_time", ["tenant", "user_id", "created_at"]),
    ):
        op.create_index(
            name,
            "audit",
            columns,
            sqlite_where=_CONSENT_RECORDS,
            postgresql_where=_CONSENT_RECORDS,
        )


def downgrade() -> None:
    op.drop_index("ix_audit_owner_approvals_time", "audit")
    op.drop_index("ix_audit_owner_approvals", "audit")
