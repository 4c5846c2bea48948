"""Reading threads: the caller's list, one thread with its pending consents, the transcript, the
tool calls, the audit trail. (Joining a thread's stream is ``_joins``.)"""

from __future__ import annotations

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import is_expired
from consentry.runtime.runs._executor import RunExecutor
from consentry.runtime.runs._transcripts import checkpoint_transcript
from consentry.schemas.audit import AuditTrail
from consentry.schemas.events import ConsentEvent
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
from consentry.storage.database import Database
from consentry.storage.tool_calls import list_tool_calls
from consentry.storage.transcript import read_transcript

__all__ = ["ThreadReader"]


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
