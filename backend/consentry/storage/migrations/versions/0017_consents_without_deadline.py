"""A consent may have no deadline: a raw ``interrupt()`` waits until it is answered unless
``CONSENTRY_INTERRUPT_TTL_SECONDS`` is set. ``approvals.expires_at`` becomes nullable, and on
PostgreSQL the insert notification (which wakes every replica's expiry sweeper) is sent only for a
consent that has a deadline.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_NOTIFY = """
CREATE OR REPLACE FUNCTION consentry_notify_consents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.expires_at IS NOT NULL THEN
        PERFORM pg_notify('consentry_consents', extract(epoch FROM NEW.expires_at)::text);
    END IF;
    RETURN NULL;
END
$$
"""

_NOTIFY_ALWAYS = """
CREATE OR REPLACE FUNCTION consentry_notify_consents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('consentry_consents', extract(epoch FROM NEW.expires_at)::text);
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.alter_column("expires_at", existing_type=sa.DateTime(timezone=True), nullable=True)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_NOTIFY)


def downgrade() -> None:
    # A consent without a deadline gets a far one (ten years): the old schema needs one.
    postgres = op.get_bind().dialect.name == "postgresql"
    far = "created_at + interval '3650 days'" if postgres else "datetime(created_at, '+3650 days')"
    op.execute(f"UPDATE approvals SET expires_at = {far} WHERE expires_at IS NULL")
    with op.batch_alter_table("approvals") as batch:
        batch.alter_column("expires_at", existing_type=sa.DateTime(timezone=True), nullable=False)
    if postgres:
        op.execute(_NOTIFY_ALWAYS)
