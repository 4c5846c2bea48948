"""A new message: the consents it closes, the thread it creates or names, the run it starts.

Everything that can be refused is refused before the run starts, as an HTTP error: an over-long
message (422), a message while a consent waits (409 ``consent_pending``, unless the request says
to reject it), another run on the thread (409 ``run_in_progress``).
"""

from __future__ import annotations

from uuid import uuid4

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from consentry.errors import InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.consents import recorded_decisions, settle_pending
from consentry.runtime.guards import KeyHold
from consentry.runtime.runs._launcher import Launcher
from consentry.runtime.runs._run_types import NOWHERE, ActiveRun, GraphInput
from consentry.runtime.runs._targets import RunTarget, refuse_if_running
from consentry.schemas.chat import ChatRequest
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo

__all__ = ["start_message"]

_TITLE_CHARS = 80


async def start_message(
    launcher: Launcher,
    owner: Principal,
    target: RunTarget,
    request: ChatRequest,
    key: KeyHold | None,
    *,
    max_message_chars: int,
) -> ActiveRun:
    message = request.message or ""
    if len(message) > max_message_chars:
        raise InvalidRequestError(
            f"The message is longer than {max_message_chars} characters (max_message_chars).",
            code="message_too_long",
            details={"limit": "max_message_chars", "max": max_message_chars},
        )
    run_id, now = str(uuid4()), launcher.clock()
    refuse_if_running(target)
    position = NOWHERE
    if target.status == "awaiting_consent" or target.stopped_half_way:
        position = await launcher.executor.position(target.spec, target.thread_id)
    waiting = position.waiting
    async with launcher.db.write() as conn:
        if target.is_new:
            await threads_repo.create_thread(
                conn,
                owner,
                thread_id=target.thread_id,
                graph=target.spec.name,
                project_id=target.project_id,
                note_id=target.note_id,
                title=" ".join(message.split())[:_TITLE_CHARS],
                consent_policy=target.consent_policy,
                now=now,
            )
        elif target.note_id is not None and target.remembered_note_id is None:
            await threads_repo.remember_note(conn, target.thread_id, target.note_id)
        recorded = await recorded_decisions(conn, target, waiting)
        settled = await settle_pending(
            conn, owner, target, request, run_id, waiting - recorded.keys(), now
        )
        continue_decision = (
            target.stopped_half_way
            and await runs_repo.last_run_trigger(conn, target.thread_id) == "resume"
        )
        inputs: list[GraphInput] = []
        if recorded or settled.resumes:
            inputs.append(Command(resume={**recorded, **settled.resumes}))
        # A decided consent whose run stopped half-way is honoured before the new message.
        elif continue_decision and position.unfinished:
            inputs.append(None)
        inputs.append(
            {
                "messages": [HumanMessage(message, id=f"msg-{uuid4().hex}")],
                "project_id": target.project_id,
                "note_id": target.note_id,
            }
        )
        # The claim expects the status this request was checked against: if another run
        # started or ended in between, this one gets `run_in_progress` instead of acting on
        # stale facts (e.g. cancelling a consent that was asked a moment ago).
        claim = await launcher.claim(conn, owner, target, run_id, "message", now, inputs, key)
    launcher.count_decisions(settled.closed, now)
    return await launcher.launch(owner, target, run_id, claim, "message", inputs)
