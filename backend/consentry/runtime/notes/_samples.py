"""Sample notes, so that a first visit has something to ask the tutor about.

The rule: an owner's default project gets the sample notes **when it is created**, in the
transaction that creates it. It is created on the owner's first request that needs it (the web
app's first ``GET /v1/projects``, or a first message), so on a new database the local user (or,
with API keys, each user) starts with the samples, and nobody ever gets them again: not on a
second start, not in a new thread, not after deleting them. An existing database, whose owners
have their default project already, gets none. ``CONSENTRY_SAMPLE_NOTES=false`` turns it off.

The samples are the Markdown files of ``data/samples/`` in the repository: one note per file,
titled by the file's first ``# `` heading, listed in file-name order (the first file's note is
the newest by a microsecond, and so on). They are read once, at start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from consentry.principal import Principal
from consentry.storage import notes as notes_repo
from consentry.storage import projects as projects_repo
from consentry.storage.db.database import DbConnection

__all__ = ["SAMPLES_DIRECTORY", "SampleNote", "default_project_id", "read_sample_notes"]

log = logging.getLogger(__name__)

SAMPLES_DIRECTORY = Path(__file__).resolve().parents[4] / "data" / "samples"


@dataclass(frozen=True)
class SampleNote:
    title: str
    content: str


def _sample(path: Path) -> SampleNote:
    text = path.read_text(encoding="utf-8").strip()
    first, _, rest = text.partition("\n")
    if first.startswith("# "):
        return SampleNote(title=first.removeprefix("# ").strip(), content=rest.strip() + "\n")
    return SampleNote(title=path.stem.replace("-", " ").capitalize(), content=text + "\n")


def read_sample_notes(directory: Path = SAMPLES_DIRECTORY) -> tuple[SampleNote, ...]:
    """The sample notes of ``directory`` (none, with a warning, if it is missing: an installed
    package without the repository's ``data/``). Blocking: call it off the event loop."""
    if not directory.is_dir():
        log.warning("no sample notes: %s is not a directory", directory)
        return ()
    return tuple(_sample(path) for path in sorted(directory.glob("*.md")))


async def default_project_id(
    conn: DbConnection, owner: Principal, *, now: datetime, samples: Sequence[SampleNote]
) -> str:
    """The owner's default project, created on first use; the call that creates it writes the
    samples into it (in ``conn``'s transaction: a write transaction when it may create)."""
    found = await projects_repo.find_default_project_id(conn, owner)
    if found is not None:
        return found
    created = await projects_repo.create_default_project(conn, owner, now=now)
    if created is None:  # a racing first request created it, and wrote the samples
        return await projects_repo.default_project_id(conn, owner, now=now)
    for index, sample in enumerate(samples):
        await notes_repo.create_note(
            conn,
            owner,
            project_id=created,
            title=sample.title,
            content=sample.content,
            now=now - timedelta(microseconds=index),
        )
    return created
