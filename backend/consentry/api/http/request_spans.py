"""A span per HTTP request when traces are on (``observability.tracing``): installed by the app
only then, so that a server without traces runs no code of it."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from consentry.observability.logs import request_id
from consentry.observability.tracing import RUN_ATTRIBUTE, THREAD_ATTRIBUTE, Tracing

__all__ = ["TracingMiddleware"]


class TracingMiddleware:
    """A span per HTTP request, current while the request is served (so the run it starts is
    its child), named by its route and carrying the thread and run its response names."""

    def __init__(self, app: ASGIApp, *, tracing: Tracing) -> None:
        from opentelemetry import context, trace

        self.app = app
        self._tracer = tracing.tracer
        self._context = context
        self._trace = trace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        span = self._tracer.start_span(
            f"{method} {scope['path']}",
            attributes={
                "http.request.method": method,
                "url.path": scope["path"],
                # Bound by api.http.request_ids, the middleware around this one.
                "consentry.request_id": request_id.get() or "",
            },
            start_time=time.time_ns(),
        )
        token = self._context.attach(self._trace.set_span_in_context(span))

        async def send_traced(message: Message) -> None:
            if message["type"] == "http.response.start":
                status: int = message["status"]
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(self._trace.StatusCode.ERROR)
                for name, value in message.get("headers", ()):
                    if name == b"x-thread-id":
                        span.set_attribute(THREAD_ATTRIBUTE, value.decode())
                    elif name == b"x-run-id":
                        span.set_attribute(RUN_ATTRIBUTE, value.decode())
            await send(message)

        try:
            await self.app(scope, receive, send_traced)
        finally:
            route = scope.get("route")
            if route is not None and hasattr(route, "path"):
                span.update_name(f"{method} {route.path}")
                span.set_attribute("http.route", route.path)
            span.end()
            self._context.detach(token)
