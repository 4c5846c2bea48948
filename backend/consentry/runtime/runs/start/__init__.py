"""Starting a run: the thread a request is for (``_targets``), a new message (``_messages``),
a decision or an expiry (``_decisions``), how stopped work goes on (``_continuation``), and
the claim and launch every start ends with (``_claims``, ``_launcher``). Imports ``execute``."""

from __future__ import annotations

from consentry.runtime.runs.start._continuation import continuation
from consentry.runtime.runs.start._decisions import (
    expire_consent_run,
    expire_raw_interrupt,
    start_decisions,
)
from consentry.runtime.runs.start._launcher import Launcher
from consentry.runtime.runs.start._messages import start_message
from consentry.runtime.runs.start._targets import (
    RunTarget,
    RunTargets,
    refuse_if_running,
    run_in_progress,
    thread_exists,
)

__all__ = [
    "Launcher",
    "RunTarget",
    "RunTargets",
    "continuation",
    "expire_consent_run",
    "expire_raw_interrupt",
    "refuse_if_running",
    "run_in_progress",
    "start_decisions",
    "start_message",
    "thread_exists",
]
