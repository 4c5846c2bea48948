"""An ``Idempotency-Key`` belongs to the principal that sent it. Another user of the same tenant,
or the same user name in another tenant, sending the same key (with the same body or another)
has its own request executed, for itself: it never gets the stored response of the key's first
sender, whose replay still returns its own first response (and whose key still refuses another
body). ``test_idempotency.py`` has the semantics of one principal's keys."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio

from consentry.app import create_app
from consentry.schemas.events import FinalEvent, RunStartedEvent
from consentry.settings import Settings
from tests.openai_stub import OpenAIStub
from tests.sse import parse_events, parse_frames
from tests.tenancy import API_KEYS, OWNER, STRANGERS, build_owned_objects

KEYED_ROUTES = {
    ("POST", "/v1/chat"),
    ("POST", "/v1/approvals/{approval_id}/decision"),
    ("POST", "/v1/threads/{thread_id}/retry"),
    ("POST", "/runs/stream"),
    ("POST", "/threads/{thread_id}/runs/stream"),
    ("POST", "/runs"),
    ("POST", "/threads/{thread_id}/runs"),
    ("POST", "/runs/wait"),
    ("POST", "/threads/{thread_id}/runs/wait"),
    ("POST", "/runs/batch"),
    ("POST", "/v1/agui/{graph}"),
}
"""The routes taking ``Idempotency-Key``; each has a test here."""
REPLAYED = "Idempotent-Replayed"


@pytest_asyncio.fixture
async def keyed_client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(api_keys=API_KEYS) as client:
        yield client


def _with_key(headers: dict[str, str], key: str) -> dict[str, str]:
    return {**headers, "Idempotency-Key": key}


def _durable(response: httpx.Response) -> list[dict[str, Any]]:
    return [e.model_dump() for e in parse_events(response.text) if e.type != "token"]


def _code(response: httpx.Response) -> str | None:
    return str(response.json()["error"]["code"]) if response.status_code >= 400 else None


@dataclass(frozen=True)
class Streamed:
    """What a streamed answer says about its run (None where it says nothing)."""

    status: int
    replayed: str | None
    thread_id: str | None
    run_id: str | None
    runs_of_events: frozenset[tuple[str, str]]
    trigger: str | None
    reason: str | None

    @classmethod
    def of(cls, response: httpx.Response) -> Streamed:
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        events = parse_events(response.text) if streamed else []
        started = events[0] if events and isinstance(events[0], RunStartedEvent) else None
        final = events[-1] if events and isinstance(events[-1], FinalEvent) else None
        return cls(
            status=response.status_code,
            replayed=response.headers.get(REPLAYED),
            thread_id=response.headers.get("X-Thread-Id"),
            run_id=response.headers.get("X-Run-Id"),
            runs_of_events=frozenset((e.thread_id, e.run_id) for e in events),
            trigger=started.trigger if started else None,
            reason=final.reason if final else None,
        )

    def new_run(self, *, trigger: str, reason: str) -> Streamed:
        """What this answer should be: a run of its own, not a replay."""
        assert self.thread_id is not None, self
        assert self.run_id is not None, self
        return Streamed(
            200,
            None,
            self.thread_id,
            self.run_id,
            frozenset({(self.thread_id, self.run_id)}),
            trigger,
            reason,
        )


def test_every_route_taking_an_idempotency_key_is_covered_here(tmp_path: Path) -> None:
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}", api_keys=API_KEYS)
    )

    keyed = {
        (method.upper(), path)
        for path, item in app.openapi()["paths"].items()
        for method, operation in item.items()
        if any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
    }

    assert keyed == KEYED_ROUTES


async def test_a_chat_key_reused_by_another_principal_runs_that_principals_own_chat(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    first = {"message": "What is RAG?"}
    bodies = {"the same body": first, "another body": {"message": "What is retrieval?"}}
    observed: list[tuple[Any, ...]] = []
    expected: list[tuple[Any, ...]] = []

    for n, (which, body) in enumerate(bodies.items()):
        key = f"shared-chat-{n}"
        alices = await client.post("/v1/chat", json=first, headers=_with_key(OWNER, key))
        alice_ids = (alices.headers.get("X-Thread-Id"), alices.headers.get("X-Run-Id"))
        for who, headers in STRANGERS.items():
            theirs = Streamed.of(
                await client.post("/v1/chat", json=body, headers=_with_key(headers, key))
            )
            transcript = await client.get(
                f"/v1/threads/{theirs.thread_id}/messages", headers=headers
            )
            observed.append(
                (
                    which,
                    who,
                    theirs,
                    bool({theirs.thread_id, theirs.run_id} & set(alice_ids)),
                    [m["content"] for m in transcript.json().get("messages", [])][:1],
                )
            )
            expected.append(
                (
                    which,
                    who,
                    theirs.new_run(trigger="message", reason="completed"),
                    False,
                    [body["message"]],
                )
            )
        replay = await client.post("/v1/chat", json=first, headers=_with_key(OWNER, key))
        reused = await client.post(
            "/v1/chat", json={"message": "Other"}, headers=_with_key(OWNER, key)
        )
        observed.append(
            (
                which,
                "acme:alice again",
                replay.status_code,
                replay.headers.get(REPLAYED),
                (replay.headers.get("X-Thread-Id"), replay.headers.get("X-Run-Id")),
                _durable(replay),
                (reused.status_code, _code(reused)),
            )
        )
        expected.append(
            (
                which,
                "acme:alice again",
                200,
                "true",
                alice_ids,
                _durable(alices),
                (422, "idempotency_key_reused"),
            )
        )
    threads = {
        who: len((await client.get("/v1/threads", headers=headers)).json()["threads"])
        for who, headers in {"acme:alice": OWNER, **STRANGERS}.items()
    }

    assert observed == expected
    assert threads == {"acme:alice": 2, "acme:bob": 2, "globex:alice": 2}


async def test_a_decision_key_reused_by_another_principal_decides_that_principals_own_consent(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    principals = {"acme:alice": OWNER, **STRANGERS}
    owned = {who: await build_owned_objects(client, headers) for who, headers in principals.items()}
    # Alice's first body with each key; the others send it again, or another one.
    scenarios = [
        ("shared-decision-0", "approval_id", {"decision": "approve"}, {"decision": "approve"}),
        (
            "shared-decision-1",
            "inbox_approval_id",
            {"decision": "reject"},
            {"decision": "reject", "comment": "Not this time."},
        ),
    ]
    observed: list[tuple[Any, ...]] = []
    expected: list[tuple[Any, ...]] = []

    def url(who: str, which: str) -> str:
        return f"/v1/approvals/{owned[who].ids()[which]}/decision"

    for key, which, alices_body, their_body in scenarios:
        alices = await client.post(
            url("acme:alice", which), json=alices_body, headers=_with_key(OWNER, key)
        )
        for who, headers in STRANGERS.items():
            theirs = await client.post(
                url(who, which), json=their_body, headers=_with_key(headers, key)
            )
            await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
            approval_id = owned[who].ids()[which]
            approval = (await client.get(f"/v1/approvals/{approval_id}", headers=headers)).json()
            answer = theirs.json()
            observed.append(
                (
                    key,
                    who,
                    theirs.status_code,
                    theirs.headers.get(REPLAYED),
                    {k: v for k, v in answer.items() if k != "run_id"},
                    answer.get("run_id") in (None, alices.json()["run_id"]),
                    approval["status"],
                    approval["decided"] and approval["decided"]["decided_by"],
                    approval["decided"] and approval["decided"]["comment"],
                )
            )
            thread_id = (
                owned[who].thread_id if which == "approval_id" else owned[who].inbox_thread_id
            )
            status = "approved" if their_body["decision"] == "approve" else "rejected"
            expected.append(
                (
                    key,
                    who,
                    202,
                    None,
                    {"approval_id": approval_id, "thread_id": thread_id, "status": status},
                    False,
                    status,
                    who.replace(":", "/"),
                    their_body.get("comment"),
                )
            )
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        replay = await client.post(
            url("acme:alice", which), json=alices_body, headers=_with_key(OWNER, key)
        )
        reused = await client.post(
            url("acme:alice", which),
            json={"decision": "approve", "comment": "x"},
            headers=_with_key(OWNER, key),
        )
        observed.append(
            (
                key,
                "acme:alice again",
                (replay.status_code, replay.headers.get(REPLAYED), replay.json()),
                (reused.status_code, _code(reused)),
            )
        )
        expected.append(
            (
                key,
                "acme:alice again",
                (202, "true", alices.json()),
                (422, "idempotency_key_reused"),
            )
        )

    assert observed == expected
    alices_approvals = (await client.get("/v1/approvals", headers=OWNER)).json()["approvals"]
    assert sorted((a["status"], a["decided"]["decided_by"]) for a in alices_approvals) == [
        ("approved", "acme/alice"),
        ("rejected", "acme/alice"),
    ]


async def test_a_retry_key_reused_by_another_principal_retries_that_principals_own_thread(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    principals = {"acme:alice": OWNER, **STRANGERS}
    for _ in range(2 * len(principals)):  # each first run, then each retry, fails
        stub.fail(500)
    async with open_client(api_keys=API_KEYS, **stub.app_settings()) as client:
        failed: dict[str, str] = {}
        for who, headers in principals.items():
            response = await client.post(
                "/v1/chat", json={"message": "What is RAG?"}, headers=headers
            )
            failed[who] = response.headers["X-Thread-Id"]
        key = "shared-retry"

        def retry(who: str) -> Any:
            return client.post(
                f"/v1/threads/{failed[who]}/retry", headers=_with_key(principals[who], key)
            )

        alices = Streamed.of(await retry("acme:alice"))
        theirs = {who: Streamed.of(await retry(who)) for who in STRANGERS}
        replay = await retry("acme:alice")

    assert alices == alices.new_run(trigger="retry", reason="failed")
    assert alices.thread_id == failed["acme:alice"]
    assert theirs == {
        who: Streamed(
            200,
            None,
            failed[who],
            theirs[who].run_id,
            frozenset({(failed[who], theirs[who].run_id or "")}),
            "retry",
            "failed",
        )
        for who in STRANGERS
    }
    assert alices.run_id not in {answer.run_id for answer in theirs.values()}
    assert Streamed.of(replay) == dataclasses.replace(alices, replayed="true")
    stub.assert_calls(2 * len(principals))


async def test_an_sdk_run_key_reused_by_another_principal_runs_that_principals_own_run(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    body = {
        "assistant_id": "tutor",
        "input": {"messages": [{"role": "user", "content": "What is RAG?"}]},
    }
    key = "shared-sdk-run"
    alices = await client.post("/runs/stream", json=body, headers=_with_key(OWNER, key))
    alice = (alices.headers["X-Thread-Id"], alices.headers["X-Run-Id"])
    observed = []
    for who, headers in STRANGERS.items():
        theirs = await client.post("/runs/stream", json=body, headers=_with_key(headers, key))
        ids = (theirs.headers.get("X-Thread-Id"), theirs.headers.get("X-Run-Id"))
        on_hers = await client.post(  # with the key Alice uses on her thread below
            f"/threads/{alice[0]}/runs/stream", json=body, headers=_with_key(headers, "mine")
        )
        observed.append(
            (who, theirs.status_code, theirs.headers.get(REPLAYED), bool(set(ids) & set(alice)))
        )
        observed.append((who, "her thread", on_hers.status_code, _code(on_hers)))
    on_mine = await client.post(
        f"/threads/{alice[0]}/runs/stream", json=body, headers=_with_key(OWNER, "mine")
    )
    again = await client.post(
        f"/threads/{alice[0]}/runs/stream", json=body, headers=_with_key(OWNER, "mine")
    )
    replay = await client.post("/runs/stream", json=body, headers=_with_key(OWNER, key))

    assert observed == [
        ("acme:bob", 200, None, False),
        ("acme:bob", "her thread", 404, "thread_not_found"),
        ("globex:alice", 200, None, False),
        ("globex:alice", "her thread", 404, "thread_not_found"),
    ]
    assert (again.headers.get(REPLAYED), again.headers["X-Run-Id"]) == (
        "true",
        on_mine.headers["X-Run-Id"],
    )
    assert replay.headers.get(REPLAYED) == "true"
    assert (replay.headers["X-Thread-Id"], replay.headers["X-Run-Id"]) == alice
    assert parse_frames(replay.text)[0] == parse_frames(alices.text)[0]  # the same metadata


async def test_an_agui_key_reused_by_another_principal_runs_that_principals_own_run(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client

    def body(thread_id: str) -> dict[str, Any]:
        message = {"id": "m1", "role": "user", "content": "What is RAG?"}
        return {"threadId": thread_id, "runId": "r1", "messages": [message]}

    def run_id(response: httpx.Response) -> str:
        started = json.loads(response.text.split("\n\n")[0].removeprefix("data: "))
        return str(started["metadata"]["consentry_run_id"])

    key, alices_thread = "shared-agui-run", str(uuid.uuid4())
    alices = await client.post(
        "/v1/agui/tutor", json=body(alices_thread), headers=_with_key(OWNER, key)
    )
    theirs = {
        who: await client.post(
            "/v1/agui/tutor", json=body(str(uuid.uuid4())), headers=_with_key(headers, key)
        )
        for who, headers in STRANGERS.items()
    }
    replay = await client.post(
        "/v1/agui/tutor", json=body(alices_thread), headers=_with_key(OWNER, key)
    )

    assert {who: r.headers.get(REPLAYED) for who, r in theirs.items()} == dict.fromkeys(STRANGERS)
    assert run_id(alices) not in {run_id(r) for r in theirs.values()}
    assert (replay.headers.get(REPLAYED), run_id(replay)) == ("true", run_id(alices))


async def test_an_sdk_background_run_sent_again_with_its_key_is_the_same_run_for_its_owner_only(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    body = {
        "assistant_id": "tutor",
        "input": {"messages": [{"role": "user", "content": "What is RAG?"}]},
    }
    created = await client.post("/runs", json=body, headers=_with_key(OWNER, "bg"))
    thread_id = created.json()["thread_id"]
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    waited = await client.post(
        f"/threads/{thread_id}/runs/wait", json=body, headers=_with_key(OWNER, "w")
    )
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    created_again = await client.post("/runs", json=body, headers=_with_key(OWNER, "bg"))
    waited_again = await client.post(
        f"/threads/{thread_id}/runs/wait", json=body, headers=_with_key(OWNER, "w")
    )
    other_route = await client.post("/runs/wait", json=body, headers=_with_key(OWNER, "bg"))
    (who, headers), *_ = STRANGERS.items()
    theirs = await client.post("/runs", json=body, headers=_with_key(headers, "bg"))
    on_hers = await client.post(
        f"/threads/{thread_id}/runs", json=body, headers=_with_key(headers, "w")
    )
    runs = (await client.get(f"/threads/{thread_id}/runs", headers=OWNER)).json()

    assert created_again.json()["run_id"] == created.json()["run_id"]
    assert waited_again.headers["Content-Location"] == waited.headers["Content-Location"]
    assert waited_again.json() == waited.json()
    assert waited.json()["messages"][-1]["type"] == "ai"
    assert len(runs) == 2  # a run for each first request, none for a request sent again
    assert (other_route.status_code, _code(other_route)) == (422, "idempotency_key_reused")
    assert theirs.status_code == 200, who
    assert theirs.json()["run_id"] != created.json()["run_id"]
    assert (on_hers.status_code, _code(on_hers)) == (404, "thread_not_found")


async def test_a_batch_key_names_its_runs_for_its_owner_only(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    body = [
        {"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": q}]}}
        for q in ("What is RAG?", "What is recall?")
    ]
    first = await client.post("/runs/batch", json=body, headers=_with_key(OWNER, "batch"))
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    again = await client.post("/runs/batch", json=body, headers=_with_key(OWNER, "batch"))
    (who, headers), *_ = STRANGERS.items()
    theirs = await client.post("/runs/batch", json=body, headers=_with_key(headers, "batch"))
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]

    def run_ids(response: httpx.Response) -> list[str]:
        return [run["run_id"] for run in response.json()]

    assert first.status_code == again.status_code == 200
    assert run_ids(again) == run_ids(first)
    assert len(set(run_ids(first))) == 2
    assert theirs.status_code == 200, who
    assert not set(run_ids(theirs)) & set(run_ids(first))
