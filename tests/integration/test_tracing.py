"""OpenTelemetry traces (``observability.tracing``), read back from an in-memory exporter: a span
per HTTP request, per run, per graph node and per model call, in one tree, each naming its thread
and run. And tracing off costs nothing: no middleware, no SDK loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from consentry.api.http.request_spans import TracingMiddleware
from consentry.app import create_app
from consentry.observability.tracing import _traces_url
from consentry.schemas.events import ConsentEvent, FinalEvent, StepEvent
from consentry.settings import Settings
from tests.conftest import ManualClock
from tests.lifespan import running
from tests.live_server import serve_app
from tests.sse import ask_for_note_edit, chat

Opener = Callable[..., Any]


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


def _opener(db_url: str, clock: ManualClock, exporter: InMemorySpanExporter) -> Opener:
    @asynccontextmanager
    async def _open(**overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(
            Settings(database_url=db_url, **overrides), clock=clock, span_exporter=exporter
        )
        async with running(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield client

    return _open


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_conversation_is_one_tree_of_request_run_node_and_model_spans(
    db_url: str, clock: ManualClock
) -> None:
    exporter = InMemorySpanExporter()
    async with _opener(db_url, clock, exporter)() as client:
        _, asked = await ask_for_note_edit(client)
        consent = asked[-2]
        assert isinstance(consent, ConsentEvent)
        exporter.clear()  # from here: the decision's request and run only
        decided = await chat(
            client,
            {
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )
    spans = list(exporter.get_finished_spans())
    assert isinstance(decided[-1], FinalEvent)
    thread_id, run_id = decided[-1].thread_id, decided[-1].run_id

    (request,) = [s for s in spans if s.name == "POST /v1/chat"]
    assert request.parent is None
    assert request.attributes is not None
    assert dict(request.attributes) == {
        "http.request.method": "POST",
        "url.path": "/v1/chat",
        "consentry.request_id": request.attributes["consentry.request_id"],
        "http.response.status_code": 200,
        "consentry.thread_id": thread_id,
        "consentry.run_id": run_id,
        "http.route": "/v1/chat",
    }
    (run,) = _children(spans, request)
    assert run.name == "run tutor"
    assert dict(run.attributes or {}) == {
        "consentry.thread_id": thread_id,
        "consentry.run_id": run_id,
        "consentry.graph": "tutor",
        "consentry.trigger": "resume",
        "consentry.reason": "completed",
    }
    steps = [e.node for e in decided if isinstance(e, StepEvent)]
    nodes = _children(spans, run)
    assert sorted(s.name for s in nodes) == sorted(f"node {n}" for n in steps)
    for node in nodes:
        attributes = dict(node.attributes or {})
        assert (attributes["consentry.thread_id"], attributes["consentry.run_id"]) == (
            thread_id,
            run_id,
        )
        assert node.start_time is not None
        assert run.start_time is not None
        assert node.end_time is not None
        assert run.end_time is not None
        assert run.start_time <= node.start_time <= node.end_time <= run.end_time
    assert [s for n in nodes for s in _children(spans, n)] == []  # approving calls no model
    assert len(spans) == 2 + len(nodes)


async def test_model_calls_are_spans_under_their_node_with_the_tokens_used(
    db_url: str, clock: ManualClock
) -> None:
    exporter = InMemorySpanExporter()
    async with _opener(db_url, clock, exporter)() as client:
        _, events = await ask_for_note_edit(client)
    spans = list(exporter.get_finished_spans())
    final = events[-1]
    assert isinstance(final, FinalEvent)

    every_model = [s for s in spans if s.name.startswith("model ")]
    runs = [dict(s.attributes or {})["consentry.run_id"] for s in every_model]
    # The question before (its two calls), then the summary's run: each call under its run.
    assert len(set(runs)) == 2
    models = [s for s, run in zip(every_model, runs, strict=True) if run == final.run_id]
    assert [s.name for s in models] == ["model consentry-offline"] * 2
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    parents = [by_id[s.parent.span_id].name for s in models if s.parent is not None]
    assert parents == ["node analyze_message", "node draft_note_edit"]
    used = [dict(s.attributes or {}) for s in models]
    assert sum(int(u["gen_ai.usage.input_tokens"]) for u in used) == final.usage.input_tokens
    assert sum(int(u["gen_ai.usage.output_tokens"]) for u in used) == final.usage.output_tokens


async def test_a_request_that_fails_to_authenticate_is_a_span_with_its_status(
    db_url: str, clock: ManualClock
) -> None:
    exporter = InMemorySpanExporter()
    async with _opener(db_url, clock, exporter)(api_keys="k=acme:alice") as client:
        refused = await client.get("/v1/threads", headers={"X-Request-ID": "r-1"})
    assert refused.status_code == 401
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "GET /v1/threads"]
    attributes = dict(span.attributes or {})
    assert (attributes["http.response.status_code"], attributes["consentry.request_id"]) == (
        401,
        "r-1",
    )


def test_tracing_off_installs_nothing_and_loads_no_exporter(tmp_path: Any) -> None:
    """(LangSmith, which LangChain loads, imports the OpenTelemetry SDK itself when it is
    installed; what tracing would add is the middleware and the exporter.)"""
    program = f"""
import json, sys
from consentry.app import create_app
from consentry.settings import Settings
app = create_app(Settings(database_url="sqlite:///{tmp_path}/db.sqlite"))
print(json.dumps({{
    "middleware": [m.cls.__name__ for m in app.user_middleware],
    "exporter": sorted(m for m in sys.modules if m.startswith("opentelemetry.exporter")),
}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(done.stdout)
    assert TracingMiddleware.__name__ not in loaded["middleware"]
    assert "RequestIds" in loaded["middleware"]
    assert loaded["exporter"] == []


def test_the_endpoint_names_the_collector_and_the_traces_path_is_added_once() -> None:
    assert _traces_url("http://collector:4318") == "http://collector:4318/v1/traces"
    assert _traces_url("http://collector:4318/") == "http://collector:4318/v1/traces"
    assert _traces_url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"


async def test_with_an_otlp_endpoint_set_spans_reach_the_collector_over_http(
    db_url: str, clock: ManualClock
) -> None:
    """A local OTLP/HTTP collector (a Starlette app on a real port) receives the spans the app
    exports when its lifespan ends."""
    received: list[bytes] = []

    async def collect(request: Request) -> Response:
        received.append(await request.body())
        return Response(status_code=200)

    collector = Starlette(routes=[Route("/v1/traces", collect, methods=["POST"])])
    async with serve_app(collector, lifespan="off") as base_url:
        settings = Settings(
            database_url=db_url, otel_exporter_otlp_endpoint=base_url, otel_service_name="c-test"
        )
        app = create_app(settings, clock=clock)
        async with running(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                assert (await client.get("/v1/threads")).status_code == 200

    names, services = [], set()
    for body in received:
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            services |= {
                a.value.string_value
                for a in resource_spans.resource.attributes
                if a.key == "service.name"
            }
            names += [s.name for scope in resource_spans.scope_spans for s in scope.spans]
    assert names == ["GET /v1/threads"]
    assert services == {"c-test"}
