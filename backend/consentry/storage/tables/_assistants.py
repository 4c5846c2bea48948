"""Assistants a client created, and each of their versions."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata, owner_columns

__all__ = ["assistant_versions", "assistants"]


def _assistant_fields() -> list[sa.Column[Any]]:
    """What each version of an assistant says (``storage.assistants.AssistantFields``)."""
    return [
        sa.Column("graph", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("context", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
    ]


assistants = sa.Table(
    "assistants",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    *owner_columns(),
    *_assistant_fields(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_assistants_owner", "tenant", "user_id", "created_at"),
)

assistant_versions = sa.Table(
    "assistant_versions",
    metadata,
    sa.Column(
        "assistant_id",
        sa.String(36),
        sa.ForeignKey("assistants.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("version", sa.Integer, primary_key=True),
    *_assistant_fields(),
    sa.Column("created_at", UTCDateTime, nullable=False),
)
