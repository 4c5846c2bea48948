"""The consents a run meets: the ``consent`` event of each interrupt, the ones a thread's policy
decides at once (``auto_approve``, ``auto_reject``; never ``always_ask`` kinds nor raw
interrupts), the ones already asked before (a parallel branch re-raising a pending consent), and
the answers a failed run's graph refused."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.types import Command, Interrupt

from consentry.observability.metrics import Metrics
from consentry.runtime.clock import Clock
from consentry.runtime.consents import (
    ConsentAsk,
    ConsentDeadlines,
    consent_event,
    read_asks,
    record_decision,
    store_consent,
)
from consentry.runtime.runs.execute._graph_stream import GraphStreamer
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.runs.execute._run_types import GraphInput, RunContext
from consentry.runtime.runs.execute._stream_mapping import ChunkMapper
from consentry.schemas.events import ConsentEvent
from consentry.storage import approvals as approvals_repo
from consentry.storage.db.database import Database
from consentry_graphs.consent import ConsentDecision, Decision

__all__ = ["RunConsents"]

log = logging.getLogger(__name__)


class RunConsents:
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        metrics: Metrics,
        deadlines: ConsentDeadlines,
        store: RunStore,
        streamer: GraphStreamer,
    ) -> None:
        self._db = db
        self._clock = clock
        self._metrics = metrics
        self._deadlines = deadlines
        self._store = store
        self._streamer = streamer

    async def known_approvals(self, ids: list[str]) -> set[str]:
        """Interrupts that already have an approval: a consent still pending from before (a
        parallel branch re-raises it with the same id) is not asked again."""
        if not ids:
            return set()
        async with self._db.read() as conn:
            return await approvals_repo.existing_approval_ids(conn, ids)

    async def refused_answers(self, run: RunContext, graph_inputs: list[GraphInput]) -> list[str]:
        """Of the raw interrupts this failed run answered, those the graph still waits for: the
        node raised on the value (``store_end`` makes them pending again, nothing lost)."""
        answered = [
            approval_id
            for graph_input in graph_inputs
            if isinstance(graph_input, Command) and isinstance(graph_input.resume, dict)
            for approval_id in graph_input.resume
        ]
        if run.trigger != "resume" or not answered:
            return []
        try:
            waiting = (await self._streamer.position(run.spec, run.events.thread_id)).waiting
            async with self._db.read() as conn:
                rows = await approvals_repo.closed_approvals(
                    conn, run.events.thread_id, [i for i in answered if i in waiting]
                )
        except Exception:  # the failure is recorded either way; the answer stays recorded
            log.exception("could not read which answers the graph refused")
            return []
        return [
            row.id
            for row in rows
            if row.status == "answered"
            and await self._streamer.forget_answer(run.spec, run.events.thread_id, row.id)
        ]

    async def decide_by_policy(self, run: RunContext, mapper: ChunkMapper) -> Command[Any] | None:
        """With an ``auto_approve`` or ``auto_reject`` thread, record the policy's decision on
        every consent that allows it (never on ``always_ask`` kinds, never a raw ``interrupt()``)
        and return the resume."""
        if run.consent_policy == "ask":
            return None
        decision: Decision = "approve" if run.consent_policy == "auto_approve" else "reject"
        decided = []
        for interrupt in mapper.interrupts:
            for ask in read_asks(run.spec, interrupt):
                if not ask.always_ask and decision in ask.allowed_decisions:
                    decided.append(self.consent(run, ask))
        if not decided:
            return None
        now = self._clock()
        answers = {
            consent.approval_id: ConsentDecision(
                approval_id=consent.approval_id, decision=decision, decided_by="policy"
            )
            for consent in decided
        }
        events = run.events
        for consent in decided:
            events.record(consent)
        await run.progress.settle()
        async with self._db.write() as conn:
            for consent in decided:
                row = await store_consent(conn, run.owner, consent, now=now)
                await record_decision(
                    conn,
                    run.owner,
                    row=row,
                    decision=answers[consent.approval_id],
                    run_id=events.run_id,
                    now=now,
                )
            await self._store.store_events(conn, run)
        events.flush()
        for consent in decided:
            self._metrics.consent_requested(run.spec.name, consent.kind)
            self._metrics.decided(
                kind=consent.kind, decision=decision, decided_by="policy", asked_at=now, now=now
            )
        return Command(resume={i: a.model_dump(mode="json") for i, a in answers.items()})

    async def consents(
        self, run: RunContext, interrupts: list[Interrupt], *, resumed: bool
    ) -> list[ConsentEvent]:
        """The ``consent`` events of what these interrupts ask. Only a ``resumed`` graph can
        meet a consent asked before (a parallel branch re-raising it with the same id): it is
        not asked again."""
        asks = [ask for interrupt in interrupts for ask in read_asks(run.spec, interrupt)]
        if resumed:
            known = await self.known_approvals([ask.approval_id for ask in asks])
            asks = [ask for ask in asks if ask.approval_id not in known]
        return [self.consent(run, ask) for ask in asks]

    def consent(self, run: RunContext, ask: ConsentAsk) -> ConsentEvent:
        return consent_event(run.events, ask, deadlines=self._deadlines, now=self._clock())
