"""Alembic environment: runs on the connection that ``Database.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from backend.storage.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `consentry db upgrade`, which opens the database")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
context.run_migrations()
