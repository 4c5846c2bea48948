"""Projects, their notes, and each note's versions."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata, owner_columns

__all__ = ["note_versions", "notes", "projects"]

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    *owner_columns(),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("is_default", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Index("ix_projects_owner", "tenant", "user_id"),
    sa.Index(
        "ux_projects_default",
        "tenant",
        "user_id",
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    ),
)

notes = sa.Table(
    "notes",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column(
        "project_id",
        sa.String(36),
        sa.ForeignKey("projects.id", ondelete="CASCADE"),
        nullable=False,
    ),
    *owner_columns(),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_notes_project", "project_id"),
)

note_versions = sa.Table(
    "note_versions",
    metadata,
    sa.Column(
        "note_id", sa.String(36), sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("author", sa.String(16), nullable=False),
    sa.Column("approval_id", sa.String(64), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
)
