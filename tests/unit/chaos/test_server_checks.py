"""``consentry chaos``'s tenth invariant (``chaos/server_checks.py``): a 500, or an error a server
logged as unhandled during the trial, is a violation; a 503 (the database away) and the errors a
server logs while it waits for the database to come back are not. Each trial reads only the log
lines written since it began."""

from __future__ import annotations

import json
from pathlib import Path

from consentry_tools.chaos.observations import Attempt, ClientLog, KeyedRequest
from consentry_tools.chaos.server_checks import LogCursor, check_server_errors


def _line(level: str, message: str, logger: str = "consentry.app") -> str:
    return json.dumps({"level": level, "logger": logger, "message": message}) + "\n"


def _client(*statuses: int) -> ClientLog:
    request = KeyedRequest("message", "key-1", "/v1/chat", {}, 0, thread_id="t-1", text="Hi")
    request.attempts = [Attempt(server="http://a", status=status) for status in statuses]
    log = ClientLog(client=0, note_id="n-1")
    log.requests.append(request)
    return log


def test_a_500_or_an_unhandled_error_is_a_violation_and_only_in_the_trial_it_happened(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server-1.log"
    log.write_text(_line("error", "unhandled error on POST /v1/chat") + "Consentry is serving\n")
    cursor = LogCursor([log, tmp_path / "server-2.log"])  # the second not written yet
    with log.open("a") as more:
        more.write(_line("warning", "database unavailable on POST /v1/chat: OperationalError"))
        more.write(_line("error", "lost the event notification connection; reconnecting"))
        more.write(_line("error", "Exception in ASGI application\n", logger="uvicorn.error"))

    found = list(check_server_errors([_client(503, 500, 200)], cursor.new_lines()))

    assert [(v.invariant, v.thread_id) for v in found] == [
        ("no_server_error", "t-1"),
        ("no_server_error", None),
    ]
    assert "answered 500" in found[0].detail
    assert found[1].detail == "a server logged: Exception in ASGI application"
    assert list(check_server_errors([_client(503, 200)], cursor.new_lines())) == []
