"""The app factory and its lifespan."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from consentry.api import agui, api_docs, health, metrics, web
from consentry.api.http.body_limit import RequestBodyLimits
from consentry.api.http.cors import cors_options
from consentry.api.http.deps import authenticate, needs_principal, request_api_key
from consentry.api.http.request_errors import request_error
from consentry.api.http.request_ids import RequestIds
from consentry.api.http.request_spans import TracingMiddleware
from consentry.api.http.url_text import UnstorableTextInUrl
from consentry.api.run_requests import RunRequests
from consentry.api.sdk import assistants as sdk_assistants
from consentry.api.sdk import crons as sdk_crons
from consentry.api.sdk import open_run_queue, scheduling_crons
from consentry.api.sdk import run_records as sdk_run_records
from consentry.api.sdk import runs as sdk_runs
from consentry.api.sdk import server as sdk_server
from consentry.api.sdk import store as sdk_store
from consentry.api.sdk import threads as sdk_threads
from consentry.api.v1 import (
    approval_feed,
    approvals,
    chat,
    consent_kinds,
    graphs,
    me,
    notes,
    threads,
)
from consentry.errors import ConsentryError, UnauthorizedError
from consentry.observability.tracing import Tracing
from consentry.runtime.clock import Clock, MonotonicClock
from consentry.schemas.approvals import ApprovalChange, ApprovalsReady
from consentry.schemas.errors import ErrorBody, ErrorDetail
from consentry.schemas.events import EVENT_ADAPTER
from consentry.services import open_services
from consentry.settings import Settings
from consentry.storage.db.database import (
    DATABASE_ERRORS,
    is_database_unavailable,
    is_storage_full,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["create_app"]

log = logging.getLogger(__name__)
DATABASE_RETRY_AFTER_SECONDS = 2
_HTTP_CODES = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
}
_HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def _error(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, details=details or {}))
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


async def _on_consentry_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ConsentryError)
    request.app.state.services.metrics.refused(exc.code, exc.status_code)
    response = _error(exc.status_code, exc.code, exc.message, exc.details)
    response.headers.update(exc.headers)
    return response


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    if needs_principal(request.scope.get("route")):
        # FastAPI reads the body before it resolves dependencies: a caller without a valid key
        # hears 401, never what was wrong with its body.
        try:
            authenticate(
                request.app.state.services.settings.api_keys, await request_api_key(request)
            )
        except UnauthorizedError as refused:
            return await _on_consentry_error(request, refused)
    error = request_error(exc, content_type=request.headers.get("content-type"))
    return await _on_consentry_error(request, error)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
        # UTF-8 that Python's JSON parser takes for UTF-16 or UTF-32 (it guesses the encoding
        # from NUL bytes: b"\x00a\x00bc"): not JSON. Bytes that are not UTF-8 at all never get
        # here (422 `unstorable_text`, ``api.json_limits``).
        return _error(422, "malformed_json", "The request body is not valid JSON.")
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    response = _error(exc.status_code, code, str(exc.detail))
    response.headers.update(exc.headers or {})
    if exc.status_code == 405 and (allowed := _allowed_methods(request)):
        response.headers["Allow"] = allowed
    return response


def _allowed_methods(request: Request) -> str:
    """The methods the request's path answers, for a 405's ``Allow``: the ones with which some
    route matches the path fully.

    FastAPI makes one route per method, and Starlette's ``Allow`` names only the methods of the
    first route of the path. Computed on each 405 (an error path): a few dozen matches. Mounts
    match any method, whatever the app behind them allows: they say it in their own 405."""
    routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]

    def answers(method: str) -> bool:
        scope = {**request.scope, "method": method}
        return any(route.matches(scope)[0] is Match.FULL for route in routes)

    return ", ".join(filter(answers, _HTTP_METHODS))


async def _on_database_error(request: Request, exc: Exception) -> JSONResponse:
    """A database that cannot be reached is a 503 the client may retry, not a bug; one whose
    disk is full, a 507 (``storage_full``) the client may retry as well."""
    metrics = request.app.state.services.metrics
    if not is_database_unavailable(exc):
        metrics.database_error("query")
        return await _on_unexpected_error(request, exc)
    if is_storage_full(exc):
        # Nothing of the request was stored (its transaction rolled back): the same request
        # succeeds once the database's disk has room again.
        metrics.database_error("storage_full")
        log.warning("database storage full on %s %s: %r", request.method, request.url.path, exc)
        response = _error(
            507, "storage_full", "The server's storage is full; nothing was stored. Retry later."
        )
    else:
        metrics.database_error("unavailable")
        log.warning("database unavailable on %s %s: %r", request.method, request.url.path, exc)
        response = _error(
            503, "database_unavailable", "The database cannot be reached; try again shortly."
        )
    response.headers["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


async def _on_unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _error(500, "internal_error", "Something went wrong on our side.")


def _openapi(app: FastAPI) -> dict[str, Any]:
    """OpenAPI, plus the models of the SSE frames: the run events' union under
    ``components.schemas.Event``, and the approvals stream's frames."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title, version=app.version, routes=app.routes, description=app.description
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, adapter in (
            ("Event", EVENT_ADAPTER),
            ("ApprovalChange", TypeAdapter(ApprovalChange)),
            ("ApprovalsReady", TypeAdapter(ApprovalsReady)),
        ):
            frame = adapter.json_schema(ref_template="#/components/schemas/{model}")
            components.update(frame.pop("$defs", {}))
            components[name] = frame
        _require_discriminators(schema, components)
        app.openapi_schema = schema
    return app.openapi_schema


def _require_discriminators(node: Any, components: dict[str, Any]) -> None:
    """Each member of a tagged union requires its tag: pydantic's validation schema leaves out
    of ``required`` a tag that has a default (AG-UI's messages: ``role``), yet a body without it
    is refused, since the tag picks the member."""
    if isinstance(node, list):
        for item in node:
            _require_discriminators(item, components)
        return
    if not isinstance(node, dict):
        return
    discriminator = node.get("discriminator")
    if isinstance(discriminator, dict):
        tag = discriminator["propertyName"]
        for ref in discriminator.get("mapping", {}).values():
            member = components.get(ref.rsplit("/", 1)[-1], {})
            if tag in member.get("properties", {}) and tag not in member.get("required", []):
                member["required"] = [*member.get("required", []), tag]
    for value in node.values():
        _require_discriminators(value, components)


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    span_exporter: SpanExporter | None = None,
) -> FastAPI:
    """The app. With ``span_exporter`` (tests) or ``OTEL_EXPORTER_OTLP_ENDPOINT``, traced.
    ``clock``: the time it measures deadlines and leases with (a :class:`MonotonicClock` started
    with the app, unless a test gives its own)."""
    settings = settings or Settings()
    clock = clock or MonotonicClock()
    tracing = _tracing(settings, span_exporter)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with open_services(settings, clock=clock, tracing=tracing) as services:
                app.state.services = services
                app.state.run_requests = run_requests = RunRequests.of(services)
                async with (
                    open_run_queue(services, run_requests) as queue,
                    scheduling_crons(services, queue),
                ):
                    app.state.run_queue = queue
                    yield
        finally:
            if tracing is not None:  # its last export is blocking I/O: not on the loop
                await asyncio.to_thread(tracing.shutdown)

    app = FastAPI(
        title="Consentry",
        version="0.1.0",
        description="LangGraph workflows over a typed SSE chat API, with human consent gates.",
        lifespan=lifespan,
        docs_url=None,  # served offline by api.api_docs, not from a CDN
        redoc_url=None,
    )
    app.add_exception_handler(ConsentryError, _on_consentry_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    for database_error in DATABASE_ERRORS:
        app.add_exception_handler(database_error, _on_database_error)
    app.add_exception_handler(Exception, _on_unexpected_error)
    # The approvals feed's /stream before /v1/approvals/{approval_id}.
    routers = (
        chat,
        threads,
        approval_feed,
        approvals,
        consent_kinds,
        graphs,
        notes,
        health,
        metrics,
        web,
    )
    for module in (*routers, me, api_docs):
        app.include_router(module.router)
    # The LangGraph SDK's face (docs/langgraph-sdk.md).
    sdk_routers = (
        sdk_server,
        sdk_assistants,
        sdk_threads,
        sdk_crons,
        sdk_runs,
        sdk_run_records,
        sdk_store,
    )
    for sdk in sdk_routers:
        app.include_router(sdk.router)
    app.include_router(agui.router)  # AG-UI's face (docs/ag-ui.md)
    app.mount("/web", web.WebFiles(), name="web")
    app.mount(api_docs.ASSETS_PATH, api_docs.DocsAssets(), name="docs-assets")
    # Limits that answer before any route parses the request (docs/limits.md); the last added
    # runs first.
    app.add_middleware(
        RequestBodyLimits,
        max_bytes=settings.max_body_bytes,
        max_json_depth=settings.max_json_depth,
        max_list_items=settings.max_list_items,
    )
    app.add_middleware(UnstorableTextInUrl)
    if settings.cors_origins:  # outside the limits: they apply, and their refusals are readable
        app.add_middleware(CORSMiddleware, **cors_options(settings.cors_origins))
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    if tracing is not None:
        app.add_middleware(TracingMiddleware, tracing=tracing)
    app.add_middleware(RequestIds)
    return app


def _tracing(settings: Settings, exporter: SpanExporter | None) -> Tracing | None:
    if exporter is not None:  # spans exported as they end, for a test to read at once
        return Tracing(exporter, service_name=settings.otel_service_name, batch=False)
    if settings.otel_exporter_otlp_endpoint is not None:
        return Tracing.over_otlp(
            settings.otel_exporter_otlp_endpoint, service_name=settings.otel_service_name
        )
    return None
