"""What Consentry gives the graphs it serves (``GraphServices``): the caller's notes store, the
ledger of effects already applied, who the user is, the conversation window and the clock.

A node reads them with :func:`graph_services`, as it reads its config with LangGraph's
``get_config()``: they travel beside the run, not in LangGraph's runtime context, which stays the
graph's own (its ``context_schema``, filled from the run's ``context``). The server sets them for
the task that runs the graph (:func:`serving`); LangGraph's node tasks inherit them.

Graphs depend on these small protocols, never on the server: the server passes an implementation
scoped to the caller (tenant + user), and a test passes its own with ``serving(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from consentry_graphs.consent import EffectLedger
from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW

__all__ = [
    "AppliedDeletion",
    "AppliedEdit",
    "GraphServices",
    "NoteHit",
    "NoteSnapshot",
    "NotesStore",
]


class NoteSnapshot(BaseModel):
    note_id: str
    project_id: str
    title: str
    content: str
    version: int


class NoteHit(BaseModel):
    note_id: str
    title: str
    snippet: str
    score: float


class AppliedEdit(BaseModel):
    """The outcome of an approved note edit or creation; the same one every time for an approval."""

    outcome: Literal["applied", "note_changed", "note_missing"]
    note: NoteSnapshot | None = None
    current_version: int | None = None


class AppliedDeletion(BaseModel):
    """The outcome of an approved note deletion; the same one every time for an approval."""

    outcome: Literal["deleted", "note_changed", "note_missing"]
    note_id: str
    current_version: int | None = Field(
        default=None, description="With `note_changed`: the version the note is at now."
    )


class NotesStore(Protocol):
    """Notes of one owner. Every method is scoped to that owner."""

    async def get_note(self, note_id: str) -> NoteSnapshot | None: ...

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]: ...

    async def recent_notes(self, project_id: str, *, limit: int) -> list[NoteSnapshot]:
        """The project's notes, the most recently changed first, at most ``limit`` of them (none
        for a project that is not the owner's)."""
        ...

    async def apply_note_edit(
        self, *, approval_id: str, note_id: str, title: str, content: str, base_version: int
    ) -> AppliedEdit:
        """Write ``content`` as the next version of the note if it is still at ``base_version``,
        exactly once per ``approval_id``: a second call returns the first call's outcome and
        writes nothing."""
        ...

    async def apply_note_creation(
        self, *, approval_id: str, project_id: str, title: str, content: str
    ) -> AppliedEdit:
        """Create a note, exactly once per ``approval_id`` (a second call returns the first
        call's outcome and creates nothing)."""
        ...

    async def apply_note_deletion(
        self, *, approval_id: str, note_id: str, version: int
    ) -> AppliedDeletion:
        """Delete the note if it is still at ``version``, exactly once per ``approval_id`` (a
        second call returns the first call's outcome and deletes nothing)."""
        ...


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class GraphServices:
    """What every graph Consentry serves may use, scoped to the run's caller."""

    notes: NotesStore
    effects: EffectLedger
    user: str
    conversation_window: int = DEFAULT_CONVERSATION_WINDOW
    """Messages the graph keeps in its state (``consentry_graphs.window``); older ones live only in
    the server's transcript."""
    clock: Callable[[], datetime] = _utc_now
    """The time now, aware (the server's clock, which its tests move by hand)."""


class GraphServicesMissingError(LookupError):
    """A node asked for :func:`graph_services` outside a run that Consentry (or a test's
    :func:`serving`) gave them to."""


_CURRENT: ContextVar[GraphServices | None] = ContextVar("consentry_graph_services", default=None)


def graph_services() -> GraphServices:
    """The services of the run executing this node."""
    services = _CURRENT.get()
    if services is None:
        raise GraphServicesMissingError(
            "No Consentry services here: a node reads them while Consentry runs its graph; "
            "outside the server, run the graph inside `with serving(GraphServices(...)):`."
        )
    return services


@contextmanager
def serving(services: GraphServices) -> Iterator[GraphServices]:
    """Give ``services`` to the graph runs started inside the block (and their node tasks)."""
    token = _CURRENT.set(services)
    try:
        yield services
    finally:
        _CURRENT.reset(token)
