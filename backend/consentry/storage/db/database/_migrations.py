"""The schema's migrations (alembic): the newest this version ships, the database's, and the
upgrade to it."""

from __future__ import annotations

from importlib.resources import files

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

__all__ = ["MIGRATION_LOCK", "SchemaNotCurrentError", "head_revision"]

MIGRATION_LOCK = 0x636F6E73656E7472  # "consentr": the advisory lock key of schema changes


class SchemaNotCurrentError(RuntimeError):
    """The database was not migrated to this version's schema (and migrating is left to you)."""


def head_revision() -> str:
    """The newest migration this version of Consentry ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("consentry.storage") / "migrations"))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")
