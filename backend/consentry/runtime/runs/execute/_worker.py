"""The worker side of a split deployment: executing the runs API-only replicas queued.

An API-only replica (``consentry serve --role api``) claims the thread, stores the run as
``queued`` with its graph inputs and notifies ``consentry_runs``. Every worker (``--role worker``
or ``all``) is woken by that notification, takes the run with a compare-and-set (one worker gets
it), leases the thread with a new fencing token and executes it like any other run; the API
replica follows the run's events through the stored log. Workers also look for queued runs at
start-up, and whenever their ``LISTEN`` connection (re)connects (``runtime.notifications``), so a
run queued while it was down is not missed: nothing polls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace

from consentry.principal import Principal
from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock
from consentry.runtime.runs.execute._executor import RunExecutor
from consentry.runtime.runs.execute._inputs import load_inputs
from consentry.runtime.runs.execute._run_options import RunOptions
from consentry.runtime.runs.execute._run_types import SEQ_RESERVATION
from consentry.storage import runs as runs_repo
from consentry.storage.db.database import Database
from consentry.storage.leases import Claim, LeaseLostError
from consentry_graphs.registry import GraphSpec

__all__ = ["RunWorker"]

log = logging.getLogger(__name__)
BATCH = 50


class RunWorker(BackgroundLoop):
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        graphs: Mapping[str, GraphSpec],
        clock: Clock,
    ) -> None:
        self._db = db
        self._executor = executor
        self._graphs = graphs
        self._clock = clock
        self._wake = asyncio.Event()

    def run_queued(self, run_id: str) -> None:
        """A run was queued somewhere (a notification): look now."""
        self._wake.set()

    async def take_queued(self) -> int:
        """Take and start every queued run this worker gets; how many."""
        async with self._db.read() as conn:
            queued = await runs_repo.queued_runs(conn, limit=BATCH)
        started = 0
        for run_id in queued:
            try:
                started += await self._take(run_id)
            except Exception:
                log.exception("could not start a queued run", extra={"run_id": run_id})
        return started

    async def _take(self, run_id: str) -> int:
        now = self._clock()
        leases = self._executor.leases
        try:
            async with self._db.write() as conn:
                run = await runs_repo.take_queued_run(
                    conn, run_id, lease_owner=leases.owner, lease_expires_at=leases.expires_at(now)
                )
        except LeaseLostError:
            return 0
        if run is None:
            return 0  # another worker took it
        spec = self._graphs[run.graph]
        options = RunOptions.for_thread(spec, run.run_options)
        if run.webhook is not None:  # (stored on its row by the replica that claimed it)
            options = replace(options, webhook=run.webhook)
        started = self._executor.launch(
            Principal(run.tenant, run.user_id),
            spec=spec,
            thread_id=run.thread_id,
            run_id=run_id,
            claim=Claim(last_seq=run.last_seq - SEQ_RESERVATION, fencing_token=run.fencing_token),
            trigger=run.trigger,
            consent_policy=run.consent_policy,
            graph_inputs=load_inputs(run.inputs or []),
            options=options,
        )
        started.events.detach()  # the replica that queued it follows the stored log
        return 1

    async def _run(self) -> None:
        while True:
            try:
                await self.take_queued()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("looking for queued runs failed")
            await self._wake.wait()
            self._wake.clear()

    def start(self) -> None:
        self._start(self._run, name="run-worker")

    async def stop(self) -> None:
        await self._cancel()
