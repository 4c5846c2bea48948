"""Reading threads: the caller's list, one thread with its pending consents, the transcript, the
tool calls, the audit trail; and for the LangGraph SDK face, a thread with its graph's values,
a search, the graph's state and its history. (Joining a thread's stream is ``_joins``.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.runtime.assistants import assistant_uuid
from consentry.runtime.clock import Clock
from consentry.runtime.consents import is_expired
from consentry.runtime.graph_state import (
    GraphState,
    graph_history,
    head_checkpoint_id,
    read_graph_state,
    read_graph_state_at,
)
from consentry.runtime.runs.execute import RunExecutor, checkpoint_transcript
from consentry.schemas.audit import AuditTrail
from consentry.schemas.events import ConsentEvent, TerminalReason
from consentry.schemas.sdk import SdkThread, SdkThreadStatus
from consentry.schemas.threads import (
    ThreadDetail,
    ThreadList,
    ToolCall,
    ToolCallList,
    Transcript,
    TranscriptMessage,
)
from consentry.storage import approvals as approvals_repo
from consentry.storage import threads as threads_repo
from consentry.storage.audit import list_audit
from consentry.storage.db.database import Database
from consentry.storage.threads import MetadataValue, ThreadFilter, ThreadRecord
from consentry.storage.tool_calls import list_tool_calls
from consentry.storage.transcript import read_transcript

__all__ = ["ThreadReader"]

FAILED_REASONS: tuple[TerminalReason, ...] = ("failed", "step_limit", "timeout", "budget_exhausted")
"""The ends of a run after which the SDK reads its thread ``error``."""
DERIVED_METADATA = ("graph_id", "assistant_id", "note_id")
"""Metadata keys a thread's own columns give it (``SdkThread.metadata``), never stored in its
client's metadata: its graph, its assistant and the note it is about."""


class ThreadReader:
    def __init__(self, *, db: Database, executor: RunExecutor, clock: Clock) -> None:
        self._db = db
        self._executor = executor
        self._clock = clock

    async def list_threads(
        self,
        owner: Principal,
        *,
        limit: int,
        note_id: str | None = None,
        project_id: str | None = None,
    ) -> ThreadList:
        async with self._db.read() as conn:
            summaries = await threads_repo.list_threads(
                conn, owner, limit=limit, now=self._clock(), note_id=note_id, project_id=project_id
            )
        return ThreadList(threads=summaries)

    async def detail(self, owner: Principal, thread_id: str) -> ThreadDetail:
        now = self._clock()
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
            pending = await approvals_repo.pending_approvals(conn, thread_id)
        consents = [ConsentEvent.model_validate(r.event) for r in pending if not is_expired(r, now)]
        summary = threads_repo.summarize(row)
        if summary.status == "awaiting_consent" and not consents:
            summary.status = "idle"
        return ThreadDetail(
            **summary.model_dump(), pending_consents=consents, tokens_used=row.tokens_used
        )

    async def pending_consents(self, owner: Principal, thread_id: str) -> list[ConsentEvent]:
        """The consents the owner's thread waits for (404 for another's): what a face reads to
        map its protocol's answers to decisions."""
        now = self._clock()
        async with self._db.read() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)
            pending = await approvals_repo.pending_approvals(conn, thread_id)
        return [ConsentEvent.model_validate(r.event) for r in pending if not is_expired(r, now)]

    async def graph_state(
        self, owner: Principal, thread_id: str, *, graph: str | None = None
    ) -> GraphState:
        """The thread's graph state as JSON (values, next, tasks, interrupts, checkpoint).
        ``graph``: the thread's, known to a caller that has checked the thread is the owner's
        (the run it streams): no read of the thread then."""
        if graph is None:
            async with self._db.read() as conn:
                graph = (await threads_repo.get_thread(conn, owner, thread_id)).graph
        return await read_graph_state(self._executor.graph(graph), thread_id)

    async def head_checkpoint_id(self, owner: Principal, thread_id: str) -> str | None:
        """The id of the thread's newest checkpoint (None before its first run)."""
        async with self._db.read() as conn:
            graph = (await threads_repo.get_thread(conn, owner, thread_id)).graph
        return await head_checkpoint_id(self._executor.graph(graph), thread_id)

    async def graph_state_at(
        self, owner: Principal, thread_id: str, checkpoint_id: str
    ) -> GraphState:
        """The thread's graph state at one of its kept checkpoints (404 ``checkpoint_not_found``
        for one the checkpointer does not keep: ``CONSENTRY_CHECKPOINT_RETENTION``)."""
        async with self._db.read() as conn:
            graph = (await threads_repo.get_thread(conn, owner, thread_id)).graph
        state = await read_graph_state_at(self._executor.graph(graph), thread_id, checkpoint_id)
        if state is None:
            raise NotFoundError(
                f"Thread {thread_id!r} keeps no checkpoint {checkpoint_id!r}.",
                code="checkpoint_not_found",
                details={"thread_id": thread_id, "checkpoint_id": checkpoint_id},
            )
        return state

    async def graph_history(
        self,
        owner: Principal,
        thread_id: str,
        *,
        limit: int,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[GraphState]:
        """The thread's checkpoints as JSON, newest first (as many as the retention keeps)."""
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
        graph = self._executor.graph(row.graph)
        return await graph_history(graph, thread_id, limit=limit, before=before, metadata=metadata)

    async def sdk_thread(self, owner: Principal, thread_id: str) -> SdkThread:
        """The thread as the LangGraph SDK reads it: its status, metadata and graph values."""
        async with self._db.read() as conn:
            rows = await threads_repo.search_threads(
                conn, owner, now=self._clock(), limit=1, ids=[thread_id]
            )
        if not rows:
            raise NotFoundError.of("thread", thread_id)
        return await self.sdk_view(rows[0])

    async def search_sdk_threads(
        self,
        owner: Principal,
        *,
        status: SdkThreadStatus | None,
        metadata: Mapping[str, MetadataValue] | None,
        ids: Sequence[str] | None,
        limit: int,
        offset: int,
        order_by: Literal["thread_id", "created_at", "updated_at"],
        descending: bool,
    ) -> list[SdkThread]:
        """The owner's threads with this status, metadata and ids, as the SDK reads them."""
        matched = self._by_graph(metadata)
        if matched is None:
            return []
        async with self._db.read() as conn:
            rows = await threads_repo.search_threads(
                conn,
                owner,
                now=self._clock(),
                limit=limit,
                offset=offset,
                order_by=order_by,
                descending=descending,
                **(matched | ThreadFilter(ids=ids)),
                **_status_filter(status),
            )
        return [await self.sdk_view(row) for row in rows]

    async def count_sdk_threads(
        self,
        owner: Principal,
        *,
        status: SdkThreadStatus | None,
        metadata: Mapping[str, MetadataValue] | None,
    ) -> int:
        """How many of the owner's threads ``search_sdk_threads`` finds with these filters."""
        matched = self._by_graph(metadata)
        if matched is None:
            return 0
        async with self._db.read() as conn:
            return await threads_repo.count_threads(
                conn, owner, now=self._clock(), **matched, **_status_filter(status)
            )

    def _by_graph(self, metadata: Mapping[str, MetadataValue] | None) -> ThreadFilter | None:
        """The thread filters a metadata filter makes: ``graph_id`` (a graph's name or its
        assistant's UUID) the thread's graph, ``assistant_id`` the thread's assistant (a graph's
        own: the graph's threads whose runs were not on an assistant of the caller's),
        ``note_id`` the note it is about, the other keys the client's metadata. None when no
        thread can match (a graph not served here, or two different ones)."""
        filters = dict(metadata or {})
        matched = ThreadFilter(metadata=filters)
        if "note_id" in filters:
            note = filters.pop("note_id")
            if not isinstance(note, str):
                return None
            matched["note"] = note
        graphs = set()
        if "graph_id" in filters:
            graphs.add(self._graph_named(filters.pop("graph_id")))
        if "assistant_id" in filters:
            assistant = filters.pop("assistant_id")
            graph = self._graph_named(assistant)
            if graph is not None:
                graphs.add(graph)
                matched["assistant"] = None
            elif isinstance(assistant, str):
                matched["assistant"] = assistant  # one of the caller's own, or none
            else:
                return None
        if None in graphs or len(graphs) > 1:
            return None
        matched["graph"] = next(iter(graphs), None)
        return matched

    async def sdk_view(self, row: ThreadRecord) -> SdkThread:
        """A thread's row (its status as a reader sees it now) as the SDK reads it."""
        status = sdk_status(row)
        served = row.graph in self._executor.graph_names
        state = await read_graph_state(self._executor.graph(row.graph), row.id) if served else None
        waiting = state.interrupts if state is not None and status == "interrupted" else []
        return SdkThread(
            thread_id=row.id,
            created_at=row.created_at,
            updated_at=row.updated_at,
            metadata={
                **{k: v for k, v in (row.metadata or {}).items() if k not in DERIVED_METADATA},
                "graph_id": row.graph,
                "assistant_id": row.assistant_id or assistant_uuid(row.graph),
                **({"note_id": row.note_id} if row.note_id is not None else {}),
            },
            status=status,
            values=state.values if state is not None else {},
            interrupts={str(interrupt["id"]): [interrupt] for interrupt in waiting},
        )

    def _graph_named(self, value: MetadataValue) -> str | None:
        """The served graph a ``graph_id`` or ``assistant_id`` names (its name or UUID)."""
        for name in self._executor.graph_names:
            if value in (name, assistant_uuid(name)):
                return name
        return None

    async def audit(self, owner: Principal, thread_id: str) -> AuditTrail:
        async with self._db.read() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)
            records = await list_audit(conn, owner, thread_id)
        return AuditTrail(thread_id=thread_id, records=records)

    async def transcript(self, owner: Principal, thread_id: str) -> Transcript:
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
            entries = await read_transcript(conn, thread_id) if row.transcript_kept else None
        if entries is None:  # a thread from before the transcript table, not written to since
            entries = await checkpoint_transcript(self._executor.graph(row.graph), thread_id)
        return Transcript(
            thread_id=thread_id,
            messages=[
                TranscriptMessage(message_id=e.message_id, role=e.role, content=e.content)
                for e in entries
            ],
        )

    async def tool_calls(self, owner: Principal, thread_id: str) -> ToolCallList:
        async with self._db.read() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)
            records = await list_tool_calls(conn, thread_id)
        return ToolCallList(
            thread_id=thread_id,
            tool_calls=[
                ToolCall(
                    tool_call_id=r.tool_call_id,
                    run_id=r.run_id,
                    name=r.name,
                    args=r.args,
                    message_id=r.message_id,
                    status=r.status,
                    content=r.content,
                    content_chars=r.content_chars,
                    truncated=r.truncated,
                    created_at=r.created_at,
                    finished_at=r.finished_at,
                    after_message_id=r.after_message_id,
                )
                for r in records
            ],
        )


def sdk_status(row: ThreadRecord) -> SdkThreadStatus:
    """The SDK's status of a thread whose status is as a reader sees it now."""
    if row.status == "running":
        return "busy"
    if row.status == "awaiting_consent":
        return "interrupted"
    return "error" if row.last_reason in FAILED_REASONS else "idle"


def _status_filter(status: SdkThreadStatus | None) -> dict[str, Any]:
    """``search_threads``' filters for the SDK's status."""
    if status == "busy":
        return {"status": "running"}
    if status == "interrupted":
        return {"status": "awaiting_consent"}
    if status == "error":
        return {"status": "idle", "last_reason_in": FAILED_REASONS}
    if status == "idle":
        return {"status": "idle", "last_reason_not_in": FAILED_REASONS}
    return {}
