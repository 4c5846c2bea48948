"""``consentry serve``: settings checked first, then uvicorn, then one line saying where.

Everything that stops start-up before the server binds is one sentence on stderr and exit code 2
(bad settings, an unsafe combination such as a public address without API keys, a bad
``CONSENTRY_GRAPHS`` entry or ``--config`` file, a database that cannot be used
(``storage.db.database_check``), a SQLite file another server holds), never a traceback or
pydantic's dump. Once the server listens, one line on stdout gives its URL; logs go to stderr, as
text on a terminal and as JSON lines otherwise (``CONSENTRY_LOG_FORMAT=auto``, the default). The
start-up logs three lines (the database, the model, the graphs); uvicorn's and the migrations'
own lines are debug-level (``--log-level debug`` shows them). How Ctrl-C and SIGTERM end the
process: ``cli``.

Graphs are imported from the current directory as ``python -m`` would: it is put on
``sys.path`` (the installed ``consentry`` script does not put it there by itself), so
``CONSENTRY_GRAPHS=agent=myproject.graph:graph consentry serve`` works from a project's folder.
``--config langgraph.json`` serves a LangGraph project as it is (``read_config``): its
``graphs`` (``./path/to/file.py:attr`` relative to the file, or ``package.module:attr``) are
served besides any in ``CONSENTRY_GRAPHS``, its folder goes on ``sys.path`` before the current
one so the project's own imports work, and its ``env`` (a ``.env`` file's path relative to it, or
an object of names and values) is set before the settings are read; a variable the environment
already has keeps its value.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import uvicorn
from pydantic import ValidationError

if TYPE_CHECKING:
    from consentry.settings import Settings

__all__ = [
    "ConfigError",
    "ProjectConfig",
    "log_format_for",
    "read_config",
    "serve_command",
    "settings_problems",
    "started_line",
]

EXIT_BAD_SETTINGS = 2
EXIT_NOT_STARTED = 3
"""Uvicorn's code for a server that did not start."""
log = logging.getLogger("consentry")


def serve_command(
    *,
    host: str | None,
    port: int | None,
    role: str | None,
    log_level: str,
    config: str | None = None,
) -> int:
    from consentry.app import create_app
    from consentry.http_protocol import HttpLimits, bounded_http_protocol
    from consentry.observability.logs import logging_config
    from consentry.runtime.runs import SHUTDOWN_GRACE_SECONDS
    from consentry.settings import Settings
    from consentry.storage.db.database_check import DatabaseSettingError, check_database
    from consentry.storage.db.process_lock import DatabaseInUseError, serving_lock
    from consentry_graphs.registry import GraphLoadError, load_graphs

    try:
        project = read_config(Path(config)) if config is not None else None
    except ConfigError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    _importable(Path.cwd())  # graphs import from here, as under `python -m`
    if project is not None:
        project.use()
    given = (("host", host), ("port", port), ("role", role))
    overrides: dict[str, Any] = {k: v for k, v in given if v is not None}
    try:
        settings = Settings(**overrides)
        if project is not None and project.graphs:
            twice = sorted(settings.graphs.keys() & project.graphs.keys())
            if twice:
                print(
                    f"consentry: CONSENTRY_GRAPHS and {project.path} both name the graph "
                    f"{twice[0]!r}; keep one",
                    file=sys.stderr,
                )
                return EXIT_BAD_SETTINGS
            settings = Settings(**overrides, graphs={**project.graphs, **settings.graphs})
    except ValidationError as exc:
        for problem in settings_problems(exc):
            print(f"consentry: {problem}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    try:
        graphs = load_graphs(settings.graphs)  # a bad entry: one clear line, no server
    except GraphLoadError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    try:
        database = check_database(settings.database_url, sqlite_path=settings.sqlite_path)
        with serving_lock(settings.sqlite_path):
            pass  # fail here, with one clear line, rather than in the middle of start-up
    except (DatabaseSettingError, DatabaseInUseError) as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    summary = [
        f"database: {database.described}"
        + (f" (created the folder {database.created_folder})" if database.created_folder else ""),
        f"model: {_model_line(settings)}",
        f"graphs: {', '.join(graphs)}",
    ]
    server_config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        http=bounded_http_protocol(HttpLimits.of(settings)),  # head, body and keep-alive limits
        timeout_keep_alive=settings.http_keepalive_timeout_seconds,
        log_level=log_level,
        log_config=logging_config(
            level=log_level, log_format=log_format_for(settings.log_format, sys.stderr)
        ),
        access_log=False,  # one line per request comes from api.http.request_ids, with its ids
        timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS * 2),
    )
    server = _AnnouncedServer(server_config, summary=summary)
    server.run()  # exits with uvicorn's code 3 when it cannot bind, as `uvicorn.run` does
    return 0 if server.started else EXIT_NOT_STARTED


def _model_line(settings: Settings) -> str:
    if settings.uses_offline_model:
        return "offline (deterministic, answers from your notes; no key needed)"
    where = settings.llm_base_url or "OpenAI"
    return f"{settings.llm_model} at {where}"


class ConfigError(ValueError):
    """A ``--config`` file that cannot be served; the message names the file and the fix."""


@dataclass(frozen=True)
class ProjectConfig:
    """What ``consentry serve`` takes from a LangGraph project's ``langgraph.json``."""

    path: Path
    graphs: dict[str, str]
    """Name → ``package.module:attr``, or ``/absolute/path/to/file.py:attr``."""
    env: dict[str, str]

    def use(self) -> None:
        """Put the project's folder first on ``sys.path``, and its ``env`` in the environment
        (a variable already set keeps its value)."""
        _importable(self.path.parent)
        for name, value in self.env.items():
            os.environ.setdefault(name, value)


def read_config(path: Path) -> ProjectConfig:
    """The graphs and environment of ``path`` (a ``langgraph.json``); ``ConfigError`` says
    what is wrong with it."""
    path = path.resolve()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--config {path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--config {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("graphs"), dict):
        raise ConfigError(
            f'--config {path} has no "graphs" object of names and paths, like '
            '{"graphs": {"agent": "./agent.py:graph"}}'
        )
    graphs = {
        str(name): _graph_path(path, str(name), where) for name, where in data["graphs"].items()
    }
    return ProjectConfig(path=path, graphs=graphs, env=_env(path, data.get("env")))


def _graph_path(config: Path, name: str, where: object) -> str:
    """A ``graphs`` value (``"path:attr"``, or ``{"path": "path:attr", ...}``), a file path made
    absolute from the config's folder."""
    if isinstance(where, dict):
        where = where.get("path")
    if not isinstance(where, str) or ":" not in where:
        raise ConfigError(
            f"--config {config}: graph {name!r} needs a path like ./agent.py:graph or "
            "package.module:graph"
        )
    location, _, attr = where.rpartition(":")
    if location.endswith(".py"):
        location = str((config.parent / location).resolve())
    return f"{location}:{attr}"


def _env(config: Path, env: object) -> dict[str, str]:
    if env is None:
        return {}
    if isinstance(env, str):
        dotenv = (config.parent / env).resolve()
        if not dotenv.is_file():
            raise ConfigError(f"--config {config}: its env file {dotenv} does not exist")
        from dotenv import dotenv_values  # python-dotenv, which pydantic-settings reads .env with

        return {k: v for k, v in dotenv_values(dotenv).items() if v is not None}
    if isinstance(env, dict) and all(isinstance(v, str | int | float | bool) for v in env.values()):
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in env.items()}
    raise ConfigError(
        f'--config {config}: "env" is a .env file\'s path or an object of names and values'
    )


def _importable(folder: Path) -> None:
    """``folder`` first on ``sys.path`` (once)."""
    entry = str(folder)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


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


YOUNG_COLLECTION_THRESHOLD = 7_000
"""Allocations between two collections of the youngest generation (Python's default: 700)."""


def settle_the_heap() -> None:
    """Once the server is started: collect, then freeze what start-up made (the modules of
    LangChain, LangGraph, SQLAlchemy, pydantic, the compiled graphs, the services), which lives
    as long as the process, so that the garbage collector no longer walks it at each full
    collection; and collect the youngest generation a tenth as often. A conversation's objects
    are many and short-lived: with 100 in flight, the collections' walks of what start-up made
    cost about a tenth of the server's CPU.
    ``consentry serve`` on PostgreSQL, 600 ``consent_flow`` conversations at C=100, user + sys
    CPU a conversation in two rounds: 17.5 and 17.6 ms, 16.2 and 15.3 frozen, 15.2 and 14.8
    frozen and collected less often (issue 37)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, older, oldest)


class _AnnouncedServer(uvicorn.Server):
    """Uvicorn's server, which logs ``summary`` (a line each) and prints :func:`started_line` on
    stdout once it listens."""

    def __init__(self, config: uvicorn.Config, *, summary: list[str]) -> None:
        super().__init__(config)
        self._summary = summary

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            for line in self._summary:
                log.info(line)
            bound = [sock for server in self.servers for sock in (server.sockets or ())]
            print(started_line(bound), flush=True)
            settle_the_heap()
