"""Invariant 9: one history per thread. A replica that froze past its lease and woke still
believes it runs the thread: if any of its writes got past the fence, the thread's graph would
have two histories, two checkpoints continuing the same one. The event log's side (each run's
events framed, no other run's in between) is checked with the replay (``log_checks``); this is
the checkpoints' side.

Whatever the retention (``CONSENTRY_CHECKPOINT_RETENTION``), the root graph's checkpoints a
thread keeps form one line: each follows the one before it (a run that keeps turns hangs what it
writes from the checkpoint it started on), so no two name the same parent, and LangGraph's step
numbers never repeat. A time-travel fork is a second branch on purpose (its anchor is marked);
the chaos clients make none, and a marked one is left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TypeVar

from consentry_tools.chaos.snapshot import Snapshot
from consentry_tools.chaos.violations import Violation

__all__ = ["check_one_history"]

SHOWN = 3
T = TypeVar("T", str, int)


def check_one_history(snapshot: Snapshot) -> Iterator[Violation]:
    for thread_id in snapshot.thread_ids:
        line = [c for c in snapshot.stored[thread_id].checkpoints if c.fork_of is None]
        branched = _repeated(c.parent_id for c in line)
        if branched:
            yield Violation(
                "one_history",
                thread_id,
                f"{len(branched)} checkpoint(s) continued twice (two histories from one "
                f"state): {branched[:SHOWN]}",
            )
        steps = _repeated(c.step for c in line)
        if steps:
            yield Violation(
                "one_history",
                thread_id,
                f"LangGraph step(s) {steps[:SHOWN]} written twice (a step of a second history)",
            )


def _repeated(values: Iterable[T | None]) -> list[T]:
    """The values (None left out) found more than once, sorted."""
    counts = Counter(value for value in values if value is not None)
    return sorted(value for value, count in counts.items() if count > 1)
