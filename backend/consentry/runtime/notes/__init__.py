"""Notes as routes, graphs and first visits see them: the notes service behind the notes routes
(one transaction per call, answering with the wire models), the notes store a graph gets (scoped
to its owner, writing effects once per approval) and the sample notes a new default project
gets."""

from __future__ import annotations

from consentry.runtime.notes._samples import SampleNote, default_project_id, read_sample_notes
from consentry.runtime.notes._service import NotesService
from consentry.runtime.notes._store import OwnerNotesStore

__all__ = [
    "NotesService",
    "OwnerNotesStore",
    "SampleNote",
    "default_project_id",
    "read_sample_notes",
]
