"""A LangGraph SDK run request made the run service's request (:class:`RunRequestMaker`): what it
is refused for by itself, its assistant, the thread it names made first (``if_not_exists``), the
older checkpoint it forks from, and the ``/v1/chat`` request it is. ``RunStart`` makes the
requests of runs asked now and of queued ones; the crons check with it the runs their ticks will
start (:meth:`RunRequestMaker.check_scheduled`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consentry.api.chat_requests import chat_request
from consentry.api.new_thread_ids import check_uuid
from consentry.api.sdk._breakpoints import breakpoints
from consentry.api.sdk._resume import decisions_for
from consentry.api.sdk._run_checks import check_body, refuse_without_thread
from consentry.api.sdk._run_options import run_options, stored_id
from consentry.errors import ConflictError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.assistants import Assistant, Assistants
from consentry.runtime.runs import ThreadReader, ThreadWriter
from consentry.runtime.webhooks import WebhookHosts
from consentry.schemas.chat import ChatRequest
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["RunRequestMaker"]


@dataclass(frozen=True)
class RunRequestMaker:
    """The run service's requests of one caller's SDK run requests."""

    owner: Principal
    threads: ThreadReader
    writer: ThreadWriter
    assistants: Assistants
    webhook_hosts: WebhookHosts
    _found: dict[str, Assistant] = field(default_factory=dict, repr=False)
    """The requests' assistants, once looked up."""

    def check(self, body: RunCreate) -> None:
        """What is refused before anything is stored (``check_body``), and a ``webhook`` the
        allow-list does not take (422 ``webhook_invalid``, ``webhook_not_allowed``)."""
        check_body(body)
        if body.webhook is not None:
            self.webhook_hosts.check(body.webhook)

    async def check_scheduled(self, body: RunCreate, *, on_thread: bool) -> None:
        """Refuse a run a cron's ticks would start as its request would be refused, before the
        cron is stored: its fields and webhook, its assistant (404), its breakpoints and options;
        on a new thread each tick (``on_thread`` False), a run without an ``input``."""
        self.check(body)
        if not on_thread and body.input is None:
            raise InvalidRequestError(
                "A cron without a thread starts each run on a new thread, from an `input`: "
                "send one.",
                code="invalid_input",
            )
        assistant = await self.assistant(body)
        graph = assistant.graph
        breakpoints(body, graph, self.assistants.nodes(graph))
        chat_request({"graph": graph, "input": body.input or {}} | run_options(body, assistant))

    async def assistant(self, body: RunCreate) -> Assistant:
        """The assistant the run is on: a served graph's own, or one of the caller's."""
        found = self._found.get(body.assistant_id)
        if found is None:
            found = await self.assistants.get(self.owner, body.assistant_id)
            self._found[body.assistant_id] = found
        return found

    async def fork_point(self, body: RunCreate, thread_id: str | None) -> str | None:
        """The older checkpoint of the thread a run branches from (a fork), or None: it names
        none, or the thread's newest (as ``useStream`` sends it), and continues. A decision
        answers what the newest waits for, and a run with no input goes on from it: with an
        older one, 409 ``checkpoint_not_head``."""
        asked = body.from_checkpoint
        if asked is None:
            return None
        head = None
        if thread_id is not None:
            head = await self.threads.head_checkpoint_id(self.owner, thread_id)
        if asked == head:
            return None
        if body.command is not None or body.input is None:
            raise ConflictError(
                "A `command` answers the consents the thread's newest checkpoint waits for, "
                "and a run with no `input` goes on from it: send that checkpoint, or none (a "
                "fork from an older one starts with an `input`).",
                code="checkpoint_not_head",
                details={"checkpoint_id": asked, "head_checkpoint_id": head},
            )
        return asked

    async def create_thread(self, body: RunCreate, thread_id: str | None) -> None:
        """``if_not_exists="create"``: the thread the path names, if it has none."""
        if thread_id is not None and body.if_not_exists == "create":
            check_uuid(thread_id)
            await self.writer.create(
                self.owner,
                thread_id=thread_id,
                metadata={"graph_id": (await self.assistant(body)).graph},
                if_exists="do_nothing",
            )

    async def chat_request(
        self, body: RunCreate, thread_id: str | None, *, queued: bool = False
    ) -> ChatRequest:
        """The ``/v1/chat`` request this run is, on the assistant's graph (a ``command`` as
        decisions on the consents the thread waits for now). ``queued``: a run that waited
        for its turn, whose ``checkpoint`` was checked when it was queued (the runs before it
        have moved the thread on since). An ``input`` from an older checkpoint is a fork."""
        assistant = await self.assistant(body)
        self.check(body)
        await self.create_thread(body, thread_id)
        if thread_id is None:
            refuse_without_thread(body)
        fork = None if queued else await self.fork_point(body, thread_id)

        before, after = breakpoints(body, assistant.graph, self.assistants.nodes(assistant.graph))

        def request(fields: dict[str, Any]) -> ChatRequest:
            sent = {"thread_id": thread_id, "graph": assistant.graph, **fields}
            made = chat_request(sent | run_options(body, assistant))
            made = made.posting_to(body.webhook, body.metadata)
            return made.on_assistant(stored_id(assistant)).at_breakpoints(before, after)

        if body.command is not None:
            assert thread_id is not None  # refused above
            pending = await self.threads.pending_consents(self.owner, thread_id)
            return request({"resume": decisions_for(body.command.resume, pending)})
        if body.input is None:  # the graph goes on as it stands
            return request({"input": {}}).continuing()
        # The note and project the thread is about, when its graph takes them as input (the
        # tutor): checked and remembered as `/v1/chat`'s fields are (404 `note_not_found`).
        named = {
            name: value
            for name in ("project_id", "note_id")
            if isinstance(value := body.input.get(name), str)
        }
        return request({"input": body.input, **named}).forked_from(fork)
