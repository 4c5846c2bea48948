"""Real connections and real processes: a client that walks away mid-run, keep-alive comments on a
quiet stream, a server SIGKILLed mid-run, and a second server refused on the same SQLite file.

In-process tests run a real uvicorn server in the test's loop (``httpx.ASGITransport`` buffers
whole responses and never disconnects); process tests start ``consentry serve``. Runs that must
stay mid-way use the scripted OpenAI-compatible stub (``hold`` + ``holding``), served by the test.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from consentry.api.http.sse_response import RECONNECT_AFTER_MS
from consentry.app import create_app
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.schemas.events import Event, FinalEvent, StepEvent
from consentry.services import Services
from consentry.settings import Settings
from tests.live_server import serve_app
from tests.openai_stub import OpenAIStub
from tests.sse import kinds, next_event, parse_events
from tests.system.server import free_port, serve, serve_process

WAIT_SECONDS = 10.0
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
ANSWERED = ["run_started", "step", "step", "message", "final"]
HELD_MID_ANSWER = ["run_started", "step", "step"]


async def _within(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(WAIT_SECONDS):
        return await awaitable


@asynccontextmanager
async def _serve_process(database: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """``tests.system.server.serve`` without blocking this loop (the stub must keep serving)."""
    manager = serve(database, env=env)
    base_url: str = await asyncio.to_thread(manager.__enter__)
    try:
        yield base_url
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)  # SIGKILL


async def _read_events(lines: AsyncIterator[str], count: int) -> list[Event]:
    return [await _within(next_event(lines)) for _ in range(count)]


async def _read_until_ping(lines: AsyncIterator[str]) -> list[str]:
    """Raw lines up to and including the first keep-alive comment."""
    raw: list[str] = []
    async for line in lines:
        raw.append(line)
        if line.startswith(": ping"):
            return raw
    raise AssertionError("the stream ended without a keep-alive comment")


def _nodes(events: list[Event]) -> list[str]:
    return [e.node for e in events if isinstance(e, StepEvent)]


def _final(events: list[Event]) -> FinalEvent:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


async def test_a_client_that_disconnects_mid_run_does_not_stop_the_run(
    db_url: str, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    detached = asyncio.Event()
    detach = RunEventStream.detach

    def detach_and_tell(self: RunEventStream) -> None:
        detach(self)
        detached.set()

    monkeypatch.setattr(RunEventStream, "detach", detach_and_tell)
    app = create_app(Settings(database_url=db_url, **stub.app_settings()))
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with serve_app(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        services: Services = app.state.services
        async with http.stream(
            "POST", "/v1/chat", json={"message": "What is retrieval?"}
        ) as response:
            assert response.status_code == 200
            seen = await _read_events(response.aiter_lines(), len(HELD_MID_ANSWER))
            await _within(stub.holding.wait())
        # The response is closed: the server notices, and the run goes on without a listener.
        await _within(detached.wait())
        stub.release()
        await _within(services.executor.wait_for_runs())

        assert kinds(seen) == HELD_MID_ANSWER
        assert _nodes(seen) == ["analyze_message", "answer_question"]
        thread_id = seen[0].thread_id
        thread = (await http.get(f"/v1/threads/{thread_id}")).json()
        assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
            "idle",
            "completed",
            [],
        )
        transcript = (await http.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
        assert [(m["role"], m["content"]) for m in transcript] == [
            ("user", "What is retrieval?"),
            ("assistant", ANSWER),
        ]


async def test_a_quiet_stream_carries_keep_alive_comments(db_url: str, stub: OpenAIStub) -> None:
    app = create_app(Settings(database_url=db_url, keepalive_seconds=0.2, **stub.app_settings()))
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with (
        serve_app(app) as base_url,
        httpx.AsyncClient(base_url=base_url) as http,
        http.stream("POST", "/v1/chat", json={"message": "What is retrieval?"}) as response,
    ):
        assert response.status_code == 200
        lines = response.aiter_lines()
        await _within(stub.holding.wait())
        raw = await _within(_read_until_ping(lines))
        before_release = parse_events("\n".join(raw) + "\n\n")
        stub.release()
        raw.extend([line async for line in lines])

    assert "final" not in kinds(before_release)
    events = parse_events("\n".join(raw))
    assert kinds(events) == ANSWERED
    assert _final(events).reason == "completed"


async def test_after_a_crash_mid_run_a_new_server_resumes_the_run_from_its_checkpoint(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    database = tmp_path / "consentry.db"
    env = stub.server_env()
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        async with _serve_process(database, env) as first:
            request = http.build_request(
                "POST", f"{first}/v1/chat", json={"message": "What is retrieval?"}
            )
            response = await http.send(request, stream=True)
            assert response.status_code == 200
            lines = response.aiter_lines()
            seen = await _read_events(lines, len(HELD_MID_ANSWER))
            await _within(stub.holding.wait())
        # SIGKILLed mid-run: the stream breaks off without a final event.
        with pytest.raises(httpx.TransportError):
            await _within(next_event(lines))
        await response.aclose()
        assert kinds(seen) == HELD_MID_ANSWER
        thread_id = seen[0].thread_id
        calls_before = len(stub.requests)

        # The classifier's step was checkpointed; only the answer's node runs again.
        stub.reply("Answered after the restart.")
        async with _serve_process(database, env) as second:
            joined = await http.get(
                f"{second}/v1/threads/{thread_id}/stream",
                headers={"Last-Event-ID": str(max(e.seq for e in seen))},
            )
            events = [e for e in parse_events(joined.text) if e.type != "token"]

            assert len(stub.requests) == calls_before + 1
            assert [e.type for e in events[:2]] == ["error", "final"]  # the dead run, closed
            assert events[1].reason == "failed"  # type: ignore[union-attr]
            recovered = events[2:]
            assert recovered[0].trigger == "recovery"  # type: ignore[union-attr]
            assert [e.type for e in recovered] == ["run_started", "step", "message", "final"]
            assert recovered[2].content == "Answered after the restart."  # type: ignore[union-attr]
            assert _final(recovered).reason == "completed"
            assert min(e.seq for e in events) > max(e.seq for e in seen)
            thread = (await http.get(f"{second}/v1/threads/{thread_id}")).json()
            assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
            # Every durable event the first client saw was stored before it was sent.
            history = parse_events((await http.get(f"{second}/v1/threads/{thread_id}/stream")).text)
            stored = {(e.seq, e.type) for e in history}
            assert {(e.seq, e.type) for e in seen if e.type != "token"} <= stored
            transcript = (await http.get(f"{second}/v1/threads/{thread_id}/messages")).json()
            assert [m["content"] for m in transcript["messages"]] == [
                "What is retrieval?",
                "Answered after the restart.",
            ]


def test_a_second_server_on_the_same_database_is_refused(tmp_path: Path) -> None:
    database = tmp_path / "consentry.db"
    with serve(database) as running:
        second = subprocess.run(
            [sys.executable, "-m", "consentry.cli", "serve", "--port", str(free_port())],
            env={**os.environ, "CONSENTRY_DATABASE_URL": f"sqlite:///{database}"},
            capture_output=True,
            text=True,
            timeout=60,
        )

        assert second.returncode == 2
        assert "another Consentry process is serving" in second.stderr
        assert httpx.get(f"{running}/healthz", timeout=5).status_code == 200


async def _read_output_until(process: subprocess.Popen[bytes], text: str) -> None:
    assert process.stdout is not None
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            line = await asyncio.to_thread(process.stdout.readline)
            if not line:
                raise AssertionError(f"the server's output ended before {text!r}")
            if text in line.decode(errors="replace"):
                return


async def test_sigterm_stops_runs_at_a_step_boundary_ends_streams_with_a_retry_hint_and_exits(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    database = tmp_path / "consentry.db"
    env = stub.server_env()
    stub.hold(CLASSIFIED_AS_ANSWER)  # the run is inside its first step when SIGTERM comes
    stub.reply("Answered by the next process.")
    manager = serve_process(database, env=env)
    base_url, process = await asyncio.to_thread(manager.__enter__)
    try:
        async with (
            httpx.AsyncClient(timeout=WAIT_SECONDS) as http,
            http.stream("POST", f"{base_url}/v1/chat", json={"message": "Why?"}) as response,
        ):
            lines = response.aiter_lines()
            (started,) = await _read_events(lines, 1)
            await _within(stub.holding.wait())
            process.send_signal(signal.SIGTERM)
            await _read_output_until(process, "stop at their next step boundary")
            stub.release()  # the step ends and saves its checkpoint; the run stops there
            rest = [line async for line in lines]
        exit_code = await asyncio.to_thread(process.wait, WAIT_SECONDS)
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)

    # A stop asked for is not a failure: the process ends with 0 (SIGKILL would be -9).
    assert exit_code == 0
    seen = [started, *parse_events("\n".join(rest))]
    assert kinds(seen) == ["run_started", "step"]
    assert _nodes(seen) == ["analyze_message"]
    assert f"retry: {RECONNECT_AFTER_MS}" in rest
    assert len(stub.requests) == 1

    async with _serve_process(database, env) as restarted, httpx.AsyncClient() as http:
        joined = await http.get(
            f"{restarted}/v1/threads/{started.thread_id}/stream",
            headers={"Last-Event-ID": str(seen[-1].seq)},
            timeout=WAIT_SECONDS,
        )
        events = parse_events(joined.text)

    assert len(stub.requests) == 2  # the classifier's step was kept: only the answer ran
    assert kinds(events) == ["error", "final", "run_started", "step", "step", "message", "final"]
    # the join may come while the recovery streams its answer: its tokens are not counted
    durable = [event for event in events if event.type != "token"]
    assert durable[2].trigger == "recovery"  # type: ignore[union-attr]
    assert durable[5].content == "Answered by the next process."  # type: ignore[union-attr]
    assert _final(events).reason == "completed"
