"""A run's events as AG-UI events (a ``StreamFace``): the run service's stored log and tokens,
projected, typed with the official models (``ag-ui-protocol``) and framed by its encoder.

- ``run_started`` → ``RUN_STARTED`` (the client's ``runId``; Consentry's in ``metadata``);
- ``step`` → ``STEP_STARTED``, and ``STEP_FINISHED`` of the step before it (the last one's at
  the run's end);
- ``token`` → ``TEXT_MESSAGE_START`` (its message's first) and ``TEXT_MESSAGE_CONTENT``;
  ``message`` → ``TEXT_MESSAGE_END``, or the whole message (start, content, end) when this
  stream carried none of its tokens (a replay: tokens are not stored);
- ``tool_call`` → ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (the arguments as JSON),
  ``TOOL_CALL_END``; ``tool_result`` → ``TOOL_CALL_RESULT``;
- ``note``, ``model_retry`` → ``CUSTOM`` (``consentry.note``, ``consentry.model_retry``);
- ``consent`` → an interrupt of ``RUN_FINISHED``'s outcome (``_interrupts``);
- ``final`` → ``STATE_SNAPSHOT`` (the graph's state after the run's last step, as LangGraph
  streamed it to this stream; read from the checkpoint when the stream got none: a replay), then
  ``RUN_FINISHED`` (``success``, ``interrupt`` or ``cancelled``) or ``RUN_ERROR`` (the run's
  ``error`` code).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from consentry.api.agui._interrupts import Interrupts, tool_call_key
from consentry.principal import Principal
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import (
    RunSuspendedError,
    ThreadReader,
    graph_output_mode,
    split_output,
)
from consentry.schemas.events import ConsentEvent

__all__ = ["AguiStream", "error_frames"]

_ENCODER = EventEncoder()
_CUSTOM = frozenset({"note", "model_retry"})
_ENVELOPE = frozenset({"thread_id", "run_id", "seq", "ts", "type"})
_FAILED = {
    "step_limit": "The run reached its step limit.",
    "timeout": "The run took longer than its time limit.",
    "budget_exhausted": "The run used up its model-token budget.",
}
"""Reasons a run stopped short, said when no ``error`` event said it first."""


def _frame(event: BaseEvent) -> bytes:
    return _ENCODER.encode(event).encode()


def _frames(events: list[BaseEvent]) -> bytes:
    return b"".join(_frame(event) for event in events)


def error_frames(
    thread_id: str,
    run_id: str,
    *,
    code: str,
    message: str,
    status: int,
    details: dict[str, Any],
) -> bytes:
    """A refused run as AG-UI says it: ``RUN_ERROR`` with Consentry's ``code``, and in its
    ``metadata`` the HTTP status ``/v1`` answers and the error's ``details`` (a client reads a
    run's errors only from a stream)."""
    metadata = {"thread_id": thread_id, "run_id": run_id, "status": status, "details": details}
    return _frame(RunErrorEvent(message=message, code=code, metadata=metadata))


class AguiStream:
    """The AG-UI events of one run (a ``StreamFace``)."""

    graph_modes: frozenset[str] = frozenset({"values"})
    """The state after each step, asked of the run (never stored): the last one is the
    ``STATE_SNAPSHOT`` of the run's end, without reading the checkpoint again."""
    kept = False
    """Nothing kept for a join to replay (AG-UI has no join)."""

    def __init__(
        self,
        reader: ThreadReader,
        owner: Principal,
        *,
        graph: str,
        client_run_id: str,
        interrupts: Interrupts,
    ) -> None:
        self._reader = reader
        self._owner = owner
        self._graph = graph
        self._client_run_id = client_run_id
        self._interrupts = interrupts

    def headers(self, thread_id: str, run_id: str | None) -> dict[str, str]:
        return {}

    async def frames(self, events: AsyncIterator[OutgoingEvent]) -> AsyncGenerator[bytes, None]:
        """The AG-UI frames of each event, sent together (one write for a step's end and the
        next one's start, a tool call's three, a run's last ones)."""
        run = _Run(self._client_run_id)
        try:
            async for event in events:
                if graph_output_mode(event.type) is not None:  # only `values` is asked for
                    head, chunk = split_output(event.data)
                    if "ns" not in head:  # the graph's own, not a subgraph's
                        run.values = chunk
                    continue
                data: dict[str, Any] = json.loads(event.data)
                if event.type == "final":
                    ending = [*run.close_messages(), *run.close_step()]
                    yield _frames([*ending, *await self._ending(run, data)])
                    return
                if projected := run.project(event.type, data):
                    yield _frames(projected)
        except RunSuspendedError:
            # The server is shutting down and another process continues the run: AG-UI has no
            # reconnect, so the client is told the run stopped here (its next run resumes it).
            yield _frame(
                RunErrorEvent(
                    message="The server restarted; the run goes on elsewhere. Send again to "
                    "follow the thread.",
                    code="run_suspended",
                )
            )

    async def _ending(self, run: _Run, final: dict[str, Any]) -> list[BaseEvent]:
        thread_id, reason = final["thread_id"], final["reason"]
        if run.values is not None:
            snapshot = json.loads(run.values)
        else:  # a replay: per-step states are not stored
            state = await self._reader.graph_state(self._owner, thread_id, graph=self._graph)
            snapshot = state.values
        ending: list[BaseEvent] = [StateSnapshotEvent(snapshot=snapshot)]
        if reason == "failed" or reason in _FAILED:
            code, message = run.error or (reason, _FAILED.get(reason, "The run failed."))
            ending.append(RunErrorEvent(message=message, code=code))
            return ending
        outcome: Any
        consents = run.consents
        if reason == "interrupted" and (run.trigger != "message" or not consents):
            # A message closes every consent before it runs: what its run asked is all that
            # waits. A run of decisions may leave others waiting (a parallel branch's, asked
            # before): every open interrupt is the client's to answer, so all are read.
            consents = await self._reader.pending_consents(self._owner, thread_id)
        if reason == "interrupted" and consents:
            outcome = RunFinishedInterruptOutcome(
                interrupts=[self._interrupts.of(c, run.tool_calls) for c in consents]
            )
        elif reason == "cancelled":
            outcome = RunFinishedCancelledOutcome()
        else:  # completed, or expired (a consent expired and the graph took its expired path)
            # Calls left unanswered (a frontend tool's): the page answers them in the next input.
            pending = [c for c in run.call_ids if c not in run.tool_results]
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None)
        ending.append(
            RunFinishedEvent(thread_id=thread_id, run_id=self._client_run_id, outcome=outcome)
        )
        return ending


class _Run:
    """What a stream has sent of its run so far."""

    def __init__(self, client_run_id: str) -> None:
        self.client_run_id = client_run_id
        self.step: str | None = None
        self.open_messages: set[str] = set()
        self.renamed: dict[str, str] = {}
        """Messages streamed again after a model retry, by the id the client knows them by."""
        self.consents: list[ConsentEvent] = []
        self.tool_calls: dict[str, str] = {}
        """Each tool call's id by its name and arguments (a review's consent names none)."""
        self.call_ids: dict[str, None] = {}
        """The run's tool calls, in order."""
        self.tool_results: set[str] = set()
        self.error: tuple[str, str] | None = None
        self.trigger = ""
        """What started the run: ``message``, ``resume``…"""
        self.values: str | None = None
        """The graph's state after the run's last step, as JSON, when the run streamed it."""

    def close_messages(self) -> list[BaseEvent]:
        """Messages whose tokens came and whose ``message`` did not (the run stopped)."""
        ended: list[BaseEvent] = [
            TextMessageEndEvent(message_id=self._shown(m)) for m in self.open_messages
        ]
        self.open_messages.clear()
        return ended

    def close_step(self) -> list[BaseEvent]:
        if self.step is None:
            return []
        step, self.step = self.step, None
        return [StepFinishedEvent(step_name=step)]

    def project(self, kind: str, data: dict[str, Any]) -> list[BaseEvent]:
        if kind == "run_started":
            self.trigger = data["trigger"]
            return [
                RunStartedEvent(
                    thread_id=data["thread_id"],
                    run_id=self.client_run_id,
                    metadata={"consentry_run_id": data["run_id"], "graph": data["graph"]},
                )
            ]
        if kind == "step":
            started = StepStartedEvent(step_name=data["node"])
            closed = self.close_step()
            self.step = data["node"]
            return [*closed, started]
        if kind == "token":
            return self._token(data["message_id"], data["delta"])
        if kind == "message":
            return self._message(data["message_id"], data["content"])
        if kind == "tool_call":
            return self._tool_call(data)
        if kind == "tool_result":
            self.tool_results.add(data["tool_call_id"])
            return [
                ToolCallResultEvent(
                    message_id=f"{data['tool_call_id']}:result",
                    tool_call_id=data["tool_call_id"],
                    content=data["content"],
                    role="tool",
                )
            ]
        if kind == "consent":
            self.consents.append(ConsentEvent.model_validate(data))
            return []
        if kind in _CUSTOM:
            fields = {k: v for k, v in data.items() if k not in _ENVELOPE}
            frames: list[BaseEvent] = [CustomEvent(name=f"consentry.{kind}", value=fields)]
            discarded = data.get("discard_message_id")
            if discarded in self.open_messages:
                # The next attempt streams the message again from its start. AG-UI cannot take
                # back the text a client has: it ends, and the message goes on under an id of
                # its own, so the text is not appended to the void attempt's.
                self.open_messages.discard(discarded)
                frames.append(TextMessageEndEvent(message_id=self._shown(discarded)))
                self.renamed[discarded] = f"{discarded}:retry{data['attempt']}"
            return frames
        if kind == "error":
            self.error = (data["code"], data["message"])
        return []

    def _shown(self, message_id: str) -> str:
        """The id the client knows the message by (a retried one's is its own)."""
        return self.renamed.get(message_id, message_id)

    def _token(self, message_id: str, delta: str) -> list[BaseEvent]:
        frames: list[BaseEvent] = []
        shown = self._shown(message_id)
        if message_id not in self.open_messages:
            self.open_messages.add(message_id)
            frames.append(TextMessageStartEvent(message_id=shown, role="assistant"))
        if delta:
            frames.append(TextMessageContentEvent(message_id=shown, delta=delta))
        return frames

    def _message(self, message_id: str, content: str) -> list[BaseEvent]:
        shown = self._shown(message_id)
        if message_id in self.open_messages:
            self.open_messages.discard(message_id)
            return [TextMessageEndEvent(message_id=shown)]
        whole: list[BaseEvent] = [TextMessageStartEvent(message_id=shown, role="assistant")]
        if content:
            whole.append(TextMessageContentEvent(message_id=shown, delta=content))
        whole.append(TextMessageEndEvent(message_id=shown))
        return whole

    def _tool_call(self, data: Mapping[str, Any]) -> list[BaseEvent]:
        call_id = data["tool_call_id"]
        self.tool_calls[tool_call_key(data["name"], data["args"])] = call_id
        self.call_ids[call_id] = None
        return [
            ToolCallStartEvent(
                tool_call_id=call_id,
                tool_call_name=data["name"],
                parent_message_id=data["message_id"],
            ),
            ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(data["args"])),
            ToolCallEndEvent(tool_call_id=call_id),
        ]
