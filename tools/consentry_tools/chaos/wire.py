"""The HTTP side of a chaos client: one try of a request, as the client saw it.

Every call returns an :class:`Attempt` instead of raising: a connection refused or reset, and a
stream that ends without its run's ``final``, are answers of a kind too (``failure``), which the
client retries. Each durable event received is handed to ``on_event`` as it arrives, so a kill
mid-stream loses nothing the client saw.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx

from consentry_tools.chaos.observations import Attempt, Event

__all__ = ["Wire", "sse_events"]

CONNECT_TIMEOUT_SECONDS = 2.0
READ_TIMEOUT_SECONDS = 30.0
"""Longer than the SSE keep-alive (15 s): a stream that says nothing that long is dead."""


class Wire:
    """The servers one client may reach (a replica picked at random per try) and its connections."""

    def __init__(
        self,
        servers: Sequence[str],
        *,
        rng: random.Random,
        on_event: Callable[[Event], None],
    ) -> None:
        self._servers = list(servers)
        self._rng = rng
        self._on_event = on_event
        timeout = httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS)
        self._http = httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    def _pick(self) -> str:
        return self._servers[0] if len(self._servers) == 1 else self._rng.choice(self._servers)

    async def post_stream(self, path: str, body: dict[str, Any], *, key: str) -> Attempt:
        """``POST /v1/chat``: its run's events, until the run's ``final``."""
        server = self._pick()
        attempt = Attempt(server=server)
        try:
            async with self._http.stream(
                "POST", server + path, json=body, headers={"Idempotency-Key": key}
            ) as response:
                await self._read_answer(response, attempt)
        except httpx.TransportError as exc:
            attempt.failure = _failure(attempt, exc)
        return attempt

    async def post_json(self, path: str, body: dict[str, Any], *, key: str) -> Attempt:
        """A JSON request (a decision from the inbox)."""
        server = self._pick()
        attempt = Attempt(server=server)
        try:
            response = await self._http.post(
                server + path, json=body, headers={"Idempotency-Key": key}
            )
        except httpx.TransportError as exc:
            attempt.failure = _failure(attempt, exc)
            return attempt
        attempt.status = response.status_code
        attempt.replayed = response.headers.get("idempotent-replayed") == "true"
        answer = _json(response.content)
        if response.status_code in (200, 202):
            attempt.thread_id = _str(answer.get("thread_id"))
            attempt.run_id = _str(answer.get("run_id"))
        else:
            _read_error(answer, attempt)
        return attempt

    async def join(self, thread_id: str, *, after: int | None) -> Attempt:
        """``GET /v1/threads/{id}/stream`` after ``after`` (everything when None): the stored
        events, then the active run live until its ``final``."""
        server = self._pick()
        attempt = Attempt(server=server, thread_id=thread_id)
        headers = {} if after is None else {"Last-Event-ID": str(after)}
        try:
            async with self._http.stream(
                "GET", f"{server}/v1/threads/{thread_id}/stream", headers=headers
            ) as response:
                attempt.status = response.status_code
                if response.status_code != 200:
                    _read_error(_json(await response.aread()), attempt)
                    return attempt
                async for event in sse_events(response.aiter_lines()):
                    self._on_event(event)
                    if event.get("type") == "final":
                        attempt.run_id, attempt.final = _str(event.get("run_id")), event["reason"]
        except httpx.TransportError as exc:
            attempt.failure = _failure(attempt, exc)
        return attempt

    async def get_json(self, path: str, params: dict[str, str] | None = None) -> Any | None:
        """A read; None when no server answered it with 200."""
        try:
            response = await self._http.get(self._pick() + path, params=params)
        except httpx.TransportError:
            return None
        return response.json() if response.status_code == 200 else None

    async def post_note(self, path: str, body: dict[str, Any]) -> Any | None:
        try:
            response = await self._http.post(self._pick() + path, json=body)
        except httpx.TransportError:
            return None
        return response.json() if response.status_code == 201 else None

    async def _read_answer(self, response: httpx.Response, attempt: Attempt) -> None:
        attempt.status = response.status_code
        if response.status_code != 200:
            _read_error(_json(await response.aread()), attempt)
            return
        attempt.thread_id = response.headers.get("x-thread-id")
        attempt.run_id = response.headers.get("x-run-id")
        attempt.replayed = response.headers.get("idempotent-replayed") == "true"
        async for event in sse_events(response.aiter_lines()):
            self._on_event(event)
            if event.get("type") == "final" and event.get("run_id") == attempt.run_id:
                attempt.final = str(event["reason"])
        if attempt.final is None and not attempt.replayed:
            attempt.failure = "cut"  # ended without its final: a retry hint, or a server gone


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    """The events of an SSE body (comments, ``retry:`` and keep-alives skipped)."""
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield json.loads("\n".join(data))
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield json.loads("\n".join(data))


def _failure(attempt: Attempt, exc: httpx.TransportError) -> str:
    if attempt.status is None:
        return "connect" if isinstance(exc, httpx.ConnectError) else "no_answer"
    return "cut"


def _json(content: bytes) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _read_error(answer: dict[str, Any], attempt: Attempt) -> None:
    error = answer.get("error")
    if isinstance(error, dict):
        attempt.code = _str(error.get("code"))
        details = error.get("details")
        attempt.details = details if isinstance(details, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
