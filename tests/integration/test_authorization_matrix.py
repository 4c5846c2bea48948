"""Every route of the OpenAPI document, called four ways: without a key, with a wrong key, with the
owner's key, and with another principal's key on the owner's objects.

- Without a valid key every route but the public ones answers 401 ``unauthorized``, the same for
  the owner's ids as for ids that do not exist (no way to probe which ids exist).
- Another principal (a user of the owner's tenant, or the owner's user name in another tenant)
  naming the owner's objects gets exactly the answer an unknown id gets: same status, same bytes
  once each id is replaced by its name. Lists it reads mention none of the owner's ids.
- None of it changes anything the owner can see, nor any row of the database.
- With the owner's key, each call reaches the owner's objects.

``CALLS`` says how to call each route; a route of the OpenAPI document without a row fails the
matrix, so a new route cannot slip past it. ``test_owner_isolation.py`` has the narrower cases,
one behaviour per test.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest_asyncio
from fastapi import FastAPI
from starlette.routing import BaseRoute

from consentry.app import create_app
from consentry.settings import Settings
from tests.openai_stub import OpenAIStub
from tests.sse import parse_events
from tests.tenancy import (
    API_KEYS,
    OWNER,
    STRANGERS,
    build_owned_objects,
    checkpoint_ids,
    row_counts,
    visible_state,
)

WAIT_SECONDS = 10.0
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Call:
    """One way to call a route (its path as in the OpenAPI document). ``{name}`` in the URL, body,
    query or headers stands for one of the owner's ids (``OwnedObjects.ids``) or for
    ``{first_seq}``, a valid ``Last-Event-ID`` of the owner's thread."""

    method: str
    route: str
    json: Any = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    """The URL template when it names another of the owner's objects than ``route`` says."""
    owner_status: int = 200
    """What the owner gets, calling in table order after everything else..."""
    owner_code: str | None = None
    """... and the error's code, for an error."""
    endless: bool = False
    """An event stream that never ends by itself: read up to its ``ready`` frame."""

    def names(self) -> set[str]:
        """The owner's ids this call names."""
        text = repr((self.url or self.route, self.json, dict(self.params), dict(self.headers)))
        return set(_PLACEHOLDER.findall(text)) - {"first_seq"}

    async def send(
        self, client: httpx.AsyncClient, values: Mapping[str, str], headers: Mapping[str, str]
    ) -> httpx.Response:
        def fill(template: Any) -> Any:
            if isinstance(template, str):
                return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
            if isinstance(template, dict):
                return {key: fill(value) for key, value in template.items()}
            if isinstance(template, list):
                return [fill(value) for value in template]
            return template

        request = client.build_request(
            self.method,
            fill(self.url or self.route),
            json=fill(self.json),
            params=fill(dict(self.params)),
            headers={**fill(dict(self.headers)), **headers},
        )
        # A stream that let a stranger in would follow a run, not answer: bounded.
        if self.endless:
            return await asyncio.wait_for(_until_ready(client, request), WAIT_SECONDS)
        return await asyncio.wait_for(client.send(request), WAIT_SECONDS)

    def __str__(self) -> str:
        extras = [repr(part) for part in (self.json, self.params, self.headers) if part]
        return " ".join([self.method, self.url or self.route, *extras])


async def _until_ready(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """``request`` to an endless event stream of the in-process app, answered up to its ``ready``
    frame (httpx's ASGI transport would wait for an end that never comes)."""
    app = client._transport.app  # type: ignore[attr-defined]
    start: dict[str, Any] = {}
    body = bytearray()
    answered, gone = asyncio.Event(), asyncio.Event()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))
            if start["status"] != 200 or b"event: ready" in body or not message.get("more_body"):
                answered.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.url.path,
        "raw_path": request.url.raw_path.split(b"?")[0],
        "query_string": request.url.query,
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "client": ("127.0.0.1", 123),
        "server": ("testserver", 80),
        "extensions": {},
    }
    running = asyncio.create_task(app(scope, receive, send))
    try:
        await answered.wait()
    finally:
        gone.set()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    headers = [(k.decode(), v.decode()) for k, v in start["headers"]]
    return httpx.Response(start["status"], headers=headers, content=bytes(body), request=request)


QUESTION = "What is RAG?"
QUESTION_PART = {"role": "user", "content": QUESTION}

CALLS: tuple[Call, ...] = (
    # Reads.
    Call("GET", "/v1/projects"),
    Call("GET", "/v1/projects/{project_id}/notes"),
    Call("GET", "/v1/projects/{project_id}/search", params={"q": "retrieval"}),
    Call("GET", "/v1/notes/{note_id}"),
    Call("GET", "/v1/notes/{note_id}/versions"),
    Call("GET", "/v1/threads"),
    Call("GET", "/v1/threads/{thread_id}"),
    Call("GET", "/v1/threads/{thread_id}/messages"),
    Call("GET", "/v1/threads/{thread_id}/tool-calls"),
    Call("GET", "/v1/threads/{thread_id}/audit"),
    Call("GET", "/v1/threads/{thread_id}/stream"),
    Call("GET", "/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "{first_seq}"}),
    Call("GET", "/v1/threads/{thread_id}/stream", params={"last_event_id": "{first_seq}"}),
    Call("GET", "/v1/approvals"),
    Call("GET", "/v1/approvals", params={"status": "pending"}),
    Call("GET", "/v1/approvals/{approval_id}"),
    Call("GET", "/v1/approvals/stream", endless=True),
    Call("GET", "/v1/approvals/stream", headers={"Last-Event-ID": "0"}, endless=True),
    Call("GET", "/v1/consent-kinds"),
    Call("GET", "/v1/graphs"),
    Call("GET", "/v1/me"),
    # The LangGraph SDK's face: the served graphs' assistants (nobody's objects), and the
    # owner's own.
    Call("POST", "/assistants/search", json={}),
    Call("POST", "/assistants/count", json={}),
    Call("GET", "/assistants/{assistant_id}", url="/assistants/tutor"),
    Call("GET", "/assistants/{assistant_id}/graph", url="/assistants/tutor/graph"),
    Call("GET", "/assistants/{assistant_id}/schemas", url="/assistants/tutor/schemas"),
    Call("GET", "/assistants/{assistant_id}"),
    Call("GET", "/assistants/{assistant_id}/graph"),
    Call("GET", "/assistants/{assistant_id}/schemas"),
    Call("POST", "/assistants/{assistant_id}/versions", json={}),
    Call("GET", "/assistants/{assistant_id}/subgraphs"),
    Call(
        "GET",
        "/assistants/{assistant_id}/subgraphs/{namespace}",
        url="/assistants/{assistant_id}/subgraphs/plan",
    ),
    Call("POST", "/threads/search", json={"status": "interrupted"}),
    Call("POST", "/threads/count", json={"status": "interrupted"}),
    Call("GET", "/threads/{thread_id}"),
    Call("GET", "/threads/{thread_id}/state"),
    Call(
        "GET",
        "/threads/{thread_id}/state/{checkpoint_id}",
        url="/threads/{thread_id}/state/1f0-not-kept",
        owner_status=404,
        owner_code="checkpoint_not_found",
    ),
    Call("POST", "/threads/{thread_id}/state/checkpoint", json={"checkpoint": {}}),
    Call("POST", "/threads/{thread_id}/history", json={"limit": 5}),
    Call("GET", "/threads/{thread_id}/runs"),
    Call(
        "GET",
        "/threads/{thread_id}/runs/{run_id}",
        url="/threads/{thread_id}/runs/00000000-0000-4000-8000-000000000000",
        owner_status=404,
        owner_code="run_not_found",
    ),
    Call(
        "DELETE",
        "/threads/{thread_id}/runs/{run_id}",
        url="/threads/{thread_id}/runs/00000000-0000-4000-8000-000000000000",
        owner_status=404,
        owner_code="run_not_found",
    ),
    Call(
        "GET",
        "/threads/{thread_id}/runs/{run_id}/join",
        url="/threads/{thread_id}/runs/00000000-0000-4000-8000-000000000000/join",
        owner_status=404,
        owner_code="run_not_found",
    ),
    # Writes: the owner's calls change the owner's objects, so they run last, in this order.
    # The thread waits for its consent here: neither an update the graph refuses nor a copy
    # changes it; a prune keeps its newest checkpoint (and the consent it waits on).
    Call(
        "POST",
        "/threads/{thread_id}/state",
        json={"values": {}, "as_node": "no_such_node"},
        owner_status=422,
        owner_code="invalid_update",
    ),
    Call("POST", "/threads/{thread_id}/copy", owner_status=409, owner_code="consent_pending"),
    Call("POST", "/threads/prune", json={"thread_ids": ["{thread_id}"], "strategy": "keep_latest"}),
    # Nothing of the owner's runs here (the run above ended waiting for its consent).
    Call("POST", "/runs/cancel", json={"thread_id": "{thread_id}", "status": "pending"}),
    Call("POST", "/v1/projects", json={"name": "Another project"}, owner_status=201),
    Call(
        "POST",
        "/v1/projects/{project_id}/notes",
        json={"title": "Mine now", "content": "x"},
        owner_status=201,
    ),
    Call("PUT", "/v1/notes/{note_id}", json={"version": 1, "content": "Rewritten"}),
    Call("POST", "/v1/threads/{thread_id}/cancel", owner_status=409, owner_code="no_active_run"),
    Call("POST", "/v1/threads/{thread_id}/retry", owner_status=409, owner_code="nothing_to_retry"),
    Call(
        "POST",
        "/v1/chat",
        json={"message": QUESTION, "thread_id": "{thread_id}"},
        owner_status=409,
        owner_code="consent_pending",
    ),
    Call("POST", "/v1/chat", json={"message": QUESTION, "project_id": "{project_id}"}),
    Call("POST", "/v1/chat", json={"message": QUESTION, "note_id": "{note_id}"}),
    Call(
        "POST",
        "/v1/chat",
        json={
            "thread_id": "{thread_id}",
            "resume": {"approval_id": "{approval_id}", "decision": "reject"},
        },
    ),
    Call(
        "POST",
        "/v1/approvals/{approval_id}/decision",
        url="/v1/approvals/{inbox_approval_id}/decision",
        json={"decision": "reject"},
        owner_status=202,
    ),
    Call("DELETE", "/v1/notes/{note_id}", owner_status=204),
    Call(
        "GET",
        "/threads/{thread_id}/runs/{run_id}/stream",
        url="/threads/{thread_id}/runs/00000000-0000-4000-8000-000000000000/stream",
        owner_status=404,
        owner_code="run_not_found",
    ),
    Call(
        "POST",
        "/threads/{thread_id}/runs/{run_id}/cancel",
        url="/threads/{thread_id}/runs/00000000-0000-4000-8000-000000000000/cancel",
        owner_status=409,
        owner_code="no_active_run",
    ),
    Call(
        "POST",
        "/threads/{thread_id}/runs/stream",
        json={"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": "x"}]}},
    ),
    Call(
        "POST",
        "/runs/stream",
        json={"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": "x"}]}},
    ),
    # AG-UI: a thread of the caller's own choosing (another's id is `thread_exists`, as the
    # LangGraph SDK's POST /threads says for an id a thread has: tests/integration/test_agui.py)
    Call(
        "POST",
        "/v1/agui/{graph}",
        url="/v1/agui/tutor",
        json={
            "threadId": "0b9e8c1e-5a57-4f3e-9a56-8d7c2f1e4b01",
            "runId": "matrix-run",
            "messages": [{"id": "m1", **QUESTION_PART}],
        },
    ),
    Call(
        "POST",
        "/runs/batch",
        json=[{"assistant_id": "tutor", "input": {"messages": [QUESTION_PART]}}],
    ),
    *(
        Call("POST", route, json={"assistant_id": "tutor", "input": {"messages": [QUESTION_PART]}})
        for route in (
            "/threads/{thread_id}/runs/wait",
            "/threads/{thread_id}/runs",
            "/runs/wait",
            "/runs",
        )
    ),
    Call(
        "POST",
        "/threads/{thread_id}/runs",
        json={
            "assistant_id": "tutor",
            "input": {"messages": [QUESTION_PART]},
            "multitask_strategy": "enqueue",
        },
    ),
    Call("POST", "/threads", json={"metadata": {"k": "v"}}),
    Call("POST", "/assistants", json={"graph_id": "tutor"}),
    Call("PATCH", "/assistants/{assistant_id}", json={"name": "Renamed"}),
    Call("POST", "/assistants/{assistant_id}/latest", json={"version": 1}),
    Call("PATCH", "/threads/{thread_id}", json={"metadata": {"k": "v"}}),
    # Crons: one on the owner's thread; searched and counted among the caller's own.
    Call(
        "POST",
        "/threads/{thread_id}/runs/crons",
        json={"assistant_id": "tutor", "schedule": "0 0 1 1 *", "input": {}},
    ),
    Call(
        "POST",
        "/runs/crons",
        json={"assistant_id": "tutor", "schedule": "0 0 1 1 *", "input": {"messages": []}},
    ),
    Call("POST", "/runs/crons/search", json={}),
    Call("POST", "/runs/crons/count", json={}),
    Call("PATCH", "/runs/crons/{cron_id}", json={"enabled": False}),
    Call("DELETE", "/runs/crons/{cron_id}", owner_status=204),
    # Last: the inbox thread, idle again once its consent was decided above.
    Call("DELETE", "/threads/{thread_id}", url="/threads/{inbox_thread_id}", owner_status=204),
    Call("DELETE", "/assistants/{assistant_id}", owner_status=204),
    # The Store: the caller's tenant's items, named by namespace and key (no id of the owner's).
    Call(
        "PUT", "/store/items", json={"namespace": ["n"], "key": "k", "value": {}}, owner_status=204
    ),
    Call("GET", "/store/items", params={"namespace": "n", "key": "k"}),
    Call("POST", "/store/items/search", json={"namespace_prefix": ["n"]}),
    Call("POST", "/store/namespaces", json={}),
    Call("DELETE", "/store/items", json={"namespace": ["n"], "key": "k"}, owner_status=204),
)

PUBLIC_OPERATIONS = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),  # open unless CONSENTRY_METRICS_TOKEN is set (test_metrics.py)
    ("GET", "/info"),  # the LangGraph Agent Server's: what the server is (test_sdk_drop_in.py)
    ("GET", "/ok"),
}
"""The operations of the OpenAPI document that need no API key."""

PUBLIC_UNDOCUMENTED = {
    ("GET", "/"): "/",
    ("GET", "/favicon.ico"): "/favicon.ico",
    ("GET", "/openapi.json"): "/openapi.json",
    ("GET", "/docs"): "/docs",
    ("GET", "/docs/swagger-initializer.js"): "/docs/swagger-initializer.js",
    ("*", "/docs/assets"): "/docs/assets/swagger-ui.css",
    ("*", "/web"): "/web/app.js",
}
"""The routes served outside the OpenAPI document (all public: the web app and the API's own
description), with a URL to try each."""

WRONG_KEYS = (
    {"Authorization": "Bearer not-a-key"},
    {"Authorization": "Bearer ka-and-more"},
    {"Authorization": "Basic ka"},
    {"Authorization": "ka"},
    {"x-api-key": "not-a-key"},  # the LangGraph SDK's header
    {"x-api-key": "ka-and-more"},
    {"x-api-key": "Bearer ka"},
)

SDK_STRANGER = {"acme:bob (x-api-key)": {"x-api-key": "kb"}}
"""Another principal, keyed as the LangGraph SDK sends a key."""


@pytest_asyncio.fixture
async def keyed_client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    # Every run-starting route is tried by the owner and by every stranger: more messages in a
    # moment than the default burst allows one principal.
    async with open_client(api_keys=API_KEYS, rate_limit_messages_burst=60) as client:
        yield client


def _operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    }


def _served_routes(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path) of every route the app serves, ``*`` for a mount. FastAPI may keep an
    included router as one entry (``original_router``, with the prefix of the include)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            include_prefix: str = route.include_context.prefix  # type: ignore[attr-defined]
            yield from _served_routes(included.routes, prefix + include_prefix)
            continue
        methods = getattr(route, "methods", None)
        # a route's path as documented (`{thread_id}`, not `{thread_id:sdk_id}`); a mount's own
        named = "path_format" if methods is not None else "path"
        path = prefix + str(getattr(route, named, getattr(route, "path", "")))
        if methods is None:
            yield "*", path
        for method in sorted(methods or ()):
            if method != "HEAD":
                yield method, path


def _unknown_like(value: str) -> str:
    """A fresh id of the same shape as ``value``: an id nobody owns."""
    return str(uuid4()) if "-" in value else uuid4().hex


def _named(body: bytes, ids: Mapping[str, str]) -> bytes:
    for name, value in ids.items():
        body = body.replace(value.encode(), f"<{name}>".encode())
    return body


def _code(response: httpx.Response) -> str | None:
    """The error's code; None for an answer that is not an error body."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return None
    error = response.json().get("error") if response.status_code >= 400 else None
    return str(error["code"]) if isinstance(error, dict) else None


def _summary(response: httpx.Response) -> str:
    return f"{response.status_code} {response.text[:300]}"


def test_the_matrix_has_a_row_for_every_route_and_only_the_expected_routes_are_public(
    tmp_path: Path,
) -> None:
    app: FastAPI = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}", api_keys=API_KEYS)
    )
    operations = _operations(app.openapi())

    documented = set(operations)
    with_rows = {(call.method, call.route) for call in CALLS}
    undocumented = set(_served_routes(app.routes)) - documented
    without_security = {route for route, op in operations.items() if not op.get("security")}

    assert sorted(documented - PUBLIC_OPERATIONS - with_rows) == [], "no row in CALLS"
    assert sorted(with_rows - documented) == [], "rows of CALLS for routes that do not exist"
    assert sorted(with_rows & PUBLIC_OPERATIONS) == [], "public, yet in CALLS"
    assert without_security <= PUBLIC_OPERATIONS, "a keyed route documents no security"
    assert undocumented == set(PUBLIC_UNDOCUMENTED)


async def test_every_route_refuses_missing_keys_and_answers_another_principal_like_an_unknown_id(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    documented = set(_operations((await client.get("/openapi.json")).json()))
    owned = await build_owned_objects(client, OWNER)
    for headers in STRANGERS.values():  # their default projects exist before the snapshot
        assert (await client.get("/v1/projects", headers=headers)).status_code == 200
    owner_ids = owned.ids()
    seen = {"first_seq": str(owned.first_seq)}
    unknown_ids = {name: _unknown_like(value) for name, value in owner_ids.items()}
    threads = (owned.thread_id, owned.inbox_thread_id)
    state_before = await visible_state(client, OWNER, owned)
    rows_before = await row_counts(client)
    checkpoints_before = await checkpoint_ids(client, *threads)
    failures: list[str] = []
    with_rows = {(call.method, call.route) for call in CALLS}
    for method, path in sorted(documented - PUBLIC_OPERATIONS - with_rows):
        failures.append(f"{method} {path}: no row in CALLS, so not checked")
    calls = [call for call in CALLS if (call.method, call.route) in documented]

    for call in calls:
        # (a) and (b): no key, or a key that is not one.
        anonymous = await call.send(client, {**owner_ids, **seen}, {})
        anonymous_unknown = await call.send(client, {**unknown_ids, **seen}, {})
        if (anonymous.status_code, _code(anonymous)) != (401, "unauthorized"):
            failures.append(f"{call} without a key: {_summary(anonymous)}")
        if anonymous.content != anonymous_unknown.content:
            failures.append(f"{call} without a key: the owner's ids answer unlike unknown ones")
        for wrong in WRONG_KEYS:
            refused = await call.send(client, {**owner_ids, **seen}, wrong)
            if (refused.status_code, _code(refused)) != (401, "unauthorized"):
                failures.append(f"{call} with {wrong}: {_summary(refused)}")

        # (d): another principal, on the owner's objects.
        for who, headers in {**STRANGERS, **SDK_STRANGER}.items():
            if not call.names():
                if call.method != "GET":
                    continue  # creating a project, say: the caller's own business
                listed = await call.send(client, seen, headers)
                leaked = [name for name, value in owner_ids.items() if value in listed.text]
                if listed.status_code != 200 or leaked:
                    failures.append(f"{call} as {who}: {leaked} in {_summary(listed)}")
                continue
            theirs = await call.send(client, {**owner_ids, **seen}, headers)
            missing = await call.send(client, {**unknown_ids, **seen}, headers)
            if not (
                theirs.status_code == missing.status_code == 404
                and theirs.headers["content-type"] == missing.headers["content-type"]
                and _named(theirs.content, owner_ids) == _named(missing.content, unknown_ids)
            ):
                failures.append(
                    f"{call} as {who}: the owner's ids {_summary(theirs)}; "
                    f"unknown ids {_summary(missing)}"
                )

    if (state := await visible_state(client, OWNER, owned)) != state_before:
        changed = sorted(url for url in state if state[url] != state_before[url])
        failures.append(f"the owner's visible state changed: {changed}")
    if (rows := await row_counts(client)) != rows_before:
        failures.append(f"rows changed: {rows_before} -> {rows}")
    if (checkpoints := await checkpoint_ids(client, *threads)) != checkpoints_before:
        failures.append(f"checkpoints changed: {checkpoints_before} -> {checkpoints}")

    # (c): the owner's key reaches the owner's objects (in table order: writes last).
    for call in calls:
        mine = await call.send(client, {**owner_ids, **seen}, OWNER)
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        if (mine.status_code, _code(mine)) != (call.owner_status, call.owner_code):
            failures.append(
                f"{call} as the owner: expected {call.owner_status} {call.owner_code}, "
                f"{_summary(mine)}"
            )

    # The public routes answer anybody, and mention nothing of the owner's.
    public_urls = [path for _, path in sorted(PUBLIC_OPERATIONS & documented)]
    for url in public_urls + list(PUBLIC_UNDOCUMENTED.values()):
        for headers in ({}, WRONG_KEYS[0]):
            response = await client.get(url, headers=headers)
            leaked = [name for name, value in owner_ids.items() if value in response.text]
            if response.status_code != 200 or leaked:
                failures.append(f"GET {url} (public) with {headers}: {leaked} {_summary(response)}")

    assert failures == [], "\n".join(failures)


async def test_a_request_without_a_valid_key_is_refused_before_its_body_is_read(
    keyed_client: httpx.AsyncClient,
) -> None:
    """Authentication is the first gate: a body that is not even JSON gets 401 too, not a
    complaint about the body (nobody without a key learns how a body is checked)."""
    client = keyed_client
    first_rows = {(call.method, call.route): call for call in reversed(CALLS) if call.json}
    nobody = {
        name: str(uuid4())
        for name in ("project_id", "note_id", "thread_id", "assistant_id", "cron_id")
    }
    nobody |= {"approval_id": uuid4().hex, "inbox_approval_id": uuid4().hex}
    answers: dict[str, tuple[int, str | None]] = {}

    for call in first_rows.values():
        url = _PLACEHOLDER.sub(lambda m: nobody[m.group(1)], call.url or call.route)
        for headers in ({}, *WRONG_KEYS):
            response = await client.request(
                call.method,
                url,
                content=b'{"not": json',
                headers={"Content-Type": "application/json", **headers},
            )
            answers[f"{call.method} {call.route} with {headers}"] = (
                response.status_code,
                _code(response),
            )

    assert answers == {what: (401, "unauthorized") for what in answers}
    assert len(answers) == len(first_rows) * (1 + len(WRONG_KEYS)) >= 5 * 5


async def test_another_principal_cannot_join_or_replay_a_run_in_progress(
    open_client: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("A held answer.")
    async with open_client(api_keys=API_KEYS, **stub.app_settings()) as client:
        started = asyncio.create_task(
            client.post("/v1/chat", json={"message": "What is x?"}, headers=OWNER)
        )
        await asyncio.wait_for(stub.holding.wait(), WAIT_SECONDS)
        (thread,) = (await client.get("/v1/threads", headers=OWNER)).json()["threads"]
        thread_id, unknown = thread["thread_id"], str(uuid4())
        answers: list[tuple[str, str | None, int, bytes, bytes]] = []

        for who, headers in STRANGERS.items():
            for last_event_id in (None, "1"):
                resume = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
                theirs, missing = [
                    await asyncio.wait_for(
                        client.get(f"/v1/threads/{tid}/stream", headers={**headers, **resume}),
                        WAIT_SECONDS,
                    )
                    for tid in (thread_id, unknown)
                ]
                answers.append(
                    (
                        who,
                        last_event_id,
                        theirs.status_code,
                        theirs.content.replace(thread_id.encode(), b"<id>"),
                        missing.content.replace(unknown.encode(), b"<id>"),
                    )
                )
        stub.release()
        original = parse_events((await started).text)
        joined = parse_events(
            (await client.get(f"/v1/threads/{thread_id}/stream", headers=OWNER)).text
        )
        their_threads = [
            (await client.get("/v1/threads", headers=headers)).json()["threads"]
            for headers in STRANGERS.values()
        ]

    assert [(who, last, status, body) for who, last, status, body, _ in answers] == [
        (who, last, 404, missing) for who, last, _, _, missing in answers
    ]
    assert b'"thread_not_found"' in answers[0][3]
    assert [e.model_dump() for e in joined] == [
        e.model_dump() for e in original if e.type != "token"
    ]
    assert original[-1].type == "final"
    assert their_threads == [[], []]
