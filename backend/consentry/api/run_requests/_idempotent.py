"""A repeat of a run request's ``Idempotency-Key`` (the SDK's ``runs.create``): the run the first
request started, its events replayed (:class:`ReplayedRun`) instead of a new run's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from consentry.principal import Principal
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import RunService

__all__ = ["ReplayedRun"]


@dataclass(frozen=True)
class ReplayedRun:
    """The events of a run an earlier request with the same ``Idempotency-Key`` started."""

    runs: RunService
    owner: Principal
    thread_id: str
    run_id: str

    async def listen(
        self, *, graph_modes: frozenset[str] = frozenset(), kept: bool = False
    ) -> AsyncIterator[OutgoingEvent]:
        """The run's events from its first (with what it kept, ``kept`` being the first
        request's to ask)."""
        replayed = await self.runs.replay(
            self.owner, self.thread_id, self.run_id, graph_modes=graph_modes
        )
        async for event in replayed:
            yield event

    def detach(self) -> None:
        """Nothing to stop: the run was never this request's."""
