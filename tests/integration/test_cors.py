"""Cross-origin requests (``CONSENTRY_CORS_ORIGINS``): preflights are answered before any key
check, responses to a listed origin are readable with the protocol's headers (streams and
refusals too), the request limits still apply, and nothing changes when no origin is listed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

FRONTEND = "http://localhost:5173"
KEYS = "k1=t:u"
KEY = {"Authorization": "Bearer k1"}
ALLOWED_HEADERS = {"authorization", "x-api-key", "content-type", "last-event-id", "idempotency-key"}
EXPOSED_HEADERS = {
    "x-run-id",
    "x-thread-id",
    "x-request-id",
    "idempotent-replayed",
    "retry-after",
    "content-location",  # the LangGraph SDK finds a run again by these
    "location",
}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


def _listed(value: str | None) -> set[str]:
    return {part.strip().lower() for part in (value or "").split(",") if part.strip()}


async def test_a_preflight_from_a_listed_origin_is_answered_without_a_key(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS, cors_origins=FRONTEND) as client:
        response = await client.options(
            "/v1/chat",
            headers={
                "Origin": FRONTEND,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
            },
        )

    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == FRONTEND
    assert "POST" in response.headers["access-control-allow-methods"]
    assert _listed(response.headers["access-control-allow-headers"]) >= ALLOWED_HEADERS
    assert "access-control-allow-credentials" not in response.headers


async def test_a_preflight_from_another_origin_is_refused(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(cors_origins=FRONTEND) as client:
        response = await client.options(
            "/v1/chat",
            headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        )

    assert response.status_code == 400
    assert "access-control-allow-origin" not in response.headers


async def test_a_stream_to_a_listed_origin_exposes_the_protocols_headers(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS, cors_origins=FRONTEND) as client:
        response = await client.post(
            "/v1/chat",
            json={"message": "What is RAG?"},
            headers={**KEY, "Origin": FRONTEND, "Idempotency-Key": "cors-1"},
        )
        replayed = await client.post(
            "/v1/chat",
            json={"message": "What is RAG?"},
            headers={**KEY, "Origin": FRONTEND, "Idempotency-Key": "cors-1"},
        )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["access-control-allow-origin"] == FRONTEND
    assert _listed(response.headers["access-control-expose-headers"]) == EXPOSED_HEADERS
    assert {"x-run-id", "x-thread-id", "x-request-id"} <= set(response.headers)
    assert "event: final" in response.text
    assert replayed.headers["idempotent-replayed"] == "true"
    assert replayed.headers["access-control-allow-origin"] == FRONTEND


async def test_refusals_to_a_listed_origin_are_readable_and_the_limits_still_apply(
    open_client: Callable[..., Any],
) -> None:
    origin = {"Origin": FRONTEND}
    async with open_client(api_keys=KEYS, cors_origins=FRONTEND, max_body_bytes=1024) as client:
        unauthorized = await client.get("/v1/threads", headers=origin)
        too_large = await client.post(
            "/v1/chat", json={"message": "x" * 2000}, headers={**KEY, **origin}
        )
        not_json = await client.post(
            "/v1/projects",
            content=b"name=x",
            headers={**KEY, **origin, "Content-Type": "text/plain"},
        )

    for response, status, code in (
        (unauthorized, 401, "unauthorized"),
        (too_large, 413, "body_too_large"),
        (not_json, 415, "unsupported_media_type"),
    ):
        assert (response.status_code, response.json()["error"]["code"]) == (status, code)
        assert response.headers["access-control-allow-origin"] == FRONTEND


async def test_another_origin_gets_no_cors_headers(open_client: Callable[..., Any]) -> None:
    async with open_client(cors_origins=FRONTEND) as client:
        response = await client.get("/v1/threads", headers={"Origin": "http://evil.example"})

    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


async def test_without_listed_origins_there_is_no_cors(client: httpx.AsyncClient) -> None:
    preflight = await client.options(
        "/v1/chat", headers={"Origin": FRONTEND, "Access-Control-Request-Method": "POST"}
    )
    plain = await client.get("/v1/threads", headers={"Origin": FRONTEND})

    assert preflight.status_code == 405
    assert preflight.json()["error"]["code"] == "method_not_allowed"
    assert not any(name.startswith("access-control-") for name in plain.headers)


async def test_any_origin_with_api_keys_is_allowed_and_never_credentialed(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS, cors_origins="*") as client:
        response = await client.get("/v1/threads", headers={**KEY, "Origin": "http://any.example"})

    assert response.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in response.headers
