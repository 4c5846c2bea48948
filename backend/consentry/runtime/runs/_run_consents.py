"""The consents a run meets: the ``consent`` event of each interrupt, the ones a thread's policy
decides at once (``auto_approve``, ``auto_reject``; never ``always_ask`` kinds), and the ones
already asked before (a parallel branch re-raising a pending consent)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from langgraph.types import Command

from consentry.observability.metrics import Metrics
from consentry.runtime.clock import Clock
from consentry.runtime.consents import consent_event, record_decision, store_consent
from consentry.runtime.runs._run_store import RunStore
from consentry.runtime.runs._run_types import RunContext
from consentry.runtime.runs._stream_mapping import ChunkMapper
from consentry.schemas.events import ConsentEvent
from consentry.storage import approvals as approvals_repo
from consentry.storage.database import Database
from consentry_graphs.consent import ConsentDecision, ConsentRequest, Decision

__all__ = ["RunConsents"]


class RunConsents:
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        metrics: Metrics,
        consent_ttl: timedelta,
        store: RunStore,
    ) -> None:
        self._db = db
        self._clock = clock
        self._metrics = metrics
        self._consent_ttl = consent_ttl
        self._store = store

    async def known_approvals(self, ids: list[str]) -> set[str]:
        """Interrupts that already have an approval: a consent still pending from before (a
        parallel branch re-raises it with the same id) is not asked again."""
        if not ids:
            return set()
        async with self._db.read() as conn:
            return await approvals_repo.existing_approval_ids(conn, ids)

    async def decide_by_policy(self, run: RunContext, mapper: ChunkMapper) -> Command[Any] | None:
        """With an ``auto_approve`` or ``auto_reject`` thread, record the policy's decision on
        every consent that allows it (never on ``always_ask`` kinds) and return the resume."""
        if run.consent_policy == "ask":
            return None
        decision: Decision = "approve" if run.consent_policy == "auto_approve" else "reject"
        decided = []
        for interrupt in mapper.interrupts:
            request = ConsentRequest.model_validate(interrupt.value)
            if not request.always_ask and decision in request.allowed_decisions:
                decided.append(self.consent(run, interrupt.id, interrupt.value))
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

    def consent(self, run: RunContext, approval_id: str, value: Any) -> ConsentEvent:
        return consent_event(
            run.events,
            run.spec,
            approval_id=approval_id,
            value=value,
            default_ttl=self._consent_ttl,
            now=self._clock(),
        )
