"""Starting runs: validate the request, claim the thread, and hand the run to the executor.

Everything that can be refused is refused here, before the SSE response starts, as an HTTP error:
unknown or foreign ids (404), a busy thread or a decision that is not for the pending consent
(409), a decision or an edit the consent does not allow (422). A resume reaches LangGraph only
after the approval was moved ``pending → decided`` by compare-and-set, in the same transaction
that claims the thread: a double click or a second tab gets 409, never a second resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import uuid4

from langchain_core.messages import HumanMessage
from langgraph.types import Command
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.errors import ConflictError, InvalidRequestError, NotFoundError
from backend.principal import Principal
from backend.runtime.clock import Clock
from backend.runtime.executor import SEQ_RESERVATION, ActiveRun, GraphInput, RunExecutor
from backend.schemas.chat import ChatRequest, ResumeDecision
from backend.storage import approvals as approvals_repo
from backend.storage import notes as notes_repo
from backend.storage import threads as threads_repo
from backend.storage.database import Database
from graphs.consent import ConsentDecision
from graphs.registry import GraphSpec

__all__ = ["RunStarter"]

_TITLE_CHARS = 80


@dataclass(frozen=True)
class _Target:
    thread_id: str
    spec: GraphSpec
    project_id: str
    note_id: str | None
    is_new: bool
    status: str
    last_reason: str | None

    @property
    def stopped_half_way(self) -> bool:
        """The last run failed or was cancelled: the graph may have work left to continue."""
        return self.last_reason in ("failed", "cancelled")


@dataclass(frozen=True)
class _Claimed:
    """A thread claimed for a run, and what the run starts the graph with."""

    run_id: str
    last_seq: int
    graph_inputs: list[GraphInput]


class RunStarter:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        graphs: dict[str, GraphSpec],
        clock: Clock,
        max_message_chars: int,
    ) -> None:
        self._db = db
        self._executor = executor
        self._graphs = graphs
        self._clock = clock
        self._max_message_chars = max_message_chars

    async def start(self, owner: Principal, request: ChatRequest) -> ActiveRun:
        target = await self._resolve(owner, request)
        if request.resume is not None:
            claimed = await self._claim_for_resume(owner, target, request.resume)
        else:
            assert request.message is not None
            claimed = await self._claim_for_message(owner, target, request.message)
        return self._executor.launch(
            owner,
            spec=target.spec,
            thread_id=target.thread_id,
            run_id=claimed.run_id,
            last_seq=claimed.last_seq,
            trigger="resume" if request.resume is not None else "message",
            graph_inputs=claimed.graph_inputs,
        )

    async def _resolve(self, owner: Principal, request: ChatRequest) -> _Target:
        explicit_graph = "graph" in request.model_fields_set
        async with self._db.read() as conn:
            if request.thread_id is None:
                if request.resume is not None:
                    raise InvalidRequestError(
                        "A `resume` needs the `thread_id` of its consent.",
                        details={"field": "thread_id"},
                    )
                spec = self._spec(request.graph)
                project_id = request.project_id
                if project_id is not None:
                    await notes_repo.get_project(conn, owner, project_id)
                thread_id, status, is_new, last_reason = str(uuid4()), "idle", True, None
            else:
                row = await threads_repo.get_thread(conn, owner, request.thread_id)
                if explicit_graph and request.graph != row.graph:
                    raise InvalidRequestError(
                        f"Thread {row.id!r} runs graph {row.graph!r}, not {request.graph!r}.",
                        code="graph_mismatch",
                        details={"graph": row.graph},
                    )
                if request.project_id is not None and request.project_id != row.project_id:
                    await notes_repo.get_project(conn, owner, request.project_id)
                    raise InvalidRequestError(
                        f"Thread {row.id!r} belongs to project {row.project_id!r}.",
                        code="project_mismatch",
                        details={"project_id": row.project_id},
                    )
                spec = self._spec(row.graph)
                thread_id, project_id, status, is_new = row.id, row.project_id, row.status, False
                last_reason = row.last_reason
            note_id = request.note_id
            if note_id is not None:
                note = await notes_repo.get_note(conn, owner, note_id)
                if project_id is None:
                    project_id = note.project_id
                elif note.project_id != project_id:
                    raise NotFoundError.of("note", note_id)
        if project_id is None:
            async with self._db.write() as conn:
                project_id = await notes_repo.default_project_id(conn, owner, now=self._clock())
        return _Target(thread_id, spec, project_id, note_id, is_new, status, last_reason)

    def _spec(self, name: str) -> GraphSpec:
        spec = self._graphs.get(name)
        if spec is None:
            raise NotFoundError(
                f"No graph named {name!r}.",
                code="graph_not_found",
                details={"graph": name, "available": sorted(self._graphs)},
            )
        return spec

    async def _claim_for_message(self, owner: Principal, target: _Target, message: str) -> _Claimed:
        if len(message) > self._max_message_chars:
            raise InvalidRequestError(
                f"The message is longer than {self._max_message_chars} characters.",
                code="message_too_long",
                details={"max_chars": self._max_message_chars},
            )
        run_id, now = str(uuid4()), self._clock()
        async with self._db.write() as conn:
            if target.is_new:
                await threads_repo.create_thread(
                    conn,
                    owner,
                    thread_id=target.thread_id,
                    graph=target.spec.name,
                    project_id=target.project_id,
                    title=" ".join(message.split())[:_TITLE_CHARS],
                    now=now,
                )
            else:
                await approvals_repo.expire_approvals(conn, target.thread_id, now=now)
                pending = await approvals_repo.pending_approvals(conn, target.thread_id)
                if pending:
                    raise ConflictError(
                        "This thread is waiting for your decision on a consent request; "
                        "approve, edit or reject it first.",
                        code="consent_pending",
                        details={"approval_id": pending[0].id},
                    )
            continue_decision = (
                target.stopped_half_way
                and await threads_repo.last_run_trigger(conn, target.thread_id) == "resume"
            )
            last_seq = await self._claim(
                conn, target.thread_id, run_id, now, expected=("idle", "awaiting_consent")
            )
            await threads_repo.start_run(
                conn, run_id=run_id, thread_id=target.thread_id, trigger="message", now=now
            )
        graph_input: dict[str, Any] = {
            "messages": [HumanMessage(message, id=f"msg-{uuid4().hex}")],
            "project_id": target.project_id,
            "note_id": target.note_id,
        }
        # A decided consent whose run stopped half-way is honoured before the new message.
        if continue_decision and await self._executor.has_unfinished_work(
            target.spec, target.thread_id
        ):
            return _Claimed(run_id, last_seq, [None, graph_input])
        return _Claimed(run_id, last_seq, [graph_input])

    async def _claim_for_resume(
        self, owner: Principal, target: _Target, resume: ResumeDecision
    ) -> _Claimed:
        now = self._clock()
        async with self._db.read() as conn:
            approval = await approvals_repo.find_approval(conn, owner, resume.approval_id)
            pending = await approvals_repo.pending_approvals(conn, target.thread_id)
        if approval is None:
            if pending:
                raise NotFoundError.of("approval", resume.approval_id)
            raise ConflictError(
                "This thread has no pending consent to decide.",
                code="no_pending_consent",
                details={"thread_id": target.thread_id},
            )
        if approval.thread_id != target.thread_id:
            raise ConflictError(
                "This consent does not belong to this thread.",
                code="approval_not_pending",
                details={"approval_id": approval.id, "pending": [row.id for row in pending]},
            )
        if approval.status != "pending":
            if await self._is_retry_of_unfinished_decision(target, approval, resume):
                return await self._claim_continuation(target, now)
            code = (
                "approval_expired" if approval.status == "expired" else "approval_already_decided"
            )
            raise ConflictError(
                f"This consent was already {approval.status}.",
                code=code,
                details={"approval_id": approval.id, "status": approval.status},
            )
        if approval.expires_at <= now:
            async with self._db.write() as conn:
                await approvals_repo.expire_approvals(conn, target.thread_id, now=now)
            raise ConflictError(
                "This consent request has expired; nothing was changed.",
                code="approval_expired",
                details={"approval_id": approval.id, "status": "expired"},
            )
        self._check_decision(target.spec, approval.event, resume)
        if resume.approval_id not in await self._executor.pending_interrupt_ids(
            target.spec, target.thread_id
        ):
            raise ConflictError(
                "The graph is not waiting for this consent.",
                code="approval_not_pending",
                details={"approval_id": resume.approval_id},
            )
        decision = ConsentDecision(
            approval_id=resume.approval_id,
            decision=resume.decision,
            edited=resume.edited,
            comment=resume.comment,
            decided_by=owner.display,
        )
        run_id = str(uuid4())
        status = {"approve": "approved", "edit": "edited", "reject": "rejected"}[resume.decision]
        async with self._db.write() as conn:
            decided = await approvals_repo.decide_approval(
                conn,
                resume.approval_id,
                status=status,
                decided_by=owner.display,
                decision=decision.model_dump(mode="json"),
                now=now,
            )
            if not decided:
                raise ConflictError(
                    "This consent was decided a moment ago, by another request.",
                    code="approval_already_decided",
                    details={"approval_id": resume.approval_id},
                )
            last_seq = await self._claim(
                conn, target.thread_id, run_id, now, expected=("awaiting_consent",)
            )
            await threads_repo.start_run(
                conn, run_id=run_id, thread_id=target.thread_id, trigger="resume", now=now
            )
        command: Command[Any] = Command(
            resume={resume.approval_id: decision.model_dump(mode="json")}
        )
        return _Claimed(run_id, last_seq, [command])

    async def _is_retry_of_unfinished_decision(
        self, target: _Target, approval: Any, resume: ResumeDecision
    ) -> bool:
        """The same decision, sent again after the run that carried it stopped half-way."""
        recorded = approval.decision or {}
        return (
            target.status == "idle"
            and target.stopped_half_way
            and (recorded.get("decision"), recorded.get("edited"))
            == (resume.decision, resume.edited)
            and await self._executor.has_unfinished_work(target.spec, target.thread_id)
        )

    async def _claim_continuation(self, target: _Target, now: datetime) -> _Claimed:
        run_id = str(uuid4())
        async with self._db.write() as conn:
            last_seq = await self._claim(conn, target.thread_id, run_id, now, expected=("idle",))
            await threads_repo.start_run(
                conn, run_id=run_id, thread_id=target.thread_id, trigger="resume", now=now
            )
        return _Claimed(run_id, last_seq, [None])

    @staticmethod
    def _check_decision(spec: GraphSpec, consent: dict[str, Any], resume: ResumeDecision) -> None:
        allowed = consent.get("allowed_decisions", [])
        if resume.decision not in allowed:
            raise InvalidRequestError(
                f"Decision {resume.decision!r} is not allowed here; allowed: {allowed}.",
                code="decision_not_allowed",
                details={"allowed_decisions": allowed},
            )
        kind = spec.consent_kinds.get(consent.get("kind", ""))
        if resume.decision == "edit" and kind is not None and resume.edited is not None:
            try:
                kind.parse_edit(resume.edited)
            except ValidationError as exc:
                raise InvalidRequestError(
                    "The edit is not valid; the consent is still pending.",
                    code="invalid_edit",
                    details={
                        "errors": exc.errors(
                            include_url=False, include_context=False, include_input=False
                        )
                    },
                ) from None

    @staticmethod
    async def _claim(
        conn: AsyncConnection,
        thread_id: str,
        run_id: str,
        now: datetime,
        *,
        expected: tuple[str, ...],
    ) -> int:
        last_seq = await threads_repo.claim_thread(
            conn, thread_id, run_id=run_id, expected=expected, reserve=SEQ_RESERVATION, now=now
        )
        if last_seq is None:
            raise ConflictError(
                "Another run is active on this thread; wait for its final event.",
                code="thread_busy",
                details={"thread_id": thread_id},
            )
        return last_seq
