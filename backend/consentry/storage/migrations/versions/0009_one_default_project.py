"""At most one default project per owner (a partial unique index), so two first requests racing
on PostgreSQL cannot both create one.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ux_projects_default",
        "projects",
        ["tenant", "user_id"],
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    )


def downgrade() -> None:
    op.drop_index("ux_projects_default", "projects")
