"""What the tutor shows of a note: to the model in the answer and review prompts' ``<notes>``, and
to the user in search results.

Both come from the note itself, never from the search engine's snippet: a snippet is a fragment
of a few words, cut mid-sentence and with ``**`` around the words it matched, and a model (the
offline one above all) copies what it reads. The tutor's own summary section is left out: it
only repeats the discussion.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from consentry_graphs import sentences
from consentry_graphs.services import NoteSnapshot
from consentry_graphs.tutor.summaries import without_summary

__all__ = [
    "PROMPT_CHARS",
    "REVIEW_CHARS",
    "SEARCH_EXCERPT_CHARS",
    "notes_block",
    "review_block",
    "search_excerpt",
]

PROMPT_CHARS = 1500
"""The most of one note the answer prompt carries."""
REVIEW_CHARS = 600
"""The most of one note the review prompt carries (its first sentences)."""
SEARCH_EXCERPT_CHARS = 240
"""The most of one note a search result shows."""


def _prompt_passage(note: NoteSnapshot, query: str) -> str:
    """The note as written if it is short enough, else its sentences about ``query``."""
    text = without_summary(note.content)
    if len(text) <= PROMPT_CHARS:
        return text
    return " ".join(sentences.about(sentences.sentences(text), query, limit=PROMPT_CHARS))


def _element(note: NoteSnapshot, passage: str, *, opened: bool = False) -> str:
    mark = ' open="true"' if opened else ""
    return f'<note title="{escape(note.title)}"{mark}>\n{passage}\n</note>\n'


def notes_block(notes: Sequence[NoteSnapshot], query: str, *, open_note_id: str | None) -> str:
    """The ``<notes>`` of the answer prompt: one ``<note title="…">`` element per note with text,
    the one the person has open marked ``open="true"``."""
    parts = []
    for note in notes:
        passage = _prompt_passage(note, query)
        if passage:
            parts.append(_element(note, passage, opened=note.note_id == open_note_id))
    return "".join(parts)


def review_block(notes: Sequence[NoteSnapshot]) -> str:
    """The ``<notes>`` of the review prompt: one ``<note title="…">`` element per note, in the
    order given, with its first sentences, its summary section's too (a note the tutor created
    may be one); empty for a note with no text yet."""
    parts = []
    for note in notes:
        found = sentences.sentences(note.content)
        parts.append(_element(note, " ".join(sentences.leading(found, REVIEW_CHARS))))
    return "".join(parts)


def search_excerpt(note: NoteSnapshot, query: str) -> str:
    """The whole sentences of the note about ``query`` that fit in a search result: from what
    the person wrote, else from the tutor's summary (where the search found it), else the
    note's first sentences."""
    written = sentences.sentences(without_summary(note.content))
    limit = SEARCH_EXCERPT_CHARS
    picked = (
        sentences.about(written, query, limit=limit, fallback=False)
        or sentences.about(sentences.sentences(note.content), query, limit=limit, fallback=False)
        or sentences.leading(written, limit)
    )
    return " ".join(picked)
