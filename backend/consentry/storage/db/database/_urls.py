"""A PostgreSQL URL in its two forms: libpq's (``postgresql://``) and SQLAlchemy's for psycopg 3
(``postgresql+psycopg://``)."""

from __future__ import annotations

__all__ = ["libpq_url", "sqlalchemy_postgres_url"]


def sqlalchemy_postgres_url(url: str) -> str:
    """``postgresql://…`` (libpq form) → the SQLAlchemy URL for psycopg 3."""
    scheme, _, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if scheme in ("postgresql", "postgres") else url


def libpq_url(url: str) -> str:
    """The SQLAlchemy form back to what libpq (the pool, the checkpointer) accepts."""
    scheme, _, rest = url.partition("://")
    return f"postgresql://{rest}" if scheme.startswith("postgresql+") else url
