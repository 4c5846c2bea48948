"""Full-text search over a project's notes, best match first, with snippets: free text becomes a
query of its meaningful words (stop words dropped, each a prefix, OR-ed), run as SQLite FTS5 or as
PostgreSQL's ``tsquery``, whichever the connection speaks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.db.direct import direct
from consentry_graphs.sentences import STOPWORDS

__all__ = ["SearchHitRecord", "fts_query", "search_notes", "tsquery"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SearchHitRecord:
    """A note that matched (the wire model is :class:`consentry.schemas.notes.SearchHit`)."""

    note_id: str
    title: str
    snippet: str
    """Matching text; matched terms are wrapped in ``**``."""
    score: float
    """Higher is more relevant."""


def _search_words(text: str) -> list[str]:
    """Every meaningful word of the free text, lower-cased, once."""
    words = [word.lower() for word in _TOKEN.findall(text)]
    return list(dict.fromkeys(word for word in words if word not in STOPWORDS))


def fts_query(text: str) -> str | None:
    """Turn free text into an FTS5 query: every meaningful word, as a prefix, OR-ed together."""
    words = _search_words(text)
    return " OR ".join(f'"{word}"*' for word in words) if words else None


def tsquery(text: str) -> str | None:
    """The same for PostgreSQL's ``to_tsquery``: ``word:* | word2:*``."""
    words = _search_words(text)
    return " | ".join(f"{word}:*" for word in words) if words else None


# SQLite: FTS5 with BM25, the title weighing 4 times the content (lower rank is better).
_SEARCH_SQLITE = direct(
    sa.text(
        "SELECT n.id, n.title, snippet(notes_fts, 1, '**', '**', '…', 24) AS snippet, "
        "-bm25(notes_fts, 4.0, 1.0) AS score "
        "FROM notes_fts JOIN notes AS n ON n.rowid = notes_fts.rowid "
        "WHERE notes_fts MATCH :match AND n.project_id = :project_id "
        "AND n.tenant = :tenant AND n.user_id = :user_id "
        "ORDER BY score DESC LIMIT :limit"
    )
)
# PostgreSQL: the generated tsvector, title (A) weighing 4 times the content (B).
_SEARCH_POSTGRES = direct(
    sa.text(
        "SELECT n.id, n.title, ts_headline('english', n.content, q, "
        "'StartSel=**, StopSel=**, MaxWords=24, MinWords=8') AS snippet, "
        "ts_rank('{0.1, 0.2, 0.25, 1.0}', n.search, q) AS score "
        "FROM notes AS n, to_tsquery('english', :match) AS q "
        "WHERE n.search @@ q AND n.project_id = :project_id "
        "AND n.tenant = :tenant AND n.user_id = :user_id "
        "ORDER BY score DESC LIMIT :limit"
    )
)


async def search_notes(
    conn: DbConnection, owner: Principal, project_id: str, query: str, *, limit: int
) -> list[SearchHitRecord]:
    """The owner's notes of ``project_id`` that match ``query`` (none for a query of stop words
    only); the caller checks the project exists."""
    postgres = conn.dialect.name == "postgresql"
    match = tsquery(query) if postgres else fts_query(query)
    if match is None:
        return []
    rows = await conn.execute(
        _SEARCH_POSTGRES if postgres else _SEARCH_SQLITE,
        {
            "match": match,
            "project_id": project_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "limit": limit,
        },
    )
    return [
        SearchHitRecord(
            note_id=row.id, title=row.title, snippet=row.snippet, score=float(row.score)
        )
        for row in rows
    ]
