"""Writing threads outside a run, for the LangGraph SDK face: create one before its first run,
merge its metadata, delete it; update its graph state and copy it (``_branches``).

- **Create** (``POST /threads``): an idle thread that has never run, in the owner's default
  project (the note's, when ``metadata.note_id`` names one: ``_thread_note``), with the graph
  ``metadata.graph_id`` names (else the default) and the client's metadata. Its first run may
  bind it to another graph (``_targets``). A client may choose its id; an id taken by any
  thread is 409 ``thread_exists`` (the same answer whoever owns it), or, with
  ``if_exists="do_nothing"``, the caller's own thread as it is.
- **Delete** (``DELETE /threads/{id}``): refused with 409 ``run_in_progress`` while a run is
  active. The thread's row goes in one transaction with its runs, events, approvals, transcript
  and tool calls (foreign keys cascade); its audit records stay (the trail is never rewritten).
  Its checkpoints are deleted after the commit. A crash in between leaves checkpoints no thread
  names: a thread created again with that id has them cleared before its row is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal
from uuid import uuid4

from langgraph.checkpoint.base import BaseCheckpointSaver

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.notes import SampleNote, default_project_id
from consentry.runtime.runs.read import DERIVED_METADATA, ThreadReader
from consentry.runtime.runs.sdk._branches import ThreadBranches
from consentry.runtime.runs.sdk._thread_note import named_note, set_thread_note
from consentry.runtime.runs.start import run_in_progress, thread_exists
from consentry.schemas.sdk import SdkThread
from consentry.storage import projects as projects_repo
from consentry.storage import threads as threads_repo
from consentry.storage.checkpoints import ConsentrySaver
from consentry.storage.db.database import Database, DbConnection
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["DEFAULT_GRAPH", "ThreadWriter"]

DEFAULT_GRAPH = "tutor"
"""The graph of a thread created without ``graph_id`` (the first served one when it is not
served)."""


class ThreadWriter:
    def __init__(
        self,
        *,
        db: Database,
        graphs: Mapping[str, GraphSpec],
        checkpointer: BaseCheckpointSaver[Any],
        compiled: Callable[[str], CompiledGraph],
        reader: ThreadReader,
        clock: Clock,
        sample_notes: Sequence[SampleNote] = (),
    ) -> None:
        """``compiled``: the served graph of a name (its state is updated as LangGraph does)."""
        self._db = db
        self._branches = ThreadBranches(db=db, compiled=compiled, clock=clock)
        self._graphs = graphs
        self._checkpointer = checkpointer
        self._reader = reader
        self._clock = clock
        self._sample_notes = sample_notes

    async def create(
        self,
        owner: Principal,
        *,
        thread_id: str | None,
        metadata: Mapping[str, Any] | None,
        if_exists: Literal["raise", "do_nothing"],
    ) -> SdkThread:
        """A new thread that has never run, with the id the client chose or a new one (or the
        caller's own, ``do_nothing``)."""
        graph = self._graph_of(metadata or {})
        kept = {k: v for k, v in (metadata or {}).items() if k not in DERIVED_METADATA}
        chosen = thread_id is not None
        thread_id = thread_id or str(uuid4())
        async with self._db.read() as conn:
            note = await named_note(conn, owner, (metadata or {}).get("note_id"))
            taken = chosen and await threads_repo.thread_id_taken(conn, thread_id)
            project_id = (
                note.project_id
                if note is not None
                else await projects_repo.find_default_project_id(conn, owner)
            )
        if not taken:
            async with self._db.write() as conn:
                created = await self.create_in(
                    conn,
                    owner,
                    thread_id=thread_id,
                    graph=graph,
                    metadata=kept,
                    project_id=project_id,
                    note_id=None if note is None else note.note_id,
                )
                if created and chosen and isinstance(self._checkpointer, ConsentrySaver):
                    # What a deletion that stopped half-way left under this id: after the
                    # insert, so that a request that lost the race deletes nothing.
                    await self._checkpointer.adelete_thread_in(conn, thread_id)
            if created and chosen and not isinstance(self._checkpointer, ConsentrySaver):
                await self._checkpointer.adelete_thread(thread_id)  # a saver of another kind
            if created:
                return await self._reader.sdk_thread(owner, thread_id)
        if if_exists == "do_nothing":
            try:
                return await self._reader.sdk_thread(owner, thread_id)
            except NotFoundError:  # somebody else's: 409, as for a `raise`
                pass
        raise thread_exists(thread_id)

    async def create_in(
        self,
        conn: DbConnection,
        owner: Principal,
        *,
        thread_id: str,
        graph: str,
        metadata: Mapping[str, Any],
        project_id: str | None = None,
        note_id: str | None = None,
    ) -> bool:
        """A thread that has never run, under ``thread_id``, in ``project_id`` (else the
        owner's default project), written in the caller's transaction (a cron's tick queues
        its run there); False, and nothing written, when the id is taken."""
        now = self._clock()
        if project_id is None:
            project_id = await default_project_id(conn, owner, now=now, samples=self._sample_notes)
        return await threads_repo.insert_thread_unless_taken(
            conn,
            owner,
            thread_id=thread_id,
            graph=graph,
            project_id=project_id,
            title=graph,
            metadata=metadata,
            now=now,
            note_id=note_id,
        )

    async def update_metadata(
        self, owner: Principal, thread_id: str, metadata: Mapping[str, Any]
    ) -> SdkThread:
        """Merge ``metadata`` into the thread's (``graph_id`` and ``assistant_id`` are its
        graph's and are not stored); ``note_id`` names the note it is about (``_thread_note``)."""
        kept = {k: v for k, v in metadata.items() if k not in DERIVED_METADATA}
        async with self._db.write() as conn:
            row = await threads_repo.set_metadata(
                conn, owner, thread_id, metadata=kept, now=self._clock()
            )
            if "note_id" in metadata:
                await set_thread_note(conn, owner, row, metadata["note_id"])
        return await self._reader.sdk_thread(owner, thread_id)

    async def update_state(
        self,
        owner: Principal,
        thread_id: str,
        *,
        values: Any,
        as_node: str | None,
        checkpoint_id: str | None,
    ) -> dict[str, Any]:
        """The thread's graph state updated outside a run (``ThreadBranches.update_state``):
        the new checkpoint's config."""
        return await self._branches.update_state(
            owner, thread_id, values=values, as_node=as_node, checkpoint_id=checkpoint_id
        )

    async def copy(self, owner: Principal, thread_id: str) -> SdkThread:
        """A copy of the owner's thread under a new id (``ThreadBranches.copy``)."""
        copy_id = await self._branches.copy(owner, thread_id)
        return await self._reader.sdk_thread(owner, copy_id)

    async def delete(self, owner: Principal, thread_id: str) -> None:
        """Delete the thread, its records but the audit trail, and its checkpoints."""
        async with self._db.write() as conn:
            if not await threads_repo.delete_thread(conn, owner, thread_id):
                raise run_in_progress(thread_id)
        await self._checkpointer.adelete_thread(thread_id)

    async def delete_if_done(self, owner: Principal, thread_id: str) -> bool:
        """Delete the thread as :meth:`delete` does unless a run is active on it or a consent
        waits on it (the SDK's ``on_completion="delete"``); whether it was deleted."""
        async with self._db.write() as conn:
            try:
                row = await threads_repo.get_thread(conn, owner, thread_id)
            except NotFoundError:
                return False
            if row.status != "idle" or not await threads_repo.delete_thread(conn, owner, thread_id):
                return False
        await self._checkpointer.adelete_thread(thread_id)
        return True

    async def prune(
        self,
        owner: Principal,
        thread_ids: Sequence[str],
        *,
        strategy: Literal["delete", "keep_latest"],
    ) -> int:
        """``threads.prune``: each of the owner's threads deleted (as :meth:`delete` does) or
        cut to its newest checkpoint; one with an active run is left as it is. How many were
        pruned. An id that is not one of the owner's threads is 404 (nothing is pruned)."""
        named = list(dict.fromkeys(thread_ids))
        async with self._db.read() as conn:
            for thread_id in named:
                await threads_repo.get_thread(conn, owner, thread_id)
        pruned = 0
        for thread_id in named:
            if strategy == "keep_latest":
                pruned += await self._branches.keep_latest(owner, thread_id)
                continue
            try:
                await self.delete(owner, thread_id)
            except (NotFoundError, ConflictError):  # deleted meanwhile, or a run started
                continue
            pruned += 1
        return pruned

    async def delete_all(self, owner: Principal, *, assistant_id: str) -> None:
        """Delete the owner's threads whose latest run was on ``assistant_id``, as
        :meth:`delete` does; none while a run is active on one of them (409)."""
        async with self._db.write() as conn:
            deleted = await threads_repo.delete_threads_of_assistant(conn, owner, assistant_id)
        if isinstance(deleted, str):
            raise run_in_progress(deleted)
        for thread_id in deleted:
            await self._checkpointer.adelete_thread(thread_id)

    def _graph_of(self, metadata: Mapping[str, Any]) -> str:
        asked = metadata.get("graph_id")
        if asked is None:
            return DEFAULT_GRAPH if DEFAULT_GRAPH in self._graphs else min(self._graphs)
        if not isinstance(asked, str) or asked not in self._graphs:
            available = sorted(self._graphs)
            raise InvalidRequestError(
                f"No graph named {asked!r}; available: {', '.join(available)}.",
                code="unknown_graph",
                details={"graph": asked, "available": available},
            )
        return asked
