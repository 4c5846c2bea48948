"""OpenTelemetry traces, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``CONSENTRY_OTEL_EXPORTER_OTLP_ENDPOINT``) is set: a span per HTTP request (its middleware is
``api.http.request_spans``), per run, per graph node and per model call.

The tree: ``POST /v1/chat`` → ``run tutor`` → ``node draft_note_edit`` → ``model gpt-4o-mini``.
A run outlives its request, and a decision's run is started by another request, perhaps on
another replica: every run, node and model span carries ``consentry.thread_id`` and
``consentry.run_id``, and every request span the ids its response names, so a thread's whole
story is one attribute query away.

Off by default, and then free: nothing here is imported (``opentelemetry`` is not loaded), no
middleware is installed, and a run checks one ``None``. The spans go to their own
``TracerProvider`` (the global one is left to the host), exported in batches over OTLP/HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.outputs import LLMResult

from consentry.observability.usage import ModelCallHandler, model_name, reported_usage

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

__all__ = ["RUN_ATTRIBUTE", "THREAD_ATTRIBUTE", "ModelCallSpans", "RunSpans", "Tracing"]

THREAD_ATTRIBUTE, RUN_ATTRIBUTE = "consentry.thread_id", "consentry.run_id"
"""The attributes of every span that belongs to a thread's story (requests, runs, nodes, model
calls)."""


class TracingUnavailableError(RuntimeError):
    """Tracing is asked for, and the OpenTelemetry SDK is not installed."""


class Tracing:
    """The tracer of one app, and what it starts spans with."""

    def __init__(self, exporter: SpanExporter, *, service_name: str, batch: bool = True) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer: Tracer = self.provider.get_tracer("consentry")

    @classmethod
    def over_otlp(cls, endpoint: str, *, service_name: str) -> Tracing:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise TracingUnavailableError(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
                "pip install 'consentry[otel]'"
            ) from exc
        return cls(OTLPSpanExporter(endpoint=_traces_url(endpoint)), service_name=service_name)

    def run(self, *, graph: str, trigger: str, thread_id: str, run_id: str) -> RunSpans:
        return RunSpans(self, graph=graph, trigger=trigger, thread_id=thread_id, run_id=run_id)

    def shutdown(self) -> None:
        """Export what is left, then stop (the lifespan's end)."""
        self.provider.shutdown()


def _traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL from a base endpoint, as the OpenTelemetry environment variable
    means it (``http://collector:4318`` → ``http://collector:4318/v1/traces``)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


class RunSpans:
    """One run's span and its nodes' and model calls' spans. A node's span opens at whichever
    comes first, its task's start on the stream or its first model call."""

    def __init__(
        self, tracing: Tracing, *, graph: str, trigger: str, thread_id: str, run_id: str
    ) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = tracing.tracer
        self._ids = {THREAD_ATTRIBUTE: thread_id, RUN_ATTRIBUTE: run_id, "consentry.graph": graph}
        # Started in the request's context: the request that started the run is its parent.
        self._span = self._tracer.start_span(
            f"run {graph}", attributes={**self._ids, "consentry.trigger": trigger}
        )
        self._context: Context = trace.set_span_in_context(self._span)
        self._tasks: dict[str, Span] = {}
        self._calls: dict[UUID, Span] = {}

    def task_started(self, task_id: str, node: str) -> Span:
        span = self._tasks.get(task_id)
        if span is None:
            span = self._tracer.start_span(
                f"node {node}",
                context=self._context,
                attributes={**self._ids, "consentry.node": node},
            )
            self._tasks[task_id] = span
        return span

    def task_ended(self, task_id: str, *, error: bool) -> None:
        span = self._tasks.pop(task_id, None)
        if span is not None:
            if error:
                span.set_status(self._trace.StatusCode.ERROR)
            span.end()

    def model_started(self, call: UUID, *, model: str, task_id: str, node: str) -> None:
        parent = self.task_started(task_id, node) if task_id else self._span
        self._calls[call] = self._tracer.start_span(
            f"model {model}",
            context=self._trace.set_span_in_context(parent),
            attributes={**self._ids, "gen_ai.request.model": model},
        )

    def model_ended(self, call: UUID, *, prompt: int, completion: int, error: bool) -> None:
        span = self._calls.pop(call, None)
        if span is None:
            return
        span.set_attribute("gen_ai.usage.input_tokens", prompt)
        span.set_attribute("gen_ai.usage.output_tokens", completion)
        if error:
            span.set_status(self._trace.StatusCode.ERROR)
        span.end()

    def ended(self, reason: str) -> None:
        for span in [*self._calls.values(), *self._tasks.values()]:
            span.end()  # a run stopped mid-step (cancelled, suspended): close what it left
        self._calls.clear()
        self._tasks.clear()
        self._span.set_attribute("consentry.reason", reason)
        if reason == "failed":
            self._span.set_status(self._trace.StatusCode.ERROR)
        self._span.end()


class ModelCallSpans(ModelCallHandler):
    """A run's model calls as spans under their node's span (given to a run only with tracing
    on)."""

    def __init__(self, spans: RunSpans) -> None:
        self._spans = spans

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        metadata = metadata or {}
        # ``langgraph_checkpoint_ns`` is ``node:task_id`` (the task id the tasks stream names).
        _, _, task_id = str(metadata.get("langgraph_checkpoint_ns", "")).partition(":")
        self._spans.model_started(
            run_id,
            model=model_name(metadata),
            task_id=task_id.split("|")[0],
            node=str(metadata.get("langgraph_node", "")),
        )

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt, completion = reported_usage(response)
        self._spans.model_ended(run_id, prompt=prompt, completion=completion, error=False)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._spans.model_ended(run_id, prompt=0, completion=0, error=True)
