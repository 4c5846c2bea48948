"""Split roles on PostgreSQL: an API-only replica queues runs, a worker executes them, and the
client sees one consent round trip through the API replica alone. Process-level:
``tests/system/test_roles.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from consentry.app import create_app
from consentry.services import Services
from consentry.settings import Settings
from tests.conftest import ManualClock
from tests.live_server import serve_app
from tests.postgres import PostgresCluster
from tests.sse import ASK_FOR_SUMMARY, QUESTION, TUTOR_ASKED, chat, kinds, parse_events


@asynccontextmanager
async def _serve(
    database_url: str, clock: ManualClock, *roles: str, **settings: Any
) -> AsyncIterator[list[tuple[httpx.AsyncClient, Services]]]:
    async with AsyncExitStack() as stack:
        started = []
        for role in roles:
            given = Settings(database_url=database_url, role=role, **settings)
            app = create_app(given, clock=clock)
            base_url = await stack.enter_async_context(serve_app(app))
            http = await stack.enter_async_context(httpx.AsyncClient(base_url=base_url, timeout=30))
            started.append((http, app.state.services))
        yield started


async def test_an_api_replica_queues_runs_that_a_worker_executes_through_a_consent_round_trip(
    postgres: PostgresCluster, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _serve(postgres.new_database(), clock, "api", "worker") as replicas:
        (api, api_services), (_, worker_services) = replicas
        launched: list[str] = []
        launch = worker_services.executor.launch

        def launch_and_count(*args: Any, **kwargs: Any) -> Any:
            launched.append(kwargs["run_id"])
            return launch(*args, **kwargs)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("an API-only replica executed a run")

        monkeypatch.setattr(api_services.executor, "launch", refuse)
        monkeypatch.setattr(worker_services.executor, "launch", launch_and_count)
        project = (await api.get("/v1/projects")).json()["projects"][0]
        note = (
            await api.post(
                f"/v1/projects/{project['project_id']}/notes",
                json={"title": "RAG", "content": "Retrieval first."},
            )
        ).json()
        # A question, then a summary of that discussion: the tutor asks a note_edit consent.
        answered = await chat(api, {"message": QUESTION, "note_id": note["note_id"]})
        asked = await chat(
            api,
            {
                "thread_id": answered[0].thread_id,
                "message": ASK_FOR_SUMMARY,
                "note_id": note["note_id"],
            },
        )
        consent = asked[-2]
        decided = parse_events(
            (
                await api.post(
                    "/v1/chat",
                    json={
                        "thread_id": consent.thread_id,
                        "resume": {"approval_id": consent.approval_id, "decision": "approve"},
                    },
                )
            ).text
        )
        await worker_services.executor.wait_for_runs()
        versions = (await api.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
        audit = (await api.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]

    # The API replica executed nothing; the worker did, and the API streamed its stored events.
    assert launched == [answered[0].run_id, asked[0].run_id, decided[0].run_id]
    assert kinds(answered) == ["run_started", "step", "step", "message", "final"]
    assert answered[-1].reason == "completed"  # type: ignore[union-attr]
    assert asked[0].seq > answered[-1].seq
    assert kinds(asked) == TUTOR_ASKED
    assert asked[-1].reason == "interrupted"  # type: ignore[union-attr]
    assert kinds(decided) == ["run_started", "step", "step", "note", "message", "final"]
    assert decided[-1].reason == "completed"  # type: ignore[union-attr]
    assert decided[0].seq > asked[-1].seq
    assert [v["version"] for v in versions] == [1, 2]
    runs_started = [r for r in audit if r["action"] == "run_started"]
    assert [r["data"]["trigger"] for r in runs_started] == ["message", "message", "resume"]


async def test_a_worker_runs_a_queued_run_with_the_options_its_thread_keeps(
    postgres: PostgresCluster, clock: ManualClock
) -> None:
    own = "own=tests.graph_forms:own_context"
    async with _serve(postgres.new_database(), clock, "api", "worker", graphs=own) as replicas:
        (api, _), (_, worker_services) = replicas
        hi = {"messages": [{"role": "user", "content": "Hi"}]}
        body = {"graph": "own", "input": hi, "context": {"model": "large"}}
        asked = await chat(api, {**body, "configurable": {"persona": "owl"}})
        consent = asked[-2]
        resume = {"approval_id": consent.approval_id, "value": "yes"}  # sent without options
        resumed = await chat(api, {"thread_id": consent.thread_id, "resume": resume})
        plain = await chat(api, {"graph": "own", "input": hi})  # no options ever: the defaults
        await worker_services.executor.wait_for_runs()

    told = "large model, 50 words, persona owl, for local/local"
    said = [[e.content for e in run if e.type == "message"] for run in (asked, resumed, plain)]
    assert said == [[told], [told], ["small model, 50 words, persona None, for local/local"]]


@pytest.mark.parametrize("role", ["api", "worker"])
def test_split_roles_are_refused_on_sqlite(role: str) -> None:
    with pytest.raises(ValidationError, match="needs PostgreSQL"):
        Settings(database_url="sqlite:///data/x.db", role=role)


async def test_an_api_replica_refuses_a_runs_own_breakpoints_a_worker_could_not_keep(
    postgres: PostgresCluster, clock: ManualClock
) -> None:
    """A worker starts a run from what is stored; a run's breakpoints are not, so they are
    refused by name rather than dropped."""
    async with _serve(postgres.new_database(), clock, "api") as replicas:
        ((api, _),) = replicas
        body = {
            "assistant_id": "tutor",
            "input": {"messages": [{"role": "user", "content": QUESTION}]},
            "interrupt_before": ["answer_question"],
        }
        refused = await api.post("/runs/wait", json=body)
        threads = (await api.get("/v1/threads")).json()["threads"]

    assert refused.status_code == 422
    error = refused.json()["error"]
    assert (error["code"], error["details"]) == (
        "unsupported_field",
        {"fields": ["interrupt_before", "interrupt_after"]},
    )
    assert [t for t in threads if t["status"] == "running"] == []
