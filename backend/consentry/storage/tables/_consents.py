"""Consents and what guards them: approvals, applied effects, the audit trail, idempotency keys,
tenants' token usage."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata, owner_columns

__all__ = ["approvals", "audit", "effects", "idempotency_keys", "tenant_usage"]

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("run_id", sa.String(36), nullable=False),
    *owner_columns(),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("event", sa.JSON, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=True),  # None: no deadline
    sa.Column("decided_at", UTCDateTime, nullable=True),
    sa.Column("decided_by", sa.String(260), nullable=True),
    sa.Column("decision", sa.JSON, nullable=True),
    sa.Column("proposal_hash", sa.String(80), nullable=False, server_default=""),
    sa.Column("edited", sa.JSON, nullable=True),
    sa.Column("comment", sa.Text, nullable=True),
    sa.Index("ix_approvals_thread_status", "thread_id", "status"),
    sa.Index("ix_approvals_owner_created", "tenant", "user_id", "created_at"),
    sa.Index("ix_approvals_status_expires", "status", "expires_at"),
)

effects = sa.Table(
    "effects",
    metadata,
    sa.Column("approval_id", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("result", sa.JSON, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

_CONSENT_RECORDS = sa.text(
    "action IN ('consent_requested', 'consent_decided', 'consent_expired', 'consent_cancelled', "
    "'consent_superseded')"
)

audit = sa.Table(
    "audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("thread_id", sa.String(36), nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("approval_id", sa.String(64), nullable=True),
    *owner_columns(),
    sa.Column("action", sa.String(40), nullable=False),
    sa.Column("actor", sa.String(260), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Index("ix_audit_thread", "thread_id", "id"),
    # An owner's consent records: the approvals feed (migration 0015).
    *(
        sa.Index(
            name,
            "tenant",
            "user_id",
            column,
            sqlite_where=_CONSENT_RECORDS,
            postgresql_where=_CONSENT_RECORDS,
        )
        for name, column in (
            ("ix_audit_owner_approvals", "id"),
            ("ix_audit_owner_approvals_time", "created_at"),
        )
    ),
)

idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    *owner_columns(),
    sa.Column("key", sa.String(255), nullable=False),
    sa.Column("request_hash", sa.String(80), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    # The request holding an in-flight key (a random id per attempt; see runtime.idempotency).
    sa.Column("attempt", sa.String(32), nullable=False, server_default=""),
    sa.Column("response_status", sa.Integer, nullable=True),
    sa.Column("response_body", sa.JSON, nullable=True),
    sa.Column("thread_id", sa.String(36), nullable=True),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.PrimaryKeyConstraint("tenant", "user_id", "key"),
    sa.Index("ix_idempotency_created", "created_at"),
)

tenant_usage = sa.Table(
    "tenant_usage",
    metadata,
    sa.Column("tenant", sa.String(128), primary_key=True),
    sa.Column("tokens_used", sa.Integer, nullable=False),
)


# Assistants a client created over a served graph (the LangGraph SDK's `assistants.create`,
# migration 0023): the version in use, each of its versions kept in `assistant_versions`.
