"""Prometheus metrics: what an operator watches (``GET /metrics``, ``docs/operations.md``).

Each app owns its registry (``Metrics.registry``), so two apps in one process never mix their
counts. Every series is labelled only by bounded values (graph, node, consent kind, decision,
decider, model, terminal reason, fault code): never a tenant, a user, a thread or a message.
Counting costs a dictionary lookup and an addition under a lock; nothing here does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from langchain_core.outputs import LLMResult
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from consentry.observability.usage import ModelCallHandler, model_name, reported_usage

__all__ = ["Decider", "Metrics", "ModelCallMetrics", "WebhookOutcome", "decider_of"]

# No `_created` twin of every series: nothing here needs one.
disable_created_metrics()  # type: ignore[no-untyped-call]

Decider = Literal["person", "policy", "system"]

WebhookOutcome = Literal["delivered", "retry", "gave_up", "refused"]
"""How one webhook attempt ended: a 2xx; a failure tried again later; the last failure of the
retry window; not sent, its URL no longer allowed (``runtime.webhooks``)."""

_RUN_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_NODE_SECONDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_MODEL_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_MINUTE, _HOUR, _DAY = 60, 3_600, 86_400
# From seconds (someone watching the screen) to days (an approval in someone's inbox).
_WAIT_SECONDS = (
    1,
    5,
    15,
    30,
    _MINUTE,
    5 * _MINUTE,
    15 * _MINUTE,
    30 * _MINUTE,
    _HOUR,
    3 * _HOUR,
    6 * _HOUR,
    12 * _HOUR,
    _DAY,
    2 * _DAY,
    3 * _DAY,
    7 * _DAY,
)


_LIMIT_CODES = frozenset({"limit_exceeded", "message_too_long"})


def decider_of(decided_by: str) -> Decider:
    """``decided_by`` as a label: ``policy`` and ``system`` as such, anyone else a person."""
    if decided_by == "policy":
        return "policy"
    if decided_by == "system":
        return "system"
    return "person"


class Metrics:
    """Every series Consentry exports, and one method per thing that happens."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(
            name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
        ) -> Histogram:
            return Histogram(name, doc, labels, registry=registry, buckets=buckets)

        self.runs_started = counter(
            "consentry_runs_started", "Runs started, by graph and trigger.", ("graph", "trigger")
        )
        self.runs_ended = counter(
            "consentry_runs_ended", "Runs ended, by graph and terminal reason.", ("graph", "reason")
        )
        self.run_duration = histogram(
            "consentry_run_duration_seconds",
            "Wall time of a run in this process, from its start to its stored end.",
            ("graph", "reason"),
            _RUN_SECONDS,
        )
        self.consents_requested = counter(
            "consentry_consents_requested", "Consents asked for, by kind.", ("graph", "kind")
        )
        self.decisions = counter(
            "consentry_decisions",
            "Consent decisions recorded, by kind, decision and decider.",
            ("kind", "decision", "decider"),
        )
        self.approval_wait = histogram(
            "consentry_approval_wait_seconds",
            "Time from a consent request to its decision.",
            ("kind", "decider"),
            _WAIT_SECONDS,
        )
        self.expirations = counter(
            "consentry_consents_expired", "Consents that expired undecided, by kind.", ("kind",)
        )
        self.model_calls = counter(
            "consentry_model_calls",
            "Model calls (all attempts of one call count once), by model and outcome.",
            ("model", "outcome"),
        )
        self.model_latency = histogram(
            "consentry_model_call_duration_seconds",
            "Duration of a model call, retries and their waits included.",
            ("model",),
            _MODEL_SECONDS,
        )
        self.model_retries = counter(
            "consentry_model_retries",
            "Model attempts retried, by model and fault.",
            ("model", "code"),
        )
        self.model_tokens = counter(
            "consentry_model_tokens",
            "Tokens the model provider reported, by model and kind (prompt or completion).",
            ("model", "kind"),
        )
        self.node_duration = histogram(
            "consentry_node_duration_seconds",
            "Duration of one graph node's task.",
            ("graph", "node"),
            _NODE_SECONDS,
        )
        self.cron_ticks = counter(
            "consentry_cron_ticks",
            "Cron ticks this process took: `queued` (a run) or `skipped`, with why.",
            ("outcome", "reason"),
        )
        self.open_streams = Gauge(
            "consentry_open_streams", "Event streams this process is sending.", registry=registry
        )
        self.active_runs = Gauge(
            "consentry_active_runs", "Runs executing in this process.", registry=registry
        )
        self.replays = counter(
            "consentry_event_replays",
            "Streams served from the stored event log, by kind: `join` (a client joined or "
            "rejoined a thread's stream), `resync` (a rejoin asked for events past retention), "
            "`idempotent` (a repeated request got its first run's events again).",
            ("kind",),
        )
        self.refusals = counter(
            "consentry_limit_refusals",
            "Requests refused by a limit (docs/limits.md), by code: `body_too_large`, "
            "`limit_exceeded`, `message_too_long`, `rate_limited`, `too_many_streams`, "
            "`too_many_active_runs`.",
            ("code",),
        )
        self.database_errors = counter(
            "consentry_database_errors",
            "Database errors: `unavailable` (answered 503), `storage_full` (answered 507), "
            "`query` (answered 500), "
            "`run_end` (a run's end could not be stored).",
            ("kind",),
        )
        self.webhook_attempts = counter(
            "consentry_webhook_attempts",
            "Webhook posts attempted, by outcome: `delivered` (a 2xx), `retry` (failed, tried "
            "again later), `gave_up` (failed past the retry window), `refused` (its URL no "
            "longer allowed: not sent).",
            ("outcome",),
        )

    def watch(self, *, open_streams: Callable[[], int], active_runs: Callable[[], int]) -> None:
        """Read the gauges from these at each scrape (no bookkeeping on the hot path)."""
        self.open_streams.set_function(lambda: float(open_streams()))
        self.active_runs.set_function(lambda: float(active_runs()))

    def run_started(self, graph: str, trigger: str) -> None:
        self.runs_started.labels(graph, trigger).inc()

    def run_ended(self, graph: str, reason: str, seconds: float) -> None:
        self.runs_ended.labels(graph, reason).inc()
        self.run_duration.labels(graph, reason).observe(seconds)

    def run_closed_after_crash(self, graph: str, reason: str) -> None:
        """A run whose process died was closed by another, as far as its graph got (``failed``
        when a new run continues it; its duration is unknown)."""
        self.runs_ended.labels(graph, reason).inc()

    def consent_requested(self, graph: str, kind: str) -> None:
        self.consents_requested.labels(graph, kind).inc()

    def decided(
        self, *, kind: str, decision: str, decided_by: str, asked_at: datetime, now: datetime
    ) -> None:
        """A consent was decided (approve, edit or reject); an expiry is ``expired``."""
        decider = decider_of(decided_by)
        self.decisions.labels(kind, decision, decider).inc()
        self.approval_wait.labels(kind, decider).observe(max(0.0, (now - asked_at).total_seconds()))

    def expired(self, kind: str) -> None:
        self.expirations.labels(kind).inc()

    def model_retried(self, model: str, code: str) -> None:
        self.model_retries.labels(model, code).inc()

    def node_ran(self, graph: str, node: str, seconds: float) -> None:
        self.node_duration.labels(graph, node).observe(seconds)

    def stream_replayed(self, kind: Literal["join", "resync", "idempotent"]) -> None:
        self.replays.labels(kind).inc()

    def refused(self, code: str, status: int) -> None:
        """An error answered: counted when it is a limit's (413, 429 or a size limit's 422)."""
        if status in (413, 429) or code in _LIMIT_CODES:
            self.refusals.labels(code).inc()

    def webhook_attempted(self, outcome: WebhookOutcome) -> None:
        self.webhook_attempts.labels(outcome).inc()

    def database_error(
        self, kind: Literal["unavailable", "storage_full", "query", "run_end"]
    ) -> None:
        self.database_errors.labels(kind).inc()


class ModelCallMetrics(ModelCallHandler):
    """Counts every model call of the runs it is given to (one instance serves them all):
    latency, outcome and the tokens the provider reported, labelled by model name."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._calls: dict[UUID, tuple[str, float]] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._calls[run_id] = (model_name(metadata), time.perf_counter())

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._calls.pop(run_id, None)
        if call is None:
            return
        model, started = call
        metrics = self._metrics
        metrics.model_calls.labels(model, "ok").inc()
        metrics.model_latency.labels(model).observe(time.perf_counter() - started)
        prompt, completion = reported_usage(response)
        if prompt:
            metrics.model_tokens.labels(model, "prompt").inc(prompt)
        if completion:
            metrics.model_tokens.labels(model, "completion").inc(completion)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._calls.pop(run_id, None)
        if call is None:
            return
        model, started = call
        self._metrics.model_calls.labels(model, "error").inc()
        self._metrics.model_latency.labels(model).observe(time.perf_counter() - started)
