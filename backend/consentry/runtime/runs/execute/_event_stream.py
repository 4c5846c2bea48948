"""The events of one run: numbering, buffering for storage, and hand-off to the open stream.

Every durable event (all but ``token``) gets the thread's next ``seq``: a thread's stored events
are numbered 1, 2, 3, ... with no gap, across its runs and across crashes. A ``token`` is never
stored, so it takes no number of its own: it carries the ``seq`` of the event before it, and a
client that rejoins after it (``Last-Event-ID``) misses nothing stored. A recorded event waits in
two buffers: durable ones
(all but ``token``) until the executor stores them, and every one until :meth:`flush` hands it
to the listening SSE responses. The executor flushes only after storing, so a client never sees
an event the log could lose. A run never waits for its listeners: a client that goes away only
stops the hand-off.

A listener may also ask for LangGraph's own outputs (``graph_modes``: ``values``, ``updates``,
``tasks``, ``messages``, ``custom``, ``checkpoints``, ``debug``, ``events``..., which the LangGraph
SDK face streams). They are recorded only once some
listener of the run asked for them (``graph_modes``, the union of the wishes, sticky for the run:
the graph streamer serializes nothing for a run nobody asked), as ephemeral events of private
types (``graph:values``...), numbered like a token (the seq of the event before them), and handed
only to the listeners that asked for their mode (the one check every other event pays is a set
lookup of its type). A wish for a subgraph's outputs (``subgraphs:values``...) makes the graph
stream its subgraphs too: it counts only when made before the run's graph starts streaming (the
request that starts the run).

They are not stored, unless the request that starts the run asks for its stream to be resumable
(the SDK's ``stream_resumable``: ``kept_modes``): then each durable event carries the outputs of
those modes recorded since the one before it (``OutgoingEvent.outputs``), stored in its row, so a
join replays them with it (:func:`kept_outputs`: from this process's history, from the stored log,
from another replica's log) for ``CONSENTRY_RESUMABLE_STREAM_SECONDS``. Without it, a client that
joins gets them only from the moment it follows the run live in this process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

from pydantic_core import to_json

from consentry.runtime.clock import Clock
from consentry.runtime.outgoing import GRAPH_OUTPUT, OutgoingEvent, kept_outputs
from consentry.schemas.events import Event, TokenEvent
from consentry.storage.transcript import TranscriptEntry

__all__ = [
    "GRAPH_OUTPUT_MODES",
    "SUBGRAPHS",
    "SUBGRAPH_OUTPUT_MODES",
    "RunEventStream",
    "RunSuspendedError",
    "graph_output_mode",
]


_PROGRESS = frozenset({"run_started", "step"})

_MESSAGE_MODES = ("messages/metadata", "messages/partial", "messages/complete")
STARTING_MODES = frozenset({"checkpoints", "debug", "events"})
"""Outputs the graph makes only when asked before it starts streaming (the request that starts
the run): LangGraph's ``checkpoints`` and ``debug`` modes, LangChain's events
(``_event_outputs``)."""
GRAPH_OUTPUT_MODES = frozenset(
    {"values", "updates", "tasks", "messages", "custom", *_MESSAGE_MODES, *STARTING_MODES}
)
"""The graph outputs a listener may ask a run for (``listen``, ``join``): LangGraph's stream
modes, ``messages`` being its ``(chunk, metadata)`` pairs and ``messages/...`` the SDK's
``messages`` mode made of them (``_message_outputs``), ``events`` LangChain's."""
SUBGRAPHS = "subgraphs:"
"""The prefix of a wish for a mode's outputs of the graph's subgraphs (``subgraphs:values``...:
LangGraph's ``subgraphs=True``; each output names its namespace)."""
SUBGRAPH_OUTPUT_MODES = frozenset(SUBGRAPHS + mode for mode in GRAPH_OUTPUT_MODES - {"events"})
"""The subgraph outputs a listener may ask for (``events`` has no namespace: a run's events are
its subgraphs' too)."""
_GRAPH_OUTPUT_TYPE = {
    mode: GRAPH_OUTPUT + mode for mode in GRAPH_OUTPUT_MODES | SUBGRAPH_OUTPUT_MODES
}
_MODE_OF_TYPE = {event_type: mode for mode, event_type in _GRAPH_OUTPUT_TYPE.items()}
_GRAPH_OUTPUTS = frozenset(_MODE_OF_TYPE)
_EPHEMERAL = _GRAPH_OUTPUTS | {"token"}
"""Types of the events that are sent, never stored, and take no seq of their own."""

_Queue: TypeAlias = asyncio.Queue[OutgoingEvent | None]


def graph_output_mode(event_type: str) -> str | None:
    """The stream mode of a graph output event (``graph:values`` → ``values``,
    ``graph:subgraphs:values`` → ``subgraphs:values``), None for any other event."""
    return _MODE_OF_TYPE.get(event_type)


class RunSuspendedError(Exception):
    """The run stopped without a ``final`` (the server shuts down, or another process took it
    over): its listener should reconnect with ``Last-Event-ID``."""


class RunEventStream:
    def __init__(
        self, *, thread_id: str, run_id: str, last_seq: int, reserved_until: int, clock: Clock
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.last_seq = last_seq
        self.reserved_until = reserved_until
        """The run may number events up to here (see ``storage.leases.claim_thread``)."""
        self._clock = clock
        self._durable: list[OutgoingEvent] = []
        self._unsent: list[OutgoingEvent] = []
        self._history: list[OutgoingEvent] = []
        """Durable events already sent: what a client joining mid-run catches up with."""
        self._listeners: set[_Queue] = set()
        self._wants: dict[_Queue, frozenset[str]] = {}
        """The graph outputs each listener that asked for some wants (a subset of its modes)."""
        self.graph_modes: frozenset[str] = frozenset()
        """The graph outputs some listener of the run asked for: the graph streamer records
        these (and only these) modes. Sticky: a listener that leaves does not narrow it."""
        self.kept_modes: frozenset[str] = frozenset()
        """The graph outputs kept with the durable events (``stream_resumable``), for joins to
        replay: see :meth:`record`."""
        self._kept: list[str] = []
        """Kept outputs recorded since the last durable event, as ``"<type> <json>"`` lines."""
        self._kept_sent: list[OutgoingEvent] = []
        """Kept outputs sent whose durable event (which carries them) is not sent yet: what a
        client joining now catches up with beyond the history."""
        self._closed = False
        self.suspended = False
        """The run stopped without a ``final`` (the server shuts down, or another process took
        the run over): listeners should reconnect with ``Last-Event-ID``."""
        self._main = self._subscribe(after_seq=last_seq, graph_modes=frozenset())
        self.transcript: list[TranscriptEntry] = []
        """User messages the run's graph was given, for the transcript: written with the next
        stored events (so after the replies that came before them), see :meth:`take_transcript`."""
        self._transcript_taken = 0

    @property
    def listeners(self) -> int:
        """Open streams following this run (the request that started it, and joiners)."""
        return len(self._listeners)

    @property
    def unreserved(self) -> int:
        """How many more events fit in the reservation."""
        return self.reserved_until - self.last_seq

    def make(self, event_type: type[Event], **fields: Any) -> Event:
        if event_type is not TokenEvent:
            if self.last_seq >= self.reserved_until:
                raise RuntimeError("event sequence reservation exhausted")
            self.last_seq += 1
        event: Event = event_type(
            thread_id=self.thread_id,
            run_id=self.run_id,
            seq=self.last_seq,
            ts=self._clock(),
            **fields,
        )
        return event

    def emit(self, event_type: type[Event], fields: dict[str, Any]) -> None:
        """Make an event of ``event_type`` with ``fields`` and record it (a token by
        :meth:`record_token`)."""
        if event_type is TokenEvent:
            self.record_token(**fields)
        else:
            self.record(self.make(event_type, **fields))

    def record_token(self, message_id: str, delta: str) -> None:
        """Record a ``token``: what ``record(make(TokenEvent, ...))`` records, its JSON written
        by pydantic's serializer from the values without building and validating a model (a
        third of the cost, paid by every token a model streams)."""
        data = to_json(
            {
                "thread_id": self.thread_id,
                "run_id": self.run_id,
                "seq": self.last_seq,
                "ts": self._clock(),
                "type": "token",
                "message_id": message_id,
                "delta": delta,
            }
        ).decode()
        self._unsent.append(OutgoingEvent(self.last_seq, "token", data))

    def record(self, event: Event) -> None:
        """Serialize ``event``; keep it for storage unless it is ephemeral (a durable one with
        the kept graph outputs recorded since the one before it), and for the next
        :meth:`flush`."""
        if isinstance(event, TokenEvent):
            self._unsent.append(OutgoingEvent(event.seq, event.type, event.model_dump_json()))
            return
        kept, self._kept = ("\n".join(self._kept) if self._kept else None), []
        outgoing = OutgoingEvent(event.seq, event.type, event.model_dump_json(), kept)
        self._durable.append(outgoing)
        self._unsent.append(outgoing)

    def record_graph_output(self, mode: str, data: str) -> None:
        """Keep a graph output (``mode`` one of :data:`GRAPH_OUTPUT_MODES`, or of
        :data:`SUBGRAPH_OUTPUT_MODES` for a subgraph's, ``data`` its JSON)
        for the next :meth:`flush`, which hands it to the listeners that asked for ``mode``
        only. It carries the seq of the event before it, as a token does, and is stored only
        when its mode is kept (``kept_modes``), with the next durable event."""
        event_type = _GRAPH_OUTPUT_TYPE[mode]
        self._unsent.append(OutgoingEvent(self.last_seq, event_type, data))
        if mode in self.kept_modes:
            self._kept.append(f"{event_type} {data}")

    def flush(self, *, through: int | None = None) -> None:
        """Hand the recorded events (up to seq ``through``) to the listeners: call it once they
        are stored."""
        if through is None or not self._unsent or self._unsent[-1].seq <= through:
            unsent, self._unsent = self._unsent, []
        else:
            cut = next(i for i, e in enumerate(self._unsent) if e.seq > through)
            unsent, self._unsent = self._unsent[:cut], self._unsent[cut:]
        # Only what the store wrote: a message given meanwhile (a late progress write, then the
        # run's next input) waits for the next store.
        del self.transcript[: self._transcript_taken]
        self._transcript_taken = 0
        for outgoing in unsent:
            if outgoing.type in _GRAPH_OUTPUTS:  # the one test a token or an event pays
                mode = _MODE_OF_TYPE[outgoing.type]
                for queue, wanted in self._wants.items():
                    if mode in wanted:
                        queue.put_nowait(outgoing)
                if mode in self.kept_modes:
                    self._kept_sent.append(outgoing)
                continue
            if outgoing.type != "token":
                self._history.append(outgoing)
                self._kept_sent.clear()  # it carries them
            for queue in self._listeners:
                queue.put_nowait(outgoing)

    def discard_unsent(self) -> None:
        """Forget the events recorded since the last flush (they could not be stored): their
        numbers are given out again."""
        first = next((e.seq for e in self._unsent if e.type not in _EPHEMERAL), None)
        if first is not None:
            self.last_seq = first - 1
        self._unsent = []
        self._durable = []
        self._kept = []
        self._transcript_taken = 0

    @property
    def has_unstored(self) -> bool:
        return bool(self._durable)

    def take_durable(self) -> list[OutgoingEvent]:
        taken, self._durable = self._durable, []
        return taken

    def take_progress(self) -> list[OutgoingEvent]:
        """Take the ``run_started`` and ``step`` events recorded before the first event of
        another type that waits to be stored (the rest waits for the step's checkpoint)."""
        cut = next(
            (i for i, e in enumerate(self._durable) if e.type not in _PROGRESS), len(self._durable)
        )
        taken, self._durable = self._durable[:cut], self._durable[cut:]
        return taken

    @property
    def first_unstored(self) -> int:
        """The seq of the first durable event not stored yet (past the last one when none)."""
        return self._durable[0].seq if self._durable else self.last_seq + 1

    def restore_durable(self, taken: list[OutgoingEvent]) -> None:
        """Put back what :meth:`take_durable` gave, ahead of what was recorded since."""
        self._durable = taken + self._durable
        self._transcript_taken = 0

    def take_transcript(self) -> list[TranscriptEntry]:
        """The user messages to write with the events being stored; they are forgotten at the
        next :meth:`flush` (written), or given again after a failed store."""
        self._transcript_taken = len(self.transcript)
        return list(self.transcript)

    @property
    def unsent_waits_for_a_write(self) -> bool:
        """Nothing recorded can be sent before a write: no token waits, and an event to store
        does (progress, or a step's results held for its checkpoint: graph outputs wait with
        them)."""
        waits = False
        for outgoing in self._unsent:
            if outgoing.type == "token":
                return False
            if outgoing.type not in _GRAPH_OUTPUTS:
                waits = True
        return waits

    def close(self, *, suspended: bool = False) -> None:
        """No more events: listeners end (``suspended``: without a ``final``, so they end with
        :class:`RunSuspendedError`)."""
        self.suspended = suspended
        self._closed = True
        for queue in self._listeners:
            queue.put_nowait(None)

    def _subscribe(
        self, *, after_seq: int, graph_modes: frozenset[str], outputs_from: int | None = None
    ) -> _Queue:
        queue: _Queue = asyncio.Queue()
        first = after_seq + 1 if outputs_from is None else outputs_from
        for outgoing in self._history:
            if outgoing.seq > after_seq:
                for event in kept_outputs(outgoing, graph_modes, outputs_from=first):
                    queue.put_nowait(event)
        for output in self._kept_sent:  # sent before the event that will carry them
            if output.seq >= first and _MODE_OF_TYPE[output.type] in graph_modes:
                queue.put_nowait(output)
        if self._closed:
            queue.put_nowait(None)
        self._listeners.add(queue)
        self._want(queue, graph_modes)
        return queue

    @property
    def starting_modes(self) -> frozenset[str]:
        """The :data:`STARTING_MODES` some listener asked of the graph or of its subgraphs
        (unprefixed): the graph makes them only when asked before it starts."""
        return frozenset(m.removeprefix(SUBGRAPHS) for m in self.graph_modes) & STARTING_MODES

    @property
    def subgraph_modes(self) -> frozenset[str]:
        """The modes some listener asked of the subgraphs (``subgraphs:`` wishes, unprefixed):
        the graph streams its subgraphs' outputs only then."""
        return frozenset(
            m.removeprefix(SUBGRAPHS) for m in self.graph_modes if m.startswith(SUBGRAPHS)
        )

    def _want(self, queue: _Queue, graph_modes: frozenset[str]) -> None:
        wanted = graph_modes & _GRAPH_OUTPUT_TYPE.keys()
        if wanted:
            self._wants[queue] = wanted
            self.graph_modes |= wanted

    def _unsubscribe(self, queue: _Queue) -> None:
        self._listeners.discard(queue)
        self._wants.pop(queue, None)

    def detach(self) -> None:
        """The client that started the run went away: stop queueing for it (the run goes on)."""
        self._unsubscribe(self._main)

    def listen(
        self, *, graph_modes: frozenset[str] = frozenset(), kept: bool = False
    ) -> AsyncIterator[OutgoingEvent]:
        """The stream of the request that started the run: every event, until ``final``
        (:class:`RunSuspendedError` when the run stops without one), and the graph outputs of
        ``graph_modes``.

        The wish is registered by this call, not at the first read (as an async generator's
        body would): the request that starts a run calls it in the same turn of the event loop
        in which ``RunExecutor.launch`` created the run's task (no ``await`` between them
        suspends), and a new task runs only once its creator yields. So the wish is there before
        the graph's first chunk, and the first step's outputs are recorded. (The alternative,
        passing the wish down ``RunService.start`` → ``start_message`` / ``start_decisions`` →
        ``Launcher.launch`` → ``RunExecutor.launch``, says the same in six signatures.)"""
        if self._main in self._listeners:  # not after ``detach``
            self._want(self._main, graph_modes)
            if kept:  # ``stream_resumable``: what it streams, a join replays
                self.kept_modes |= graph_modes & self.graph_modes
        return self._read_main()

    async def join(
        self,
        *,
        after_seq: int,
        graph_modes: frozenset[str] = frozenset(),
        outputs_from: int | None = None,
    ) -> AsyncIterator[OutgoingEvent]:
        """Another client joins: the durable events after ``after_seq`` sent so far (with the
        graph outputs of ``graph_modes`` kept with them, from seq ``outputs_from``:
        :func:`kept_outputs`), then every event as it comes, until ``final``
        (:class:`RunSuspendedError` when the run stops without one); and the graph outputs of
        ``graph_modes`` recorded from then on."""
        queue = self._subscribe(
            after_seq=after_seq, graph_modes=graph_modes, outputs_from=outputs_from
        )
        try:
            while (item := await queue.get()) is not None:
                yield item
            if self.suspended:
                raise RunSuspendedError(self.run_id)
        finally:
            self._unsubscribe(queue)

    async def _read_main(self) -> AsyncIterator[OutgoingEvent]:
        while (item := await self._main.get()) is not None:
            yield item
        if self.suspended:
            raise RunSuspendedError(self.run_id)
