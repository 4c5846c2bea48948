"""The access line says what the client got: the status it was sent, and whether it went away
first (499 when nothing was sent), or the server answered in the app's place, or the app failed;
never a 500 nobody sent."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from consentry.api.http.request_ids import SERVER_REPORT, RequestIds

App = Callable[[Scope, Receive, Send], Awaitable[None]]
START = {"type": "http.response.start", "status": 200, "headers": []}
PART = {"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True}
END = {"type": "http.response.body", "body": b"", "more_body": False}


async def _serve(
    app: App, caplog: pytest.LogCaptureFixture, *, extensions: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run ``app`` behind RequestIds for one ``POST /v1/chat`` whose client is gone after its
    first message; the access line's fields."""
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/v1/chat", "headers": []}
    if extensions is not None:
        scope["extensions"] = extensions
    incoming = [{"type": "http.request", "body": b"{", "more_body": True}]

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        pass

    with (
        caplog.at_level(logging.INFO, logger="consentry.access"),
        contextlib.suppress(RuntimeError),  # an app's own failure, re-raised after the line
    ):
        await RequestIds(app)(scope, receive, send)
    (record,) = [r for r in caplog.records if r.name == "consentry.access"]
    fields: dict[str, Any] = {"message": record.getMessage()}
    fields |= {name: record.__dict__[name] for name in ("status", "outcome")}
    if record.__dict__.get("code") is not None:
        fields["code"] = record.__dict__["code"]
    return fields


async def test_a_whole_response_is_completed_with_its_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send(END)

    assert await _serve(app, caplog) == {
        "message": "POST /v1/chat 200",
        "status": 200,
        "outcome": "completed",
    }


async def test_a_body_abandoned_before_any_response_is_499_client_disconnected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    assert await _serve(app, caplog) == {
        "message": "POST /v1/chat 499 (client_disconnected)",
        "status": 499,
        "outcome": "client_disconnected",
    }


async def test_a_stream_closed_by_its_reader_keeps_its_status_and_says_the_client_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send(PART)
        while (await receive())["type"] != "http.disconnect":
            pass

    assert await _serve(app, caplog) == {
        "message": "POST /v1/chat 200 (client_disconnected)",
        "status": 200,
        "outcome": "client_disconnected",
    }


async def test_the_servers_report_of_its_own_answer_is_what_the_line_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        report = {"status": 408, "outcome": "timed_out", "code": "request_timeout"}
        scope["extensions"][SERVER_REPORT] = report
        while (await receive())["type"] != "http.disconnect":
            pass

    assert await _serve(app, caplog, extensions={}) == {
        "message": "POST /v1/chat 408 (timed_out)",
        "status": 408,
        "outcome": "timed_out",
        "code": "request_timeout",
    }


async def test_an_app_that_raises_before_answering_is_500_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("a bug")

    assert await _serve(app, caplog) == {
        "message": "POST /v1/chat 500 (failed)",
        "status": 500,
        "outcome": "failed",
    }


async def test_a_response_completed_before_the_client_left_is_completed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        await send(END)
        while (await receive())["type"] != "http.disconnect":  # the listener of a stream
            pass

    assert (await _serve(app, caplog))["outcome"] == "completed"
