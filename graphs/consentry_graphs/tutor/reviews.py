"""The tutor's review of a project's notes, proposed as a new note (``note_create``).

"Review my notes", or "Write a weekly review of my project's notes" sent by a cron every Friday
(docs/schedules.md), drafts a review of the project's most recently changed notes
(``REVIEWED``, whatever their age: the notes store says in which order notes changed, not when),
leaving out the tutor's earlier reviews, and asks to save it as a new note titled with the day
of the run's clock (``review_title``). Nothing is written until the person approves; a project
without notes to review gets a reply and no consent.
"""

from __future__ import annotations

from datetime import UTC, datetime

from consentry_graphs.services import NoteSnapshot, graph_services

__all__ = ["REVIEWED", "REVIEW_TITLE", "notes_to_review", "review_title"]

REVIEWED = 10
"""The most notes one review covers: the most recently changed."""
REVIEW_TITLE = "Weekly review"
"""How the title of a review note starts; its day follows (``review_title``)."""
_READ = REVIEWED + 5
"""The notes read for one review: a few more than it covers, for the earlier reviews among them."""


def review_title(now: datetime) -> str:
    """The new note's title: "Weekly review, 2026-01-02" (the day in UTC)."""
    return f"{REVIEW_TITLE}, {now.astimezone(UTC).date().isoformat()}"


async def notes_to_review(project_id: str) -> list[NoteSnapshot]:
    """The notes a review covers, the most recently changed first: not the tutor's earlier
    reviews, at most ``REVIEWED``."""
    recent = await graph_services().notes.recent_notes(project_id, limit=_READ)
    return [note for note in recent if not note.title.startswith(f"{REVIEW_TITLE},")][:REVIEWED]
