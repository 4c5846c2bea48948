"""Alembic environment: runs on the connection that ``Database.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from consentry.storage.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `consentry db upgrade`, which opens the database")


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # The full-text index (SQLite: notes_fts and its shadow tables; PostgreSQL: the generated
    # notes.search column and its index) is created by hand in 0001.
    if type_ == "table" and name is not None and name.startswith("notes_fts"):
        return False
    return not (type_ in ("column", "index") and name in ("search", "ix_notes_search"))


context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    include_object=_include_object,
)
context.run_migrations()
