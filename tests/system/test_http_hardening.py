"""``consentry serve`` exposed without a proxy: heads are bounded in size and header count (431),
slow heads and bodies are timed out (408), idle and long-lived keep-alive connections are closed,
and the access log says what each client got, or that it went away, never a 500 it did not get.

One real server for the module, with timeouts of about a second, driven over raw sockets; its
log (JSON lines on stdout) is read as it comes."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.system.server import serve_process

HEADER_TIMEOUT = 1.0
BODY_IDLE_TIMEOUT = 1.0
BODY_TIMEOUT = 2.0
KEEPALIVE_TIMEOUT = 1
MAX_REQUESTS_PER_CONNECTION = 3
MAX_HEADER_BYTES = 65536  # the defaults
MAX_HEADER_COUNT = 100
SLACK = 1.5
"""How much later than its timeout a connection may be closed on a busy test machine."""
EARLY = 0.2
"""How much earlier than its timeout, as the client measures it: the server's clock starts at
the accept or the read, which may come before the client's own start."""


@dataclass
class ServerLog:
    """The server's log lines (JSON) as they come, read by a thread so the pipe never fills."""

    records: list[dict[str, Any]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def follow(self, process: subprocess.Popen[bytes]) -> None:
        def read() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                with self.changed:
                    self.records.append(record)
                    self.changed.notify_all()

        threading.Thread(target=read, daemon=True).start()

    def mark(self) -> int:
        with self.changed:
            return len(self.records)

    def wait_for_access(
        self, since: int, match: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> dict[str, Any]:
        """The first ``consentry.access`` line after ``since`` that ``match``es."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for record in self.records[since:]:
                    if record.get("logger") == "consentry.access" and match(record):
                        return record
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no such access line; got {self.records[since:]}")
                self.changed.wait(left)


@dataclass
class Server:
    base_url: str
    address: tuple[str, int]
    log: ServerLog

    def connect(self, timeout: float = 5.0) -> socket.socket:
        return socket.create_connection(self.address, timeout=timeout)


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def error(self) -> dict[str, Any]:
        assert self.headers["content-type"] == "application/json"
        error: dict[str, Any] = json.loads(self.body)["error"]
        return error


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "CONSENTRY_HTTP_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
        "CONSENTRY_HTTP_BODY_IDLE_TIMEOUT_SECONDS": str(BODY_IDLE_TIMEOUT),
        "CONSENTRY_HTTP_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
        "CONSENTRY_HTTP_KEEPALIVE_TIMEOUT_SECONDS": str(KEEPALIVE_TIMEOUT),
        "CONSENTRY_MAX_REQUESTS_PER_CONNECTION": str(MAX_REQUESTS_PER_CONNECTION),
    }
    database = tmp_path_factory.mktemp("http") / "c.db"
    with serve_process(database, env=env, args=["--log-level", "info"]) as (base_url, process):
        log = ServerLog()
        log.follow(process)
        url = urlsplit(base_url)
        assert url.hostname is not None
        assert url.port is not None
        yield Server(base_url, (url.hostname, url.port), log)


def _read_response(sock: socket.socket) -> Response:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of the body"
        body += chunk
    return Response(int(status_line.split(" ")[1]), headers, body)


def _closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server closed ``sock`` (nothing else may come)."""
    with contextlib.suppress(ConnectionResetError):
        assert sock.recv(1) == b""
    return time.monotonic() - started


def _exchange(server: Server, request: bytes) -> tuple[Response, float]:
    """Send ``request`` on a new connection; its response and the seconds it took."""
    started = time.monotonic()
    with server.connect() as sock:
        sock.sendall(request)
        return _read_response(sock), time.monotonic() - started


def _get(path: str = "/healthz", *headers: bytes) -> bytes:
    return b"\r\n".join([f"GET {path} HTTP/1.1".encode(), b"Host: t", *headers, b"", b""])


def _assert_refused_and_closed(response: Response, status: int, code: str) -> dict[str, Any]:
    assert (response.status, response.headers.get("connection")) == (status, "close")
    error = response.error()
    assert error["code"] == code
    return error


def test_a_one_megabyte_header_gets_431_at_once_and_healthz_stays_fast(server: Server) -> None:
    since = server.log.mark()
    oversized = _get("/healthz", b"X-Big: " + b"a" * 1_048_576)
    with ThreadPoolExecutor(8) as pool:
        refusals = [pool.submit(_exchange, server, oversized) for _ in range(8)]
        probes = []
        with httpx.Client(base_url=server.base_url, timeout=5) as client:
            for _ in range(5):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                probes.append(time.monotonic() - started)
        answers = [refusal.result() for refusal in refusals]

    assert max(probes) < 1.0, probes
    for response, seconds in answers:
        error = _assert_refused_and_closed(response, 431, "headers_too_large")
        assert error["details"] == {"limit": "max_header_bytes", "max": MAX_HEADER_BYTES}
        assert seconds < 3.0
    line = server.log.wait_for_access(since, lambda r: r["status"] == 431)
    assert (line["outcome"], line["code"]) == ("rejected", "headers_too_large")


def test_a_head_of_exactly_the_byte_limit_passes_and_one_byte_more_gets_431(
    server: Server,
) -> None:
    def head_of(size: int) -> bytes:
        padding = size - len(_get("/healthz", b"X-Pad: "))
        return _get("/healthz", b"X-Pad: " + b"p" * padding)

    at_limit, _ = _exchange(server, head_of(MAX_HEADER_BYTES))
    past_limit, _ = _exchange(server, head_of(MAX_HEADER_BYTES + 1))

    assert at_limit.status == 200
    _assert_refused_and_closed(past_limit, 431, "headers_too_large")


def test_more_headers_than_the_limit_get_431(server: Server) -> None:
    def with_headers(count: int) -> bytes:  # Host is one of them
        return _get("/healthz", *(b"X-H%d: v" % i for i in range(count - 1)))

    at_limit, _ = _exchange(server, with_headers(MAX_HEADER_COUNT))
    past_limit, _ = _exchange(server, with_headers(MAX_HEADER_COUNT + 1))

    assert at_limit.status == 200
    error = _assert_refused_and_closed(past_limit, 431, "headers_too_large")
    assert error["details"] == {"limit": "max_header_count", "max": MAX_HEADER_COUNT}


def test_a_head_that_does_not_arrive_in_time_gets_408_and_is_closed(server: Server) -> None:
    since = server.log.mark()
    with server.connect() as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        response = _read_response(sock)
        closed = _closed_after(sock, started)

    error = _assert_refused_and_closed(response, 408, "request_timeout")
    assert error["details"] == {"limit": "http_header_timeout_seconds", "max": HEADER_TIMEOUT}
    assert HEADER_TIMEOUT - EARLY <= closed < HEADER_TIMEOUT + SLACK
    line = server.log.wait_for_access(since, lambda r: r["status"] == 408)
    assert (line["outcome"], line["code"]) == ("timed_out", "request_timeout")


def test_a_slowloris_head_trickling_bytes_is_cut_at_the_head_deadline(server: Server) -> None:
    with server.connect(timeout=0.2) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        received = b""
        while time.monotonic() - started < HEADER_TIMEOUT + SLACK:
            try:
                sock.sendall(b"a")  # one byte every 0.2 s: never idle, never done
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if not chunk:
                break
            received += chunk
        elapsed = time.monotonic() - started

    assert received.startswith(b"HTTP/1.1 408 ")
    assert HEADER_TIMEOUT - EARLY <= elapsed < HEADER_TIMEOUT + SLACK


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout(server: Server) -> None:
    with server.connect() as sock:
        closed = _closed_after(sock, time.monotonic())

    assert HEADER_TIMEOUT - EARLY <= closed < HEADER_TIMEOUT + SLACK


def test_a_stalled_body_gets_408_and_its_access_line_says_408(server: Server) -> None:
    since = server.log.mark()
    with server.connect() as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /v1/chat HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"X-Request-ID: stalled-body\r\nContent-Length: 100\r\n\r\n" + b'{"message": "'
        )
        response = _read_response(sock)
        closed = _closed_after(sock, started)

    error = _assert_refused_and_closed(response, 408, "request_timeout")
    assert error["details"] == {"limit": "http_body_idle_timeout_seconds", "max": BODY_IDLE_TIMEOUT}
    assert BODY_IDLE_TIMEOUT - EARLY <= closed < BODY_IDLE_TIMEOUT + SLACK
    line = server.log.wait_for_access(since, lambda r: r.get("request_id") == "stalled-body")
    assert (line["method"], line["path"], line["status"], line["outcome"], line["code"]) == (
        "POST",
        "/v1/chat",
        408,
        "timed_out",
        "request_timeout",
    )


def test_a_body_dripping_bytes_is_cut_at_the_body_deadline(server: Server) -> None:
    with server.connect(timeout=0.3) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /v1/chat HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
        received = b""
        while time.monotonic() - started < BODY_TIMEOUT + SLACK:
            try:
                sock.sendall(b" ")  # one byte every 0.3 s: never idle for 1 s
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if not chunk:
                break
            received += chunk
        elapsed = time.monotonic() - started

    assert received.startswith(b"HTTP/1.1 408 ")
    assert b'"limit":"http_body_timeout_seconds"' in received
    assert BODY_TIMEOUT - EARLY <= elapsed < BODY_TIMEOUT + SLACK


def test_an_idle_keep_alive_connection_is_closed_after_the_keepalive_timeout(
    server: Server,
) -> None:
    with server.connect() as sock:
        sock.sendall(_get())
        assert _read_response(sock).status == 200
        closed = _closed_after(sock, time.monotonic())

    assert closed < KEEPALIVE_TIMEOUT + SLACK


def test_a_connection_serves_at_most_max_requests_per_connection(server: Server) -> None:
    with server.connect() as sock:
        responses = []
        for _ in range(MAX_REQUESTS_PER_CONNECTION):
            sock.sendall(_get())
            responses.append(_read_response(sock))
        closed = _closed_after(sock, time.monotonic())

    assert [r.status for r in responses] == [200] * MAX_REQUESTS_PER_CONNECTION
    assert [r.headers.get("connection") for r in responses] == [None, None, "close"]
    assert closed < 1.0


def test_a_body_abandoned_midway_is_logged_as_499_client_disconnected(server: Server) -> None:
    since = server.log.mark()
    with server.connect() as sock:
        sock.sendall(
            b"POST /v1/chat HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"X-Request-ID: abandoned-body\r\nContent-Length: 100\r\n\r\n" + b'{"message": "'
        )

    line = server.log.wait_for_access(since, lambda r: r.get("request_id") == "abandoned-body")
    assert (line["path"], line["status"], line["outcome"]) == (
        "/v1/chat",
        499,
        "client_disconnected",
    )


def test_a_malformed_chunked_body_gets_a_json_400_and_is_logged_as_400(server: Server) -> None:
    since = server.log.mark()
    response, _ = _exchange(
        server,
        b"POST /v1/chat HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"X-Request-ID: bad-chunk\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    )

    _assert_refused_and_closed(response, 400, "malformed_request")
    line = server.log.wait_for_access(since, lambda r: r.get("request_id") == "bad-chunk")
    assert (line["path"], line["status"], line["outcome"], line["code"]) == (
        "/v1/chat",
        400,
        "rejected",
        "malformed_request",
    )


def test_a_request_that_is_not_http_gets_a_json_400_and_an_access_line(server: Server) -> None:
    since = server.log.mark()
    response, _ = _exchange(server, b"NOT HTTP AT ALL\r\n\r\n")

    _assert_refused_and_closed(response, 400, "malformed_request")
    line = server.log.wait_for_access(since, lambda r: r["status"] == 400)
    assert (line["outcome"], line["code"]) == ("rejected", "malformed_request")
