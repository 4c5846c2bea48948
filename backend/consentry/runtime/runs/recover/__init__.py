"""Recovering runs: finding the runs of dead processes and closing each as far as it got
(``_dead_runs``), continuing their work or a failed run's retry (``_recovery``), and the loop
that takes over dead replicas' runs (``_takeover``), and the one that closes the runs this
process left open on SQLite (``_left_runs``). Imports ``start`` and ``execute``."""

from __future__ import annotations

from consentry.runtime.runs.recover._left_runs import LeftRunCloser
from consentry.runtime.runs.recover._recovery import retry_failed_run, take_over_dead_runs
from consentry.runtime.runs.recover._takeover import DeadRunTaker, RunTakeover

__all__ = [
    "DeadRunTaker",
    "LeftRunCloser",
    "RunTakeover",
    "retry_failed_run",
    "take_over_dead_runs",
]
