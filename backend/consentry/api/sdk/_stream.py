"""A run's events as the LangGraph SDK reads them (``runs.stream``, ``useStream``).

The run service's events (the same stored log ``/v1`` streams) are projected, not copied:

- ``run_started`` → ``metadata`` ``{"run_id", "thread_id"}``, first;
- ``note`` and ``model_retry`` → ``custom``;
- ``error`` → ``error`` ``{"error": code, "message"}``;
- the graph's own outputs, which this face asks the run for (``graph_modes``: what the modes asked
  are made of, ``_OUTPUTS``; never stored, ``_graph_outputs``), each as a frame of its name:
  ``values`` (the state, without ``__interrupt__``), ``updates`` (``{node: update}``, an interrupt
  as ``{"__interrupt__": [{"value", "id"}]}``), ``tasks``, ``messages`` (LangGraph's ``[message
  chunk, metadata]``: ``messages-tuple``), ``messages/metadata`` / ``partial`` / ``complete``
  (the ``messages`` mode), ``custom`` (a graph's own stream writer's), ``checkpoints``,
  ``debug``, ``events``, in the order the run made them;
- a ``message`` that no graph output of this stream carried (stored before the stream followed
  the run live, or by a run of another process) → ``messages`` ``[ai message, metadata]`` and
  ``messages/metadata`` + ``messages/complete``, whole; a ``token`` is never sent as such (the
  graph's ``messages`` outputs carry it, with LangGraph's metadata);
- ``final`` → ``values``: the graph's state from its checkpoint (always right, even for a stream
  that got no per-step state: a join read from the log, a run of another process), unless it
  equals the last per-step ``values`` this stream sent (not read at all for a run that completed
  after this stream got per-step state: its last is the end state); then, when it waits, a
  ``values`` frame of its own ``{"__interrupt__": [{"value", "id"}]}`` (the id being the
  approval's), as LangGraph streams an interrupt (``useStream`` keeps the state it had and adds
  the interrupt from such a frame), then ``end`` ``{"run_id", "status"}``.

Every frame carries the ``id`` of the stored event it comes from (a token or a per-step output:
the one before it), so ``Last-Event-ID`` joins go on without a gap or a repeat of what is stored;
the graph's outputs are stored only for a run whose stream asked ``stream_resumable`` (a join
then replays them: ``runtime.outgoing.kept_outputs``), else a join gets them only from the moment
it follows the run live (``docs/langgraph-sdk.md``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sse_starlette import ServerSentEvent

from consentry.api.http.sse_response import RECONNECT_HINT
from consentry.principal import Principal
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import (
    GRAPH_OUTPUT_MODES,
    SUBGRAPH_OUTPUT_MODES,
    SUBGRAPHS,
    RunSuspendedError,
    ThreadReader,
    graph_output_mode,
    split_output,
)

__all__ = ["SdkStream"]

_END_STATUS = {"completed": "success", "interrupted": "interrupted", "failed": "error"}


class SdkStream:
    """The LangGraph SDK's frames of one run's events (a ``StreamFace``)."""

    def __init__(
        self,
        reader: ThreadReader,
        owner: Principal,
        modes: frozenset[str],
        *,
        run_id: str | None = None,
        graph: str | None = None,
        subgraphs: bool = False,
        resumable: bool = False,
    ) -> None:
        """``run_id``: only this run's events (a join reads the thread's log). ``graph``: the
        thread's, when the request that starts the run knows it (its state is read without
        reading the thread again). ``subgraphs`` (``stream_subgraphs``): the subgraphs' outputs
        of the modes asked too, as ``<mode>|<namespace>`` frames. ``resumable``
        (``stream_resumable``): the run keeps them for joins to replay, when this stream's
        request starts it."""
        self._reader = reader
        self._owner = owner
        self._modes = modes
        self._run_id = run_id
        self._graph = graph
        asked = frozenset(output for mode in modes for output in _OUTPUTS[mode])
        self.graph_modes = asked & GRAPH_OUTPUT_MODES
        """What the run is asked to record of its graph's outputs for this stream."""
        if subgraphs:
            self.graph_modes |= {SUBGRAPHS + m for m in asked} & SUBGRAPH_OUTPUT_MODES
        self.kept = resumable

    def headers(self, thread_id: str, run_id: str | None) -> dict[str, str]:
        """Where the SDK finds the run again (it reconnects to ``Location`` after a drop)."""
        if run_id is None:
            return {}
        run = f"/threads/{thread_id}/runs/{run_id}"
        return {"Content-Location": run, "Location": f"{run}/stream"}

    async def frames(self, events: AsyncIterator[OutgoingEvent]) -> AsyncGenerator[bytes, None]:
        streamed: set[str] = set()  # messages this stream carried tokens of
        node = ""
        sent_values: str | None = None  # the last per-step state this stream sent of the run
        try:
            async for event in events:
                if (mode := graph_output_mode(event.type)) is not None:
                    # Sent as it came: the state is not parsed to be written again.
                    head, chunk = split_output(event.data)
                    if self._run_id is not None and head["run_id"] != self._run_id:
                        continue
                    if "ns" in head:  # a subgraph's, as LangGraph names it: mode|namespace
                        name = "|".join([mode.removeprefix(SUBGRAPHS), *head["ns"]])
                        yield _raw_frame(name, chunk, event.seq)
                    elif mode in self.graph_modes:
                        yield _raw_frame(mode, chunk, event.seq)
                        if mode == "values":
                            sent_values = chunk
                    if "id" in head:  # a message this stream carried (or will: its tokens)
                        streamed.add(head["id"])
                    continue
                data: dict[str, Any] = json.loads(event.data)
                if self._run_id is not None and data.get("run_id") != self._run_id:
                    continue
                if event.type == "step":
                    node = data["node"]
                for name, payload in self._project(event.type, data, node, streamed):
                    yield _frame(name, payload, event.seq)
                if event.type == "final":
                    async for frame in self._ending(data, event.seq, sent_values):
                        yield frame
                    sent_values = None  # a replay goes on with the run that continues it
        except RunSuspendedError:
            yield RECONNECT_HINT

    def _project(
        self, kind: str, data: dict[str, Any], node: str, streamed: set[str]
    ) -> list[tuple[str, Any]]:
        if kind == "run_started":
            return [("metadata", {"run_id": data["run_id"], "thread_id": data["thread_id"]})]
        if kind == "message" and data["message_id"] not in streamed:
            # A message stored before this stream followed the run live (a join), or by a run
            # this process does not run: whole, with the metadata the log knows.
            message = {"type": "ai", "id": data["message_id"], "content": data["content"]}
            meta = _meta(data, node)
            shown: list[tuple[str, Any]] = []
            if "messages-tuple" in self._modes:
                shown.append(("messages", [message, meta]))
            if "messages" in self._modes:
                shown.append(("messages/metadata", {message["id"]: {"metadata": meta}}))
                shown.append(("messages/complete", [message]))
            return shown
        if kind in ("note", "model_retry") and "custom" in self._modes:
            fields = {k: v for k, v in data.items() if k not in _ENVELOPE}
            return [("custom", {"event": kind, **fields})]
        if kind == "error":
            return [("error", {"error": data["code"], "message": data["message"]})]
        return []

    async def _ending(
        self, final: dict[str, Any], seq: int, sent_values: str | None
    ) -> AsyncGenerator[bytes, None]:
        if "values" in self._modes and not (final["reason"] == "completed" and sent_values):
            # (A run that completed after this stream got its per-step state left that state:
            # LangGraph streams it after its last step. Read it otherwise: a stream that got
            # none, a run that waits, whose interrupts are the checkpoint's, or that stopped.)
            thread_id = final["thread_id"]
            state = await self._reader.graph_state(self._owner, thread_id, graph=self._graph)
            if sent_values is None or state.values != json.loads(sent_values):  # (sent already)
                yield _frame("values", state.values, seq)
            if state.interrupts:  # as LangGraph streams it: a frame of its own
                yield _frame("values", {"__interrupt__": state.interrupts}, seq)
        status = _END_STATUS.get(final["reason"], final["reason"])
        yield _frame("end", {"run_id": final["run_id"], "status": status}, seq)


_OUTPUTS: dict[str, tuple[str, ...]] = {
    "values": ("values",),
    "updates": ("updates",),
    "tasks": ("tasks",),
    "messages-tuple": ("messages",),
    "messages": ("messages/metadata", "messages/partial", "messages/complete"),
    "custom": ("custom",),
    "checkpoints": ("checkpoints",),
    "debug": ("debug",),
    "events": ("events",),
}
"""The graph outputs (``runtime.runs.GRAPH_OUTPUT_MODES``) a stream mode is made of, each sent
as a frame of its name."""

_ENVELOPE = frozenset({"thread_id", "run_id", "seq", "ts", "type"})


def _meta(data: dict[str, Any], node: str) -> dict[str, Any]:
    return {"run_id": data["run_id"], "thread_id": data["thread_id"], "langgraph_node": node}


def _frame(event: str, data: Any, seq: int) -> bytes:
    return _raw_frame(event, json.dumps(data), seq)


def _raw_frame(event: str, data: str, seq: int) -> bytes:
    return ServerSentEvent(data=data, event=event, id=str(seq)).encode()
