"""A run that stops for a takeover: another process owns its thread now (its lease was taken
over), or the database is lost to it (``_failures.database_lost``): on PostgreSQL its
connection broke under a write whose answer never came (what the database holds of the run is
unknown); on SQLite the file refused a write for now (its disk full, its file locked past the
busy timeout). Either way the run stores nothing more of its own (``RunStore.suspend``: with the
database lost it only gives its lease up) and the replica that takes it over (on SQLite this
process, once the file takes writes again: ``LeftOpenRuns``) continues it from its last
checkpoint, or closes it as its graph ended. The suspension is shielded: a cancel that lands
meanwhile (a lease renewal that gave up) must not leave its streams open."""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from consentry.runtime.runs.execute._run_store import RunStore, continues_after_a_stop
from consentry.runtime.runs.execute._run_types import RunContext

__all__ = ["stop_for_takeover"]

log = logging.getLogger("consentry.runtime.runs.execute._executor")  # the run's own log lines

_WHY = {
    "lease_lost": "a run lost its lease (another process took it over); it stops, storing nothing",
    "database_lost": "the database went away during a run; it stops, to be continued from its "
    "last checkpoint",
}


async def stop_for_takeover(
    store: RunStore, run: RunContext, why: Literal["lease_lost", "database_lost"]
) -> None:
    events = run.events
    log.warning(_WHY[why], extra={"thread_id": events.thread_id, "run_id": events.run_id})
    continues = continues_after_a_stop(run)
    run.stop = why
    await asyncio.shield(store.suspend(run, continue_work=continues))
