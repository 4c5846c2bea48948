"""``GET /readyz``: ready for traffic only while the database answers at the current schema,
the background tasks live, and the server is not shutting down; otherwise 503 ``not_ready``
naming what is wrong, with ``Retry-After``."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.services import _shutdown_steps
from consentry.storage.db.database import head_revision


def _services(client: httpx.AsyncClient) -> Any:
    return client.services  # type: ignore[attr-defined]


async def _not_ready(client: httpx.AsyncClient) -> dict[str, str]:
    response = await client.get("/readyz")
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    error = response.json()["error"]
    assert error["code"] == "not_ready"
    checks: dict[str, str] = error["details"]["checks"]
    failing = [name for name, state in checks.items() if state != "ok"]
    assert error["message"] == "Not ready for traffic: " + ", ".join(failing) + "."
    return checks


async def test_a_served_app_is_ready(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")

    assert response.status_code == 200, response.text
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "workers": "ok", "shutdown": "ok"},
    }


async def test_a_stopped_background_task_makes_it_not_ready(client: httpx.AsyncClient) -> None:
    await _services(client).expiry.stop()

    checks = await _not_ready(client)

    assert checks == {
        "database": "ok",
        "migrations": "ok",
        "workers": "stopped: expiry_sweeper",
        "shutdown": "ok",
    }


async def test_a_schema_behind_this_release_makes_it_not_ready(
    client: httpx.AsyncClient,
) -> None:
    db = _services(client).db
    async with db.write() as conn:
        await conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'an_old_one'")

    checks = await _not_ready(client)

    assert checks["migrations"] == f"at an_old_one, needs {head_revision()}"
    assert (checks["database"], checks["workers"]) == ("ok", "ok")


async def test_a_server_asked_to_stop_is_not_ready_while_it_drains(
    client: httpx.AsyncClient,
) -> None:
    services = _services(client)
    begin_shutdown = _shutdown_steps(services.executor, services.open_streams, services.readiness)
    begin_shutdown()  # what SIGTERM (or SIGINT) does first

    checks = await _not_ready(client)

    assert checks["shutdown"] == "draining"
    assert (await client.get("/healthz")).status_code == 200  # alive, just not taking traffic
