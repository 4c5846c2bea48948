"""Threads and what runs on them: runs, the run queue, the transcript, tool calls, stored events."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata, owner_columns

__all__ = ["events", "run_queue", "runs", "threads", "tool_calls", "transcript"]

threads = sa.Table(
    "threads",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    *owner_columns(),
    sa.Column("graph", sa.String(64), nullable=False),
    sa.Column("project_id", sa.String(36), nullable=False),
    # The note the thread is about: the one its first message named (None: no note).
    sa.Column("note_id", sa.String(36), nullable=True),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("status", sa.String(24), nullable=False),
    sa.Column("last_reason", sa.String(24), nullable=True),
    sa.Column("last_seq", sa.Integer, nullable=False, default=0),
    sa.Column("consent_policy", sa.String(16), nullable=False, server_default="ask"),
    sa.Column("tokens_used", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pruned_through", sa.Integer, nullable=False, server_default="0"),
    sa.Column("active_run_id", sa.String(36), nullable=True),
    # The lease on the active run: the process that executes it, until when (renewed by its
    # heartbeat), and the fencing token every write of that run is checked against.
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("lease_expires_at", UTCDateTime, nullable=True),
    sa.Column("fencing_token", sa.Integer, nullable=False, server_default="0"),
    # Whether the ``transcript`` table holds the whole conversation. False only for threads
    # from before it existed, whose messages are still in their checkpoint (``transcript``).
    sa.Column("transcript_kept", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    # The client's own key-value metadata (the LangGraph SDK's `metadata`); None: none given.
    sa.Column("metadata", sa.JSON(none_as_null=True), nullable=True),
    # The options its client's last run gave (``{"context": …, "configurable": …}``, migration
    # 0022): what a run started without any (an inbox decision, an expiry, a recovery) gets.
    sa.Column("run_options", sa.JSON(none_as_null=True), nullable=True),
    # The stored assistant its latest run was started on (the LangGraph SDK's
    # `metadata.assistant_id`, migration 0023); None: its graph's own assistant.
    sa.Column("assistant_id", sa.String(36), nullable=True),
    sa.Index("ix_threads_owner_updated", "tenant", "user_id", "updated_at"),
    sa.Index("ix_threads_owner_note", "tenant", "user_id", "note_id", "updated_at"),
    sa.Index("ix_threads_lease", "status", "lease_expires_at"),
    # A tenant's active runs (CONSENTRY_MAX_ACTIVE_RUNS_PER_TENANT): only running threads.
    sa.Index(
        "ix_threads_running_tenant",
        "tenant",
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    ),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("trigger", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(24), nullable=True),
    sa.Column("error_code", sa.String(64), nullable=True),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    # A run queued for a worker (status ``queued``): what its graph starts with.
    sa.Column("inputs", sa.JSON, nullable=True),
    # Model tokens the run's calls reported (stored once, at its end).
    sa.Column("input_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
    # The client's metadata (the LangGraph SDK's run ``metadata``, migration 0019).
    sa.Column("metadata", sa.JSON, nullable=True),
    # Deleted on the LangGraph SDK face (``runs.delete``, a rollback; migration 0026): hidden
    # there, still named by the thread's events, audit trail and consents.
    sa.Column("deleted_at", UTCDateTime, nullable=True),
    # Where the run's record is posted when it ends (the LangGraph SDK's ``webhook``, migration
    # 0029): the run's own, never the thread's; None: nowhere.
    sa.Column("webhook", sa.Text, nullable=True),
    sa.Index("ix_runs_thread", "thread_id"),
    sa.Index("ix_runs_status", "status"),
)

# Runs asked to wait for the thread's active run (the LangGraph SDK's ``multitask_strategy=
# "enqueue"``, migration 0020): the request as the client sent it, started in order when the
# thread is free (``status`` ``waiting`` until then; ``started`` takes the row's id as its run's).
run_queue = sa.Table(
    "run_queue",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False
    ),
    *owner_columns(),
    sa.Column("request", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error_code", sa.String(64), nullable=True),
    sa.Column("error_message", sa.Text, nullable=True),
    sa.Column("metadata", sa.JSON, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_run_queue_thread", "thread_id", "created_at"),
    sa.Index(
        "ix_run_queue_waiting",
        "status",
        sqlite_where=sa.text("status = 'waiting'"),
        postgresql_where=sa.text("status = 'waiting'"),
    ),
)

transcript = sa.Table(
    "transcript",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("message_id", sa.String(64), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Index("ix_transcript_thread", "thread_id", "id"),
)

# The tool calls of a thread (migration 0016): apart from the transcript, which keeps only what
# the user and the assistant said. A row is made by the ``tool_call`` event and completed by its
# ``tool_result`` (``status`` ``pending`` until then).
tool_calls = sa.Table(
    "tool_calls",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "thread_id", sa.String(36), sa.ForeignKey("threads.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("run_id", sa.String(36), nullable=False),
    sa.Column("tool_call_id", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("args", sa.JSON, nullable=False),
    sa.Column("message_id", sa.String(255), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=True),
    sa.Column("content_chars", sa.Integer, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Index("ix_tool_calls_thread", "thread_id", "id"),
    sa.Index(
        "ux_tool_calls_pending",
        "thread_id",
        "tool_call_id",
        unique=True,
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    ),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column(
        "thread_id",
        sa.String(36),
        sa.ForeignKey("threads.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.String(36), nullable=False),
    sa.Column("type", sa.String(24), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("outputs", sa.Text, nullable=True),
    sa.Index("ix_events_created", "created_at"),
    sa.Index(
        "ix_events_outputs",
        "created_at",
        sqlite_where=sa.text("outputs IS NOT NULL"),
        postgresql_where=sa.text("outputs IS NOT NULL"),
    ),
)
