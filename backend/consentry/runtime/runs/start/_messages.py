"""A new message: the consents it closes, the thread it creates or names, the run it starts.

A run starts with a ``message`` (the shorthand for ``{"messages": [this user message]}``, given
with the thread's ``project_id`` and ``note_id``) or with the graph's own ``input``: checked
against the graph's input fields (``consentry_graphs.graph_io``: unknown fields and values that
do not fit their type are 422 ``invalid_input``, each named in ``details.errors``), its messages
made messages, every other value given as sent. The thread's ``project_id`` and ``note_id`` are
added to an ``input`` only for a graph whose input has those fields, and only when the ``input``
does not set them itself (on the LangGraph SDK face, a run that names no note gets the thread's:
``_targets``).

Everything that can be refused is refused before the run starts, as an HTTP error: an over-long
message (422 ``message_too_long``, also for each message of an ``input``), an input that does not
fit (422 ``invalid_input``; a ``message`` to a graph whose input has no ``messages`` too), a
message while a consent waits (409 ``consent_pending``, unless the request says to reject it),
another run on the thread (409 ``run_in_progress``). A run from an older checkpoint (a fork,
``_forks``) supersedes the consents instead: it leaves their branch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Command

from consentry.errors import ConflictError, ConsentryError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.consents import (
    SettledConsents,
    recorded_decisions,
    settle_pending,
    supersede_pending,
)
from consentry.runtime.runs.execute import (
    NOWHERE,
    ActiveRun,
    ClaimHold,
    GraphInput,
    GraphPosition,
    run_id_for,
)
from consentry.runtime.runs.start._forks import fork_source, write_fork
from consentry.runtime.runs.start._launcher import Launcher
from consentry.runtime.runs.start._targets import (
    RunTarget,
    refuse_if_running,
    run_in_progress,
    thread_exists,
)
from consentry.schemas.chat import ChatRequest
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.db.database import DbConnection, is_duplicate_key
from consentry.storage.threads import ThreadRecord
from consentry_graphs.graph_io import InputMismatchError, new_message_id

__all__ = ["start_message"]

_TITLE_CHARS = 80


async def start_message(
    launcher: Launcher,
    owner: Principal,
    target: RunTarget,
    request: ChatRequest,
    key: ClaimHold | None,
    *,
    max_message_chars: int,
) -> ActiveRun:
    if request.continues:
        return await _continue(launcher, owner, target, key)
    graph_input = _graph_input(target, request, max_message_chars=max_message_chars)
    run_id, now = run_id_for(key), launcher.clock()
    refuse_if_running(target)
    fork = None
    if request.fork_point is not None:
        fork = await fork_source(launcher.executor, target, request.fork_point)
    position = NOWHERE
    if fork is None and (target.status == "awaiting_consent" or target.stopped_half_way):
        position = await launcher.executor.position(target.spec, target.thread_id)
    try:
        started = (graph_input, run_id, now, position, fork)
        return await _start(launcher, owner, target, request, key, *started)
    except Exception as exc:
        if target.chosen_id and is_duplicate_key(exc):  # created meanwhile by another request
            raise await _created_meanwhile(launcher, owner, target.thread_id) from None
        raise


async def _continue(
    launcher: Launcher, owner: Principal, target: RunTarget, key: ClaimHold | None
) -> ActiveRun:
    """A run with no input: the graph goes on from the thread's newest checkpoint, whose next
    nodes (a state update's, say) have not run. 409 ``consent_pending`` while it waits for a
    consent (a decision goes on from there), ``nothing_to_continue`` when no node is next."""
    refuse_if_running(target)
    position = NOWHERE
    if not target.is_new:
        position = await launcher.executor.position(target.spec, target.thread_id)
    async with launcher.db.read() as conn:  # decided, but the run that carried them stopped
        recorded = await recorded_decisions(conn, target, position.waiting)
    if undecided := position.waiting - recorded.keys():
        raise ConflictError(
            "This thread waits for a consent: decide it (a `command`) to go on.",
            code="consent_pending",
            details={"thread_id": target.thread_id, "pending": sorted(undecided)},
        )
    if not position.unfinished and not recorded:
        raise ConflictError(
            "The thread's graph has no node to run next: send an `input`.",
            code="nothing_to_continue",
            details={"thread_id": target.thread_id},
        )
    if recorded:  # as the decision's own run would have
        return await launcher.continue_with(
            owner, target, [Command(resume=recorded)], "resume", key, position=position
        )
    return await launcher.continue_with(owner, target, [None], "message", key, position=position)


async def _created_meanwhile(
    launcher: Launcher, owner: Principal, thread_id: str
) -> ConsentryError:
    """The answer to a request that lost the race to create the thread its client named: the
    owner's own (another request of theirs started its first run) or another owner's."""
    async with launcher.db.read() as conn:
        found = await threads_repo.get_thread_or_taken(conn, owner, thread_id)
    return (
        run_in_progress(thread_id) if isinstance(found, ThreadRecord) else thread_exists(thread_id)
    )


async def _start(
    launcher: Launcher,
    owner: Principal,
    target: RunTarget,
    request: ChatRequest,
    key: ClaimHold | None,
    graph_input: dict[str, Any],
    run_id: str,
    now: datetime,
    position: GraphPosition,
    fork: CheckpointTuple | None,
) -> ActiveRun:
    async with launcher.db.write() as conn:
        if target.is_new:
            await threads_repo.create_thread(
                conn,
                owner,
                thread_id=target.thread_id,
                graph=target.spec.name,
                project_id=target.project_id,
                note_id=target.note_id,
                title=_title(target, request, graph_input),
                consent_policy=target.consent_policy,
                now=now,
            )
            if target.chosen_id:  # what a deletion that stopped half-way left under the id
                await launcher.executor.forget_checkpoints(conn, target.spec.name, target.thread_id)
        elif target.never_ran:  # created before its first run (POST /threads): titled now
            title = _title(target, request, graph_input)
            await threads_repo.set_first_title(conn, target.thread_id, title)
        if not target.is_new and target.note_id is not None and target.remembered_note_id is None:
            await threads_repo.remember_note(conn, target.thread_id, target.note_id)
        settled = SettledConsents()
        if fork is not None:  # the head leaves the branch its consents wait on
            forked = str(fork.config["configurable"]["checkpoint_id"])
            await supersede_pending(
                conn, owner, target.thread_id, run_id=run_id, checkpoint_id=forked, now=now
            )
            await write_fork(launcher.executor, conn, target, fork)
            inputs: list[GraphInput] = [graph_input]
        else:
            settled, inputs = await _before_message(
                conn, owner, target, request, run_id, now, position
            )
            inputs.append(graph_input)
        # The claim expects the status this request was checked against: if another run
        # started or ended in between, this one gets `run_in_progress` instead of acting on
        # stale facts (e.g. cancelling a consent that was asked a moment ago).
        claim = await launcher.claim(conn, owner, target, run_id, "message", now, inputs, key)
    launcher.count_decisions(settled.closed, now)
    return await launcher.launch(owner, target, run_id, claim, "message", inputs, position=position)


async def _before_message(
    conn: DbConnection,
    owner: Principal,
    target: RunTarget,
    request: ChatRequest,
    run_id: str,
    now: datetime,
    position: GraphPosition,
) -> tuple[SettledConsents, list[GraphInput]]:
    """The thread's consents closed before a message on its head, and what the graph is given
    before the message: the decisions (and expiries) that take it past them, or the rest of a
    decided consent's run that stopped half-way."""
    waiting = position.waiting
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
    return settled, inputs


def _graph_input(
    target: RunTarget, request: ChatRequest, *, max_message_chars: int
) -> dict[str, Any]:
    """What the graph starts with for this request, checked (422 before anything is stored)."""
    io = target.spec.io
    if request.input is None:
        message = request.message or ""
        _check_length(message, max_message_chars)
        if io is not None and not io.takes("messages"):
            raise _invalid_input(
                target,
                [
                    {
                        "loc": ["message"],
                        "msg": "this graph's input has no `messages`: send its `input` instead",
                        "type": "no_messages_field",
                    }
                ],
            )
        return {
            "messages": [HumanMessage(message, id=new_message_id())],
            "project_id": target.project_id,
            "note_id": target.note_id,
        }
    if io is None:  # a graph the server did not describe: nothing to check against
        return dict(request.input)
    try:
        values = io.check_input(request.input)
    except InputMismatchError as exc:
        errors = [{"loc": ["input", *p.loc], "msg": p.msg, "type": p.type} for p in exc.problems]
        raise _invalid_input(target, errors) from None
    for name in io.message_fields & values.keys():
        for message in values[name]:
            _check_length(message.text, max_message_chars)
    if io.input_fields is not None:  # the thread's context, for a graph whose input has it
        for name, value in (("project_id", target.project_id), ("note_id", target.note_id)):
            if io.takes(name):
                values.setdefault(name, value)
    return values


def _check_length(text: str, max_message_chars: int) -> None:
    if len(text) > max_message_chars:
        raise InvalidRequestError(
            f"The message is longer than {max_message_chars} characters (max_message_chars).",
            code="message_too_long",
            details={"limit": "max_message_chars", "max": max_message_chars},
        )


def _invalid_input(target: RunTarget, errors: list[dict[str, Any]]) -> InvalidRequestError:
    return InvalidRequestError(
        f"The input does not fit graph {target.spec.name!r} (its input schema: GET /v1/graphs).",
        code="invalid_input",
        details={"graph": target.spec.name, "errors": errors},
    )


def _title(target: RunTarget, request: ChatRequest, graph_input: Mapping[str, Any]) -> str:
    """A new thread's title: its message, or the first user message of its input, or the
    input's fields and values, or else the graph's name."""
    said = [
        m.text
        for value in graph_input.values()
        if isinstance(value, list)
        for m in value
        if isinstance(m, HumanMessage) and m.text.strip()
    ]
    if request.message is not None:
        text = request.message
    elif said:
        text = said[0]
    else:
        text = ", ".join(f"{k}: {_shown(v)}" for k, v in (request.input or {}).items())
    return " ".join(text.split())[:_TITLE_CHARS] or target.spec.name


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
