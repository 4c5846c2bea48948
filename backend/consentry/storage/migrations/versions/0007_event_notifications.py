"""PostgreSQL notifications, delivered at commit, so replicas are woken instead of polling:
every insert into ``events`` notifies ``consentry_events`` with the thread id (a replica following
a run that executes on another one reads the new events), and every new approval notifies
``consentry_consents`` with its deadline in epoch seconds (every replica's expiry sweeper re-plans).
Nothing on SQLite (one process serves a file).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """
        CREATE FUNCTION consentry_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            thread text;
        BEGIN
            FOR thread IN SELECT DISTINCT thread_id FROM new_events LOOP
                PERFORM pg_notify('consentry_events', thread);
            END LOOP;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER events_notify AFTER INSERT ON events "
        "REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT "
        "EXECUTE FUNCTION consentry_notify_events()"
    )

    op.execute(
        """
        CREATE FUNCTION consentry_notify_consents() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('consentry_consents', extract(epoch FROM NEW.expires_at)::text);
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER approvals_notify AFTER INSERT ON approvals "
        "FOR EACH ROW EXECUTE FUNCTION consentry_notify_consents()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS approvals_notify ON approvals")
    op.execute("DROP FUNCTION IF EXISTS consentry_notify_consents()")
    op.execute("DROP TRIGGER IF EXISTS events_notify ON events")
    op.execute("DROP FUNCTION IF EXISTS consentry_notify_events()")
