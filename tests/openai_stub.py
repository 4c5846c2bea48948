"""A scripted OpenAI-compatible chat server for tests, served by a real uvicorn in the test's loop.

    async with serve_openai_stub() as stub:
        stub.reply('{"intent": "answer", "query": "retrieval"}')
        stub.fail(500)
        ...  # point the app at stub.base_url

Every ``POST /v1/chat/completions`` takes the next scripted step, in order:

- ``reply(text)``: a ``chat.completion`` JSON body, or with ``"stream": true`` an event stream of
  ``chat.completion.chunk`` objects (a role chunk, one chunk per word of ``text``, a chunk with
  ``finish_reason``, a usage chunk when ``stream_options.include_usage`` is set), then
  ``data: [DONE]``;
- ``fail(status, retry_after=None, code=None)``: that status with an OpenAI error body whose
  message is :data:`PROVIDER_DETAIL` (text that must never reach a Consentry client), a
  ``Retry-After`` header when given, and ``error.code``/``error.type`` set to ``code`` (e.g.
  ``insufficient_quota``);
- ``hang()``: accept the request and send nothing until the stub stops (the client gives up first);
- ``tool_call(name, arguments)``: answer with one tool call (streamed as tool-call chunks);
- ``cut(text)``: stream the first words of ``text``, then drop the connection mid-body;
- ``hold(text)``: like ``reply(text)``, but only once the test calls :meth:`OpenAIStub.release`;
  :attr:`OpenAIStub.holding` is set when a request reaches it (a run that is surely mid-way).

``POST /v1/embeddings`` answers at once, unscripted, with a small embedding of each text that
knows synonyms (:data:`MEANINGS`: "automobile" is near "car", as a real model's would be, and
unlike the offline embedding), as floats or base64 as asked; each body is kept in
``embedding_requests``.

A chat request with nothing left to take fails with 500 and is counted in ``unscripted``; every
chat request body is kept in ``requests``, and its arrival time (``time.monotonic()``) in
``arrivals``. Tests assert both, so an unexpected extra call (a retry, say) shows.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import struct
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent

from tests.live_server import serve_app

__all__ = [
    "PROVIDER_DETAIL",
    "OpenAIStub",
    "assert_nothing_leaked",
    "serve_openai_stub",
    "words",
]

PROVIDER_DETAIL = "stub-provider-internals: shard 7 exploded, key sk-test-leak"
MEANINGS = (("car", "automobile", "truck", "vehicle"), ("apple", "pear", "fruit"))
"""The stub's embedding: one dimension per group of words, plus one that every text has."""
_WORD = re.compile(r"\S+\s*")


def assert_nothing_leaked(body: str) -> None:
    """What a provider said (or a traceback) never reaches a Consentry client."""
    for secret in (
        PROVIDER_DETAIL,
        "stub-provider-internals",
        "sk-test",
        "Traceback",
        "Error code",
    ):
        assert secret not in body


def words(text: str) -> list[str]:
    """How the stub splits a streamed reply into chunks: one word with its trailing spaces."""
    return _WORD.findall(text)


@dataclass(frozen=True)
class _Reply:
    text: str


@dataclass(frozen=True)
class _Failure:
    status: int
    retry_after: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class _Hang:
    pass


@dataclass(frozen=True)
class _ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class _Cut:
    text: str
    words_sent: int


@dataclass(frozen=True)
class _Hold:
    text: str


_Step = _Reply | _Failure | _Cut | _Hold | _Hang | _ToolCall


class _StreamCutError(Exception):
    """Raised inside a streaming body to make uvicorn drop the connection."""


class OpenAIStub:
    """The scripted behaviour of the server, and what it received."""

    def __init__(self) -> None:
        self.script: deque[_Step] = deque()
        self.requests: list[dict[str, Any]] = []
        self.arrivals: list[float] = []
        self.unscripted = 0
        self.holding = asyncio.Event()
        self._released = asyncio.Event()
        self._stopping = asyncio.Event()
        self.base_url = ""
        self.app = FastAPI()
        self.app.add_api_route(
            "/v1/chat/completions", self._chat_completions, methods=["POST"], response_model=None
        )
        self.embedding_requests: list[dict[str, Any]] = []
        self.app.add_api_route("/v1/embeddings", self._embeddings, methods=["POST"])

    def app_settings(self, **overrides: Any) -> dict[str, Any]:
        """``Settings`` for an app that uses this stub, with one attempt per model call (tests of
        the retry layer ask for more), plus ``overrides``."""
        return {
            "llm_base_url": self.base_url,
            "llm_api_key": "sk-test",
            "llm_max_attempts": 1,
            "llm_model": "stub",
            **overrides,
        }

    def server_env(self) -> dict[str, str]:
        """The same, for a ``consentry serve`` process."""
        return {f"CONSENTRY_{name.upper()}": str(v) for name, v in self.app_settings().items()}

    def assert_calls(self, calls: int) -> None:
        """Exactly ``calls`` requests arrived, each one scripted, and the script is used up: one
        attempt more than allowed shows as an unscripted request."""
        assert (len(self.requests), self.unscripted, list(self.script)) == (calls, 0, [])

    def reply(self, text: str) -> None:
        self.script.append(_Reply(text))

    def fail(self, status: int, *, retry_after: str | None = None, code: str | None = None) -> None:
        self.script.append(_Failure(status, retry_after, code))

    def hang(self) -> None:
        self.script.append(_Hang())

    def tool_call(self, name: str, arguments: dict[str, Any]) -> None:
        self.script.append(_ToolCall(name, arguments))

    def cut(self, text: str, *, words_sent: int) -> None:
        self.script.append(_Cut(text, words_sent))

    def hold(self, text: str) -> None:
        self.script.append(_Hold(text))

    def release(self) -> None:
        self._released.set()

    async def _embeddings(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        self.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = _meaning(str(text))
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            embedding = packed if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        answer = {"object": "list", "data": data, "model": body["model"], "usage": usage}
        return JSONResponse(answer)

    async def _chat_completions(self, request: Request) -> JSONResponse | EventSourceResponse:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        self.arrivals.append(time.monotonic())
        if not self.script:
            self.unscripted += 1
            return _error(500, "openai_stub: nothing scripted for this request")
        step = self.script.popleft()
        if isinstance(step, _Hold):
            self.holding.set()
            await self._released.wait()
            step = _Reply(step.text)
        if isinstance(step, _Hang):
            await self._stopping.wait()  # the client gives up long before; the stub stops
            return _error(503, "openai_stub: stopped while hanging")
        if isinstance(step, _Failure):
            return _error(
                step.status, PROVIDER_DETAIL, retry_after=step.retry_after, code=step.code
            )
        model = str(body.get("model", "stub"))
        completion_id = f"chatcmpl-stub-{len(self.requests)}"
        if not body.get("stream"):
            assert isinstance(step, _Reply | _ToolCall), "cut() only applies to streaming requests"
            return JSONResponse(_completion(completion_id, model, step))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return EventSourceResponse(
            _chunks(completion_id, model, step, include_usage=include_usage), sep="\n"
        )


def _meaning(text: str) -> list[float]:
    lowered = text.lower()
    return [float(sum(lowered.count(w) for w in group)) for group in MEANINGS] + [0.1]


def _error(
    status: int, message: str, *, retry_after: str | None = None, code: str | None = None
) -> JSONResponse:
    kind = code or {400: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
        status, "server_error"
    )
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": code}},
        status_code=status,
        headers={"Retry-After": retry_after} if retry_after is not None else None,
    )


def _usage(text: str) -> dict[str, int]:
    completion_tokens = len(words(text))
    return {
        "prompt_tokens": 10,
        "completion_tokens": completion_tokens,
        "total_tokens": 10 + completion_tokens,
    }


def _tool_call(step: _ToolCall) -> dict[str, Any]:
    return {
        "id": "call_stub_1",
        "type": "function",
        "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
    }


def _completion(completion_id: str, model: str, step: _Reply | _ToolCall) -> dict[str, Any]:
    if isinstance(step, _ToolCall):
        message: dict[str, Any] = {"role": "assistant", "content": None}
        message["tool_calls"] = [_tool_call(step)]
        text, finish_reason = "", "tool_calls"
    else:
        message = {"role": "assistant", "content": step.text}
        text, finish_reason = step.text, "stop"
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _usage(text),
    }


def _chunk(
    completion_id: str,
    model: str,
    delta: dict[str, Any] | None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
) -> ServerSentEvent:
    chunk: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return ServerSentEvent(data=json.dumps(chunk))


async def _chunks(
    completion_id: str, model: str, step: _Step, *, include_usage: bool
) -> AsyncIterator[ServerSentEvent]:
    if isinstance(step, _ToolCall):
        call = _tool_call(step)
        yield _chunk(completion_id, model, {"role": "assistant", "content": None})
        yield _chunk(completion_id, model, {"tool_calls": [{"index": 0, **call}]})
        yield _chunk(completion_id, model, {}, finish_reason="tool_calls")
        if include_usage:
            yield _chunk(completion_id, model, None, usage=_usage(""))
        yield ServerSentEvent(data="[DONE]")
        return
    assert isinstance(step, _Reply | _Cut)
    yield _chunk(completion_id, model, {"role": "assistant", "content": ""})
    pieces = words(step.text)
    if isinstance(step, _Cut):
        pieces = pieces[: step.words_sent]
    for piece in pieces:
        yield _chunk(completion_id, model, {"content": piece})
    if isinstance(step, _Cut):
        raise _StreamCutError("openai_stub: connection dropped mid-stream, as scripted")
    yield _chunk(completion_id, model, {}, finish_reason="stop")
    if include_usage:
        yield _chunk(completion_id, model, None, usage=_usage(step.text))
    yield ServerSentEvent(data="[DONE]")


@asynccontextmanager
async def serve_openai_stub() -> AsyncIterator[OpenAIStub]:
    """Run an :class:`OpenAIStub` on a free loopback port for the duration of the block."""
    stub = OpenAIStub()
    async with serve_app(stub.app, lifespan="off") as base_url:
        stub.base_url = f"{base_url}/v1"
        try:
            yield stub
        finally:
            stub._stopping.set()  # hanging requests end, so the server can stop at once
