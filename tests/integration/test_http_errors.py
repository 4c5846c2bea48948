"""Refusals of the HTTP layer, before any route runs, in the error body every refusal has."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("TRACE", "/v1/projects", "GET, POST"),
        ("PATCH", "/v1/notes/n1", "GET, PUT, DELETE"),
        ("OPTIONS", "/v1/notes/n1", "GET, PUT, DELETE"),
        ("HEAD", "/v1/threads/t1/stream", "GET"),
        ("POST", "/web/consentry.js", "GET, HEAD"),
    ],
)
async def test_a_method_the_path_lacks_is_405_with_every_method_of_the_path_in_allow(
    client: httpx.AsyncClient, method: str, path: str, allowed: str
) -> None:
    """RFC 9110 wants ``Allow`` on a 405, naming all the methods of the path (FastAPI makes a
    route per method, and Starlette's ``Allow`` named the first route's only)."""
    response = await client.request(method, path)

    assert response.status_code == 405
    assert response.headers["Allow"] == allowed
    if method != "HEAD":
        assert response.json()["error"]["code"] == "method_not_allowed"
