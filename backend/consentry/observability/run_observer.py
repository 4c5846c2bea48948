"""What one run reports to metrics (and traces, when on) as it goes: its start and end, each graph
node's task, each model retry. Fed from the chunks the run streams anyway (``tasks`` and
``custom`` modes), so observing a run costs no extra callback and no extra stream."""

from __future__ import annotations

import time
from typing import Any

from consentry.observability.metrics import Metrics
from consentry.observability.tracing import RunSpans
from consentry_graphs.models import MODEL_RETRY_EVENT

__all__ = ["RunObserver"]


class RunObserver:
    __slots__ = ("_graph", "_metrics", "_started", "_tasks", "spans")

    def __init__(
        self, metrics: Metrics, *, graph: str, trigger: str, spans: RunSpans | None = None
    ) -> None:
        self._metrics = metrics
        self._graph = graph
        self._started = time.perf_counter()
        self._tasks: dict[str, tuple[str, float]] = {}
        self.spans = spans
        """The run's spans, with tracing on."""
        metrics.run_started(graph, trigger)

    def chunk(self, mode: str, chunk: Any) -> None:
        """One streamed chunk: a task's start or result times a node; a retry is counted."""
        if mode == "tasks":
            task_id: str = chunk["id"]
            if "input" in chunk:
                self._tasks[task_id] = (chunk["name"], time.perf_counter())
                if self.spans is not None:
                    self.spans.task_started(task_id, chunk["name"])
            elif (task := self._tasks.pop(task_id, None)) is not None:
                node, started = task
                self._metrics.node_ran(self._graph, node, time.perf_counter() - started)
                if self.spans is not None:
                    self.spans.task_ended(task_id, error=chunk.get("error") is not None)
        elif (
            mode == "custom" and isinstance(chunk, dict) and chunk.get("event") == MODEL_RETRY_EVENT
        ):
            self._metrics.model_retried(str(chunk.get("model", "unknown")), str(chunk["code"]))

    def ended(self, reason: str) -> None:
        """The run ended with ``reason`` (stored)."""
        self._metrics.run_ended(self._graph, reason, time.perf_counter() - self._started)
        if self.spans is not None:
            self.spans.ended(reason)

    def stopped(self) -> None:
        """The run stopped without ending (suspended for another process, or taken over)."""
        if self.spans is not None:
            self.spans.ended("suspended")
