"""What a run is made of: its limits, its context while it executes, the outcome it ends with,
where its graph stands, and what a request that started it holds (``ActiveRun``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from uuid import uuid4

from langgraph.types import Command, Interrupt

from consentry.observability.run_observer import RunObserver
from consentry.principal import Principal
from consentry.runtime.guards import TokenMeter
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.runtime.runs.execute._run_options import RunOptions
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import ConsentEvent, TerminalReason, Trigger
from consentry.storage.checkpoints import RUN_MARK, HeadRead
from consentry.storage.db.database import DbConnection
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import GraphServices
from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "INPUT_MARK",
    "NOWHERE",
    "RUN_MARK",
    "SEQ_RESERVATION",
    "SHUTDOWN_GRACE_SECONDS",
    "ActiveRun",
    "ClaimHold",
    "GraphInput",
    "GraphPosition",
    "Outcome",
    "RunContext",
    "RunEvents",
    "RunLimits",
    "StopReason",
    "StopRequestedError",
    "run_id_for",
]

SHUTDOWN_GRACE_SECONDS = 10.0
CANCEL_GRACE_SECONDS = 0.5
"""How long a cancelled run may take to reach its next step boundary before its step is cut
(the node's task cancelled, as the LangGraph Agent Server does): a cancel ends a run within about
this long, however slow its node."""


class ClaimHold(Protocol):
    """What a request holds while it starts a run, completed in the transaction that claims the
    thread (and rolled back with it): an ``Idempotency-Key`` (``guards.KeyHold``), or a run that
    waited in the run queue (the LangGraph SDK's ``enqueue``), whose id the run takes."""

    @property
    def run_id(self) -> str | None:
        """The id the run must take; None for a new one."""
        ...

    async def complete(self, conn: DbConnection, *, thread_id: str, run_id: str) -> None: ...


def run_id_for(hold: ClaimHold | None) -> str:
    """The id of the run a request starts: its hold's, or a new one."""
    return hold.run_id if hold is not None and hold.run_id is not None else str(uuid4())


class RunEvents(Protocol):
    """How the request that started a run reads its events: a local run's ``RunEventStream``, or
    a ``FollowedRun`` reading the log of a run queued for a worker."""

    def listen(
        self, *, graph_modes: frozenset[str] = frozenset(), kept: bool = False
    ) -> AsyncIterator[OutgoingEvent]: ...

    def detach(self) -> None: ...


@dataclass
class ActiveRun:
    thread_id: str
    run_id: str
    events: RunEvents


@dataclass(frozen=True)
class RunLimits:
    """Bounds every run gets, each ending it with its own terminal reason."""

    max_steps: int = 50
    timeout_seconds: float = 300.0
    thread_token_budget: int | None = None
    tenant_token_budget: int | None = None
    conversation_window: int = DEFAULT_CONVERSATION_WINDOW
    """Messages a graph keeps in its state (``consentry_graphs.window``)."""


class StopRequestedError(Exception):
    """The run was asked to stop (``RunContext.stop``); it stops at the next step boundary."""


StopReason = Literal["cancel", "suspend", "lease_lost", "database_lost"]
"""Why a run stops early: a client cancelled it (it ends ``cancelled``), the server shuts down
(it is suspended, for the next process to continue), another process took it over, or the
database went away mid-write (PostgreSQL: what it holds of the run is unknown, so the run
stores nothing more and a takeover continues it from what was stored)."""


@dataclass
class RunContext:
    owner: Principal
    spec: GraphSpec
    events: RunEventStream
    services: GraphServices
    options: RunOptions
    trigger: Trigger
    consent_policy: ConsentPolicy
    meter: TokenMeter
    fencing_token: int
    observer: RunObserver
    resumed: frozenset[str] = frozenset()
    stop: StopReason | None = None
    streaming: bool = False
    """The graph is running (a cancel may cut its step), not the run's closing work."""
    cut: bool = False
    """A cancel cut the run's step short (``CANCEL_GRACE_SECONDS``): its task was cancelled."""
    roll_back: bool = False
    """The cancel asked to roll the run back: its end undoes what it wrote (``_run_rollback``)."""
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    progress: ProgressBatcher = field(init=False, repr=False)


@dataclass
class Outcome:
    reason: TerminalReason = "completed"
    error_code: str | None = None
    consents: list[ConsentEvent] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Answers to raw interrupts the graph raised on (it still waits for them): pending again."""


@dataclass(frozen=True)
class GraphPosition:
    waiting: frozenset[str]
    """The interrupt (approval) ids the graph waits for."""
    unfinished: bool
    """Nodes are left to run and no consent is awaited: a run stopped half-way (a failure, a
    crash) and ``astream(None)`` would continue it."""
    interrupts: tuple[Interrupt, ...] = ()
    """The interrupts the graph waits for, with their values."""
    asking: frozenset[str] = frozenset()
    """The nodes that asked them."""
    written_by: str | None = None
    """The run whose graph input wrote the newest checkpoint (``RUN_MARK``), if any."""
    input_index: int | None = None
    """Which of that run's graph inputs (0, 1, ...) it was."""
    checkpoint: HeadRead | None = field(default=None, compare=False, repr=False)
    """The checkpoint it was read from, for the first read of the run that starts from it
    (``Launcher.launch``); None when the graph's saver is not Consentry's."""


NOWHERE = GraphPosition(waiting=frozenset(), unfinished=False)

INPUT_MARK = "consentry_input"
"""Keys of the checkpoint metadata naming the run and the graph input that wrote it: after a
crash they tell how far a run's inputs got (``runtime.recovery``)."""

GraphInput = dict[str, Any] | Command[Any] | None
"""What one ``astream`` call starts with; ``None`` continues a run that stopped half-way."""

SEQ_RESERVATION = 4096
"""Sequence numbers a run reserves at a time; a run that dies leaves a gap, never a reuse."""
