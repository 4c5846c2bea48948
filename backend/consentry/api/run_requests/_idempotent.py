"""A run request with an ``Idempotency-Key``: its action once per key (for the same route and
body), and for a repeat the run the first request started, its events replayed
(:class:`ReplayedRun`) instead of a new run's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from consentry.principal import Principal
from consentry.runtime.guards import (
    IdempotencyGuard,
    KeyHold,
    StartsRun,
    StoredResponse,
    request_fingerprint,
)
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun, RunService

__all__ = ["ReplayedRun", "S", "once", "started"]

S = TypeVar("S", bound=StartsRun)
"""What a request that names a run gets back (a run, a queued run): where the run is."""


async def started(
    idempotency: IdempotencyGuard,
    runs: RunService,
    owner: Principal,
    start: Callable[[KeyHold | None], Awaitable[ActiveRun]],
    idempotency_key: str | None,
    route: str,
    body: dict[str, Any],
) -> ActiveRun:
    """The run ``start`` starts, or (an ``Idempotency-Key`` used before for the same route
    and body) the one the first request started, its events replayed."""
    result = await once(idempotency, owner, idempotency_key, route, body, start)
    if isinstance(result, ActiveRun):
        return result
    thread_id, run_id = result
    return ActiveRun(thread_id, run_id, ReplayedRun(runs, owner, thread_id, run_id))


async def once(
    idempotency: IdempotencyGuard,
    owner: Principal,
    idempotency_key: str | None,
    route: str,
    body: dict[str, Any],
    action: Callable[[KeyHold | None], Awaitable[S]],
) -> S | tuple[str, str]:
    """``action`` once per ``Idempotency-Key`` (for the same route and body): its result,
    or, for a repeat, the (thread id, run id) the first request's run had."""
    if idempotency_key is None:
        return await action(None)
    result = await idempotency.run(
        owner,
        idempotency_key,
        request_fingerprint(route, body),
        action,
        lambda thread_id, run_id: StoredResponse(200, None, thread_id, run_id),
    )
    if not isinstance(result, StoredResponse):
        return result
    assert result.thread_id is not None
    assert result.run_id is not None
    return result.thread_id, result.run_id


@dataclass(frozen=True)
class ReplayedRun:
    """The events of a run an earlier request with the same ``Idempotency-Key`` started."""

    runs: RunService
    owner: Principal
    thread_id: str
    run_id: str

    async def listen(
        self, *, graph_modes: frozenset[str] = frozenset()
    ) -> AsyncIterator[OutgoingEvent]:
        replayed = await self.runs.replay(
            self.owner, self.thread_id, self.run_id, graph_modes=graph_modes
        )
        async for event in replayed:
            yield event

    def detach(self) -> None:
        """Nothing to stop: the run was never this request's."""
