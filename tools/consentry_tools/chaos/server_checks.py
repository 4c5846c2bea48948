"""Invariant 10: no server error. A fault may make a request wait, or answer it 503 with
``Retry-After`` (507 ``storage_full`` while the database's disk is full); it must never make
the server answer 500, or fail a request with an error it did not handle (an exception that
reached the ASGI server: the client sees its connection dropped, the log an ``unhandled error``
or uvicorn's ``Exception in ASGI application``).

The clients' answers are in their logs (``observations``). The servers' logs
(``server-<n>.log``, JSON lines) are read from where the trial found them (:class:`LogCursor`),
so each trial is judged on its own lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from consentry_tools.chaos.observations import ClientLog
from consentry_tools.chaos.violations import Violation

__all__ = ["LogCursor", "check_server_errors", "unhandled_errors"]

UNHANDLED = ("unhandled error on ", "Exception in ASGI application")
"""How a server's log says a request failed with an error nobody handled (``consentry.app``'s
own handler of last resort; uvicorn's, for an error raised after the response started)."""
SERVER_ERROR = 500
TRY_AGAIN = frozenset({503, 507})
"""Unavailable, insufficient storage: answers that say to send the request again later."""


class LogCursor:
    """Where each server log ended when the trial began."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self._paths = list(paths)
        self._offsets = {path: _size(path) for path in self._paths}

    def new_lines(self) -> list[str]:
        """The lines written since; the cursor moves past them."""
        lines: list[str] = []
        for path in self._paths:
            start = self._offsets[path]
            try:
                with path.open("rb") as log:
                    log.seek(start)
                    read = log.read()
            except FileNotFoundError:  # a server that has written nothing yet
                continue
            self._offsets[path] = start + len(read)
            lines += read.decode(errors="replace").splitlines()
        return lines


def unhandled_errors(lines: Iterable[str]) -> Iterator[str]:
    """The messages of the log records that say a request failed unhandled."""
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line of the server's own (its banner)
        message = str(record.get("message", "")) if isinstance(record, dict) else ""
        if record.get("level") == "error" and message.startswith(UNHANDLED):
            yield message.splitlines()[0]


def check_server_errors(
    clients: Sequence[ClientLog], log_lines: Sequence[str]
) -> Iterator[Violation]:
    for client in clients:
        for request in client.requests:
            for attempt in request.attempts:
                status = attempt.status
                if status is not None and status >= SERVER_ERROR and status not in TRY_AGAIN:
                    yield Violation(
                        "no_server_error",
                        attempt.thread_id or request.thread_id,
                        f"{request.describe()} was answered {status} {attempt.code} by "
                        f"{attempt.server}",
                    )
    for message in unhandled_errors(log_lines):
        yield Violation("no_server_error", None, f"a server logged: {message}")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
