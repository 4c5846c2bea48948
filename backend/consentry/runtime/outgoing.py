"""An event as it goes out: serialized once, what SSE sends and what storage keeps. Shared by the
streams of runs (``runtime.runs``), of the approvals feed (``runtime.consents``) and of a run
followed through the log (``runtime.replicas``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OutgoingEvent"]


@dataclass(frozen=True, slots=True)
class OutgoingEvent:
    """An event serialized once: what SSE sends and what storage keeps."""

    seq: int
    type: str
    data: str
