"""The PostgreSQL baseline's own empty database: made for the run on the server of
``--postgres`` and dropped after it, unless ``--baseline-postgres`` names one.

Consentry and the baseline must not share a database: each run measures the bytes its own
database grew by, and the baseline's tables would be in Consentry's way. A database beside the
given one needs no second server nor a setting: ``CREATE DATABASE`` on the same server, named
after the given database (``<name>_baseline_<8 hex>``, so two runs never collide), which needs
the ``CREATEDB`` privilege. Without it, create an empty database yourself and pass
``--baseline-postgres URL``.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

__all__ = ["database_beside", "libpq_url"]

_MAX_NAME = 63
"""PostgreSQL's longest identifier (``NAMEDATALEN - 1``)."""


@contextmanager
def database_beside(url: str) -> Iterator[str]:
    """A new empty database on the server of ``url``, its URL; dropped on exit."""
    parts = urlsplit(url)
    given = parts.path.lstrip("/") or "postgres"
    suffix = f"_baseline_{secrets.token_hex(4)}"
    name = given[: _MAX_NAME - len(suffix)] + suffix
    admin = libpq_url(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        try:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        except psycopg.Error as exc:  # the results matter more: say so, and go on
            print(f"consentry bench: could not drop database {name!r}: {exc}", file=sys.stderr)


def libpq_url(url: str) -> str:
    """``url`` as libpq reads it (SQLAlchemy's ``postgresql+psycopg://`` is not)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.startswith("postgres") else url
