"""Alembic environment: runs on the connection that ``Database.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from backend.storage.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `consentry db upgrade`, which opens the database")


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # The FTS5 index (notes_fts and its shadow tables) is created by hand in 0001.
    return not (type_ == "table" and name is not None and name.startswith("notes_fts"))


context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    include_object=_include_object,
)
context.run_migrations()
