"""A thread's newest checkpoint as a read found it, kept for the first read of the run that
starts from it.

A run that continues a thread's graph (a decision, an expiry, a message to a thread that waits
for a consent) is started from where the graph stands, read before the run's claim
(``GraphStreamer.position``, LangGraph's ``aget_state``); LangGraph then reads the same newest
checkpoint again when the run streams. A read with a :class:`HeadRead` in its config
(``READ_KEY``) keeps the rows it found there. The run that starts from it gets it
(``StepCommitter.head``) only when nothing else could have written the thread's checkpoints
since (its claim is the first change of the thread's row since the request read it:
``Launcher.launch``); the saver then answers the run's first read of its thread with those rows,
decoded again (``_operations.tuple_of``: nothing is shared with what the position made of them),
when that read is of the newest checkpoint of the thread's root graph, and drops them at that
first read whatever it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["READ_KEY", "HeadRead"]

READ_KEY = "__consentry_read__"
"""The ``configurable`` key of a :class:`HeadRead` (``__``-prefixed, as ``RUN_KEY``)."""


@dataclass(eq=False)
class HeadRead:
    """What a read of the newest checkpoint of ``thread_id``'s root graph found."""

    thread_id: str
    rows: list[tuple[Any, ...]] | None = None
    """The checkpoint's row and its pending writes', undecoded (``[]``: the thread had none);
    None until the read."""
