"""``consentry notes``: the projects and notes of a running server, and a note's conversations.

``consentry notes`` lists every project with its notes (ids first, to copy into
``consentry chat --note ID``); ``consentry notes ID`` shows one note and the conversations about
it (``GET /v1/threads?note_id=``), to go on with one (``consentry chat --thread ID``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from consentry.schemas.notes import Note
from consentry.schemas.threads import ThreadSummary
from consentry.terminal.api_client import ConsentryClient
from consentry.terminal.render import Palette, format_time

__all__ = ["list_notes", "show_note"]

STATUS_WORDS = {"idle": "idle", "running": "running", "awaiting_consent": "waiting for a decision"}


def list_notes(
    client: ConsentryClient, *, project_id: str | None, palette: Palette, out: TextIO
) -> int:
    """Each project (or only ``project_id``), its name and id, then its notes, the most recently
    updated first."""
    projects = client.projects()
    if project_id is not None:
        projects = [p for p in projects if p.project_id == project_id]
        if not projects:
            client.notes(project_id)  # not the caller's: the server's 404 project_not_found
    for project in projects:
        default = " (default)" if project.is_default else ""
        print(f"{palette.bold(project.name)}{default} · project {project.project_id}", file=out)
        notes = client.notes(project.project_id)
        if not notes:
            print(palette.dim("  no notes yet"), file=out)
            continue
        rows = [_note_row(note) for note in notes]
        for line in _columns(rows):
            print(f"  {line}", file=out)
    print(
        palette.dim(
            "show a note and its conversations: consentry notes NOTE_ID · "
            "chat about it: consentry chat --note NOTE_ID"
        ),
        file=out,
    )
    return 0


def show_note(client: ConsentryClient, note_id: str, *, palette: Palette, out: TextIO) -> int:
    """The note (title, version, content) and the conversations about it."""
    note = client.note(note_id)
    project = next((p.name for p in client.projects() if p.project_id == note.project_id), None)
    facts = [
        f"version {note.version}",
        f"updated {format_time(note.updated_at)}",
        f"project {project or note.project_id}",
    ]
    print(f"{palette.bold(note.title)} · {' · '.join(facts)}", file=out)
    print(note.content.rstrip("\n") or palette.dim("(empty)"), file=out)
    print(file=out)
    threads = client.note_threads(note.note_id)
    if not threads:
        print(
            f"no conversation about this note yet: consentry chat --note {note.note_id}",
            file=out,
        )
        return 0
    print(palette.bold("conversations about this note"), file=out)
    for line in _columns([_thread_row(thread) for thread in threads]):
        print(f"  {line}", file=out)
    print(
        palette.dim(f"go on with one: consentry chat --thread THREAD_ID --note {note.note_id}"),
        file=out,
    )
    return 0


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines, each column as wide as its widest cell."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _note_row(note: Note) -> tuple[str, ...]:
    return (
        note.note_id,
        note.title,
        f"version {note.version}",
        f"updated {format_time(note.updated_at)}",
    )


def _thread_row(thread: ThreadSummary) -> tuple[str, ...]:
    return (
        thread.thread_id,
        thread.title or thread.graph,
        STATUS_WORDS.get(thread.status, thread.status),
        f"updated {format_time(thread.updated_at)}",
    )
