"""The invariants a chaos trial checks, by name, and what breaking one looks like."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["INVARIANTS", "InvariantName", "Violation"]

InvariantName = Literal[
    "lost_consent",
    "message_lost",
    "decision_once",
    "thread_stuck",
    "replay",
    "seq_contiguous",
    "idempotency",
    "records_agree",
    "one_history",
    "no_server_error",
]

INVARIANTS: dict[InvariantName, str] = {
    "lost_consent": "no lost consent",
    "message_lost": "no acknowledged message lost",
    "decision_once": "no decision lost or applied twice",
    "thread_stuck": "no thread stuck",
    "replay": "replay gap- and duplicate-free",
    "seq_contiguous": "seq contiguous",
    "idempotency": "idempotent retries replayed",
    "records_agree": "event log, runs and audit agree",
    "one_history": "one history per thread",
    "no_server_error": "no 500, no unhandled error",
}
"""Each invariant's label in the report, in the order of the report."""


@dataclass(frozen=True)
class Violation:
    invariant: InvariantName
    thread_id: str | None
    detail: str
    trial: int = 0

    def key(self) -> tuple[str, str | None, str]:
        """What makes two violations the same (the trial left out)."""
        return (self.invariant, self.thread_id, self.detail)
