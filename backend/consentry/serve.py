"""``consentry serve``: settings checked first, then uvicorn, then one line saying where.

Everything that stops start-up before the server binds is one sentence on stderr and exit code 2
(bad settings, an unsafe combination such as a public address without API keys, a bad
``CONSENTRY_GRAPHS`` entry, a SQLite file another server holds), never a traceback or pydantic's
dump. Once the server listens, one line on stdout gives its URL; logs go to stderr, as text on a
terminal and as JSON lines otherwise (``CONSENTRY_LOG_FORMAT=auto``, the default).
"""

from __future__ import annotations

import socket
import sys
from typing import Any, Literal, TextIO

import uvicorn
from pydantic import ValidationError

__all__ = ["log_format_for", "serve_command", "settings_problems", "started_line"]

EXIT_BAD_SETTINGS = 2
EXIT_NOT_STARTED = 3
"""Uvicorn's code for a server that did not start."""


def serve_command(*, host: str | None, port: int | None, role: str | None, log_level: str) -> int:
    from consentry.app import create_app
    from consentry.http_protocol import HttpLimits, bounded_http_protocol
    from consentry.observability.logs import logging_config
    from consentry.runtime.runs import SHUTDOWN_GRACE_SECONDS
    from consentry.settings import Settings
    from consentry.storage.process_lock import DatabaseInUseError, serving_lock
    from consentry_graphs.registry import GraphLoadError, load_graphs

    given = (("host", host), ("port", port), ("role", role))
    overrides: dict[str, Any] = {k: v for k, v in given if v is not None}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        for problem in settings_problems(exc):
            print(f"consentry: {problem}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    try:
        load_graphs(settings.graphs)  # a bad CONSENTRY_GRAPHS entry: one clear line, no server
    except GraphLoadError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    try:
        with serving_lock(settings.sqlite_path):
            pass  # fail here, with one clear line, rather than in the middle of start-up
    except DatabaseInUseError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        http=bounded_http_protocol(HttpLimits.of(settings)),  # head, body and keep-alive limits
        timeout_keep_alive=settings.http_keepalive_timeout_seconds,
        log_level=log_level,
        log_config=logging_config(
            level=log_level, log_format=log_format_for(settings.log_format, sys.stderr)
        ),
        access_log=False,  # one line per request comes from api.request_ids, with its ids
        timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS * 2),
    )
    server = _AnnouncedServer(config)
    server.run()  # exits with uvicorn's code 3 when it cannot bind, as `uvicorn.run` does
    return 0 if server.started else EXIT_NOT_STARTED


def settings_problems(exc: ValidationError) -> list[str]:
    """Each refused setting as a sentence: ``CONSENTRY_PORT: Input should be …``, or the rule
    an unsafe combination broke (a model validator's message, as it is)."""
    problems = []
    for error in exc.errors(include_url=False):
        message = str(error["msg"]).removeprefix("Value error, ")
        field = next((part for part in error["loc"] if isinstance(part, str)), None)
        if field is None:
            problems.append(message)
            continue
        name = field.upper()
        if not name.startswith(("CONSENTRY_", "OTEL_")):
            name = f"CONSENTRY_{name}"
        problems.append(message if name in message else f"{name}: {message}")
    return problems


def log_format_for(
    setting: Literal["auto", "json", "text"], stream: TextIO
) -> Literal["json", "text"]:
    """``auto``: text lines for a person at a terminal, JSON lines for a log collector."""
    if setting != "auto":
        return setting
    return "text" if stream.isatty() else "json"


def started_line(sockets: list[socket.socket]) -> str:
    """``Consentry is serving http://127.0.0.1:8000/ …``: the address really bound (port 0 is
    the port the system chose)."""
    urls = []
    for sock in sockets:
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        urls.append(f"http://{shown}:{port}/")
    return (
        f"Consentry is serving {' and '.join(dict.fromkeys(urls))} "
        "(the web app; the API's documentation at /docs). Stop it with Ctrl-C."
    )


class _AnnouncedServer(uvicorn.Server):
    """Uvicorn's server, which prints :func:`started_line` on stdout once it listens."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            bound = [sock for server in self.servers for sock in (server.sockets or ())]
            print(started_line(bound), flush=True)
