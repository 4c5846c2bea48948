"""The load generator: C simulated users, each with its own HTTP client, run consent
conversations in a closed loop (a user starts the next one when the last ended) until N are done.

A conversation is a message that reaches a consent (``POST /v1/chat``, timed to the ``consent``
event) and a decision on it (timed to ``final``), approving a fixed share of them and rejecting
the rest, on one of three graphs (``BenchGraph``): the tutor, ``consent_flow``, the five-node
consent graph without a model (``consentry_graphs.examples.consent_flow``), or ``memory_flow``,
the same with a Store search and a Store put per conversation
(``consentry_graphs.examples.memory_flow``). A tutor conversation asks a question first (a
summary of nothing discussed is not proposed), outside the message's timing. Every conversation
is checked: one consent and ``final`` ``interrupted``, then ``final`` ``completed`` with, for the
tutor, a ``note`` event exactly when approved, for ``consent_flow`` and ``memory_flow`` one
``message`` that says the change was applied when approved and cancelled when rejected. A
conversation that fails a check, or a request that fails, counts as an error.

The ``interrupt`` workload is the same conversation with a plain LangGraph graph instead of the
tutor (``consentry_graphs.examples.ask_city``, served as ``city``): its raw ``interrupt()`` is
the consent, answered with a value; ``final`` ``completed`` with one ``message`` is checked.

The ``sdk`` workload is the same conversation (the graph its ``assistant_id``) through the
LangGraph SDK's face, as ``useStream`` sends it: ``POST /runs/stream`` (``values`` and
``messages-tuple``) until ``end`` ``interrupted`` with ``__interrupt__`` in the last ``values``,
then ``POST /threads/{id}/runs/stream`` with ``command.resume`` (the kit's decision) until
``end`` ``success``.

The ``agui`` workload is the same conversation through AG-UI's face, as ``HttpAgent`` sends it:
``POST /v1/agui/{graph}`` with the message until ``RUN_FINISHED`` with an interrupt outcome,
then the same route with a ``resume`` entry (the kit's decision) until ``RUN_FINISHED``
``success``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from consentry_graphs.examples.consent_flow import APPLIED, CANCELLED

__all__ = [
    "CONSENT_FLOW_GRAPH",
    "INTERRUPT_GRAPH",
    "MEMORY_FLOW_GRAPH",
    "MESSAGE",
    "QUESTION",
    "BenchGraph",
    "ConversationError",
    "LoadResult",
    "Workload",
    "ask_in_thread",
    "run_load",
]

Workload = Literal["chat", "interrupt", "sdk", "agui"]
"""``chat``: the conversation through ``/v1/chat``; ``interrupt``: a raw ``interrupt()``
answered; ``sdk``: the conversation through the LangGraph SDK's face; ``agui``: through
AG-UI's."""
BenchGraph = Literal["tutor", "consent_flow", "memory_flow"]
"""The graph of a ``chat``, ``sdk`` or ``agui`` conversation."""
INTERRUPT_GRAPH = "city=consentry_graphs.examples.ask_city:graph"
"""What a server of the ``interrupt`` workload serves (``CONSENTRY_GRAPHS``)."""
CONSENT_FLOW_GRAPH = "consent_flow=consentry_graphs.examples.consent_flow:graph_spec"
"""What a Consentry serves for ``consent_flow`` conversations (``CONSENTRY_GRAPHS``)."""
MEMORY_FLOW_GRAPH = "memory_flow=consentry_graphs.examples.memory_flow:graph_spec"
"""What a Consentry serves for ``memory_flow`` conversations (``CONSENTRY_GRAPHS``)."""

MESSAGE = "Add a summary of our discussion to my note"
"""A message the tutor answers with a consent (a new note) on every server, once the thread
discussed ``QUESTION``: a tutor conversation is that question, this message, and the decision
(the message's latency is this message's alone)."""


@dataclass
class LoadResult:
    concurrency: int
    conversations: int
    seconds: float = 0.0
    message_seconds: list[float] = field(default_factory=list)
    """Per conversation: from sending the message to receiving its ``consent`` event."""
    decision_seconds: list[float] = field(default_factory=list)
    """Per conversation: from sending the decision to receiving ``final``."""
    errors: list[str] = field(default_factory=list)


class ConversationError(Exception):
    """A conversation did not go as the protocol says."""


async def run_load(
    base_url: str,
    *,
    concurrency: int,
    conversations: int,
    approve_ratio: float,
    headers: dict[str, str] | None = None,
    on_progress: Callable[[int], None] = lambda done: None,
    workload: Workload = "chat",
    graph: BenchGraph = "tutor",
) -> LoadResult:
    result = LoadResult(concurrency=concurrency, conversations=conversations)
    next_index = iter(range(conversations))
    done = 0

    async def user() -> None:
        nonlocal done
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=600, limits=limits
        ) as client:
            for index in next_index:
                approve = int((index + 1) * approve_ratio) > int(index * approve_ratio)
                try:
                    if workload == "interrupt":
                        timings = await _answered_interrupt(client)
                    elif workload == "sdk":
                        timings = await _sdk_conversation(client, approve=approve, graph=graph)
                    elif workload == "agui":
                        timings = await _agui_conversation(client, approve=approve, graph=graph)
                    else:
                        timings = await _conversation(client, approve=approve, graph=graph)
                except (ConversationError, httpx.HTTPError, ValueError) as exc:
                    result.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                else:
                    result.message_seconds.append(timings[0])
                    result.decision_seconds.append(timings[1])
                done += 1
                on_progress(done)

    started = time.perf_counter()
    await asyncio.gather(*(user() for _ in range(min(concurrency, conversations))))
    result.seconds = time.perf_counter() - started
    return result


async def _conversation(
    client: httpx.AsyncClient, *, approve: bool, graph: BenchGraph
) -> tuple[float, float]:
    ask: dict[str, Any] = {"message": MESSAGE}
    if graph == "tutor":  # the default graph: a summary needs a discussion first
        ask["thread_id"], _ = await ask_in_thread(client, None)
    else:
        ask["graph"] = graph
    started = time.perf_counter()
    asked, asked_at = await _stream(client, ask, until="consent")
    consents = [e for e in asked if e.get("type") == "consent"]
    if len(consents) != 1 or asked[-1].get("reason") != "interrupted":
        raise ConversationError(f"expected one consent then final interrupted, got {_kinds(asked)}")
    consent = consents[0]
    resume = {"approval_id": consent["approval_id"], "decision": "approve" if approve else "reject"}
    decided_at = time.perf_counter()
    done, ended_at = await _stream(
        client, {"thread_id": consent["thread_id"], "resume": resume}, until="final"
    )
    if done[-1].get("reason") != "completed":
        raise ConversationError(f"expected final completed, got {_kinds(done)}")
    if graph == "tutor":
        notes = sum(1 for e in done if e.get("type") == "note")
        if notes != (1 if approve else 0):
            raise ConversationError(f"expected {int(approve)} note event(s), got {_kinds(done)}")
    else:
        said = [str(e.get("content")) for e in done if e.get("type") == "message"]
        outcome = APPLIED if approve else CANCELLED
        if len(said) != 1 or not said[0].startswith(outcome):
            raise ConversationError(f"expected one message {outcome!r}…, got {said}")
    return asked_at - started, ended_at - decided_at


async def _answered_interrupt(client: httpx.AsyncClient) -> tuple[float, float]:
    started = time.perf_counter()
    body = {"graph": "city", "message": "Plan a trip"}
    asked, asked_at = await _stream(client, body, until="consent")
    consents = [e for e in asked if e.get("type") == "consent"]
    if len(consents) != 1 or asked[-1].get("reason") != "interrupted":
        raise ConversationError(f"expected one consent then final interrupted, got {_kinds(asked)}")
    consent = consents[0]
    answer = {"approval_id": consent["approval_id"], "value": "Lisbon"}
    answered_at = time.perf_counter()
    done, ended_at = await _stream(
        client, {"thread_id": consent["thread_id"], "resume": answer}, until="final"
    )
    said = [e for e in done if e.get("type") == "message"]
    if done[-1].get("reason") != "completed" or len(said) != 1:
        raise ConversationError(f"expected final completed with a message, got {_kinds(done)}")
    return asked_at - started, ended_at - answered_at


async def _stream(
    client: httpx.AsyncClient, body: dict[str, Any], *, until: str
) -> tuple[list[dict[str, Any]], float]:
    """The events of one streamed request, and when the first ``until`` event arrived."""
    events: list[dict[str, Any]] = []
    seen_at: float | None = None
    async with client.stream("POST", "/v1/chat", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            raise ConversationError(f"HTTP {response.status_code}: {response.text[:200]}")
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                events.append(event)
                if seen_at is None and event.get("type") == until:
                    seen_at = time.perf_counter()
    if seen_at is None or not events or events[-1].get("type") != "final":
        raise ConversationError(f"the stream ended without {until!r}/final: {_kinds(events)}")
    return events, seen_at


_SDK_MODES = ["values", "messages-tuple"]


async def _sdk_conversation(
    client: httpx.AsyncClient, *, approve: bool, graph: BenchGraph
) -> tuple[float, float]:
    path = "/runs/stream"
    if graph == "tutor":  # a summary needs a discussion first
        question = {"assistant_id": graph, "input": _sdk_input(QUESTION), "stream_mode": _SDK_MODES}
        answered, _ = await _sdk_stream(client, path, question)
        path = f"/threads/{answered[0][1]['thread_id']}/runs/stream"
    started = time.perf_counter()
    ask = {"assistant_id": graph, "input": _sdk_input(MESSAGE), "stream_mode": _SDK_MODES}
    asked, asked_at = await _sdk_stream(client, path, ask)
    values = [data for name, data in asked if name == "values"]
    if asked[-1][1].get("status") != "interrupted" or not values:
        raise ConversationError(f"expected values then end interrupted, got {_names(asked)}")
    (interrupt,) = values[-1]["__interrupt__"]
    thread_id = asked[0][1]["thread_id"]
    decision = {"decision": "approve" if approve else "reject"}
    resume = {"assistant_id": graph, "command": {"resume": decision}, "stream_mode": _SDK_MODES}
    decided_at = time.perf_counter()
    done, ended_at = await _sdk_stream(client, f"/threads/{thread_id}/runs/stream", resume)
    if done[-1][1].get("status") != "success" or not interrupt["id"]:
        raise ConversationError(f"expected end success, got {_names(done)}")
    return asked_at - started, ended_at - decided_at


def _sdk_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _sdk_stream(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> tuple[list[tuple[str, dict[str, Any]]], float]:
    """The frames (name, data) of one SDK run stream, and when its ``end`` arrived."""
    frames: list[tuple[str, Any]] = []
    name = ""
    async with client.stream("POST", path, json=body) as response:
        if response.status_code != 200:
            await response.aread()
            raise ConversationError(f"HTTP {response.status_code}: {response.text[:200]}")
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                frames.append((name, json.loads(line[5:])))
    if not frames or frames[-1][0] != "end" or frames[0][0] != "metadata":
        raise ConversationError(f"the stream did not go from metadata to end: {_names(frames)}")
    return frames, time.perf_counter()


async def _agui_conversation(
    client: httpx.AsyncClient, *, approve: bool, graph: BenchGraph
) -> tuple[float, float]:
    thread_id, path = str(uuid.uuid4()), f"/v1/agui/{graph}"
    if graph == "tutor":  # a summary needs a discussion first
        await _agui_stream(client, path, _agui_input(thread_id, QUESTION))
    started = time.perf_counter()
    asked, asked_at = await _agui_stream(client, path, _agui_input(thread_id, MESSAGE))
    outcome = asked[-1].get("outcome") or {}
    if outcome.get("type") != "interrupt":
        raise ConversationError(f"expected an interrupt outcome, got {_types(asked)}")
    (interrupt,) = outcome["interrupts"]
    decision = {"decision": "approve" if approve else "reject"}
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": decision}
    resume = {"threadId": thread_id, "runId": str(uuid.uuid4()), "messages": [], "resume": [entry]}
    decided_at = time.perf_counter()
    done, ended_at = await _agui_stream(client, path, resume)
    if (done[-1].get("outcome") or {}).get("type") != "success":
        raise ConversationError(f"expected a success outcome, got {_types(done)}")
    return asked_at - started, ended_at - decided_at


def _agui_input(thread_id: str, text: str) -> dict[str, Any]:
    message = {"id": str(uuid.uuid4()), "role": "user", "content": text}
    return {"threadId": thread_id, "runId": str(uuid.uuid4()), "messages": [message]}


async def _agui_stream(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> tuple[list[dict[str, Any]], float]:
    """The events of one AG-UI run, and when its ``RUN_FINISHED`` arrived."""
    events: list[dict[str, Any]] = []
    async with client.stream("POST", path, json=body) as response:
        if response.status_code != 200:
            await response.aread()
            raise ConversationError(f"HTTP {response.status_code}: {response.text[:200]}")
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    if not events or events[0]["type"] != "RUN_STARTED" or events[-1]["type"] != "RUN_FINISHED":
        raise ConversationError(f"the run did not go from start to finish: {_types(events)}")
    return events, time.perf_counter()


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("type")) for e in events if e.get("type") != "TEXT_MESSAGE_CONTENT"]


def _names(frames: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in frames if name != "messages"]


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("type")) for e in events if e.get("type") != "token"]


QUESTION = "What is retrieval?"
"""A message the tutor answers without a consent (a turn of a long thread)."""


async def ask_in_thread(client: httpx.AsyncClient, thread_id: str | None) -> tuple[str, float]:
    """One question turn in ``thread_id`` (a new thread when None): its thread id and how long
    until its ``final`` (``completed``) arrived."""
    started = time.perf_counter()
    body: dict[str, Any] = {"message": QUESTION}
    if thread_id is not None:
        body["thread_id"] = thread_id
    events, ended_at = await _stream(client, body, until="final")
    if events[-1].get("reason") != "completed" or not events[-1].get("thread_id"):
        raise ConversationError(f"expected final completed, got {_kinds(events)}")
    return str(events[-1]["thread_id"]), ended_at - started
