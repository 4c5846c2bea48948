"""Reading: joining a thread's stream with no gap and no duplicate, and replaying a run for an
idempotent retry (``_joins``); reading threads, their transcripts, consents, audit trail and
graph state (``_reads``). Imports ``execute``."""

from __future__ import annotations

from consentry.runtime.runs.read._joins import StreamJoins
from consentry.runtime.runs.read._reads import DERIVED_METADATA, ThreadReader

__all__ = ["DERIVED_METADATA", "StreamJoins", "ThreadReader"]
