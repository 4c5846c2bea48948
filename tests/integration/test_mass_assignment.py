"""Mass assignment: a request body carrying fields its schema does not have (who owns the object,
which checkpoint or durability to run with, which version, run or thread it is) is refused with
422 ``request_invalid`` naming the field, and changes nothing: neither the sender's objects nor
the objects those fields name, which stay their owner's alone.

Every request body of the OpenAPI document is covered: each schema forbids fields of its own
(``additionalProperties: false``), and ``BODIES`` says how to send each; a body route without a
row fails here. The free-form ``edited`` of a decision is checked by the consent kind's edit
model, which refuses fields of its own too (422 ``invalid_edit``), and a graph's ``input`` by the
graph's input schema. Query parameters and headers
naming another principal are ignored.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio

from consentry.app import create_app
from consentry.settings import Settings
from tests.tenancy import (
    API_KEYS,
    OTHER_TENANT,
    OWNER,
    OwnedObjects,
    build_owned_objects,
    checkpoint_ids,
    row_counts,
    visible_state,
)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
EXTRA_FORBIDDEN = "Extra inputs are not permitted"


@dataclass(frozen=True)
class Body:
    """A valid body for a route (its path as in the OpenAPI document); ``{name}`` stands for one
    of the sender's ids. ``inside`` is where in the body a model of its own sits (``resume``)."""

    method: str
    route: str
    json: Any
    url: str | None = None
    inside: tuple[str | int, ...] = ()

    def filled(self, ids: Mapping[str, str], *, extra: Mapping[str, Any]) -> tuple[str, Any]:
        def fill(template: Any) -> Any:
            if isinstance(template, str):
                return _PLACEHOLDER.sub(lambda m: ids[m.group(1)], template)
            if isinstance(template, dict):
                return {key: fill(value) for key, value in template.items()}
            if isinstance(template, list):
                return [fill(value) for value in template]
            return template

        body = fill(self.json)
        target = body
        for step in self.inside:
            target = target[step]
        target.update(extra)
        return fill(self.url or self.route), body

    def __str__(self) -> str:
        return f"{self.method} {self.url or self.route} {self.json!r} (extra at {self.inside})"


BODIES: tuple[Body, ...] = (
    Body("POST", "/v1/chat", {"message": "What is RAG?"}),
    Body(
        "POST",
        "/v1/chat",
        {
            "thread_id": "{thread_id}",
            "resume": {"approval_id": "{approval_id}", "decision": "approve"},
        },
        inside=("resume",),
    ),
    Body(
        "POST",
        "/v1/chat",
        {
            "thread_id": "{thread_id}",
            "resume": [{"approval_id": "{approval_id}", "decision": "approve"}],
        },
        inside=("resume", 0),
    ),
    Body(
        "POST",
        "/v1/approvals/{approval_id}/decision",
        {"decision": "approve"},
        url="/v1/approvals/{inbox_approval_id}/decision",
    ),
    Body("POST", "/v1/projects", {"name": "Another project"}),
    Body("POST", "/v1/projects/{project_id}/notes", {"title": "Mine", "content": "x"}),
    Body("PUT", "/v1/notes/{note_id}", {"version": 1, "content": "Rewritten"}),
    Body("POST", "/assistants/search", {"graph_id": "tutor"}),
    Body("POST", "/assistants/count", {"graph_id": "tutor"}),
    Body("POST", "/assistants", {"graph_id": "tutor", "name": "Mine"}),
    Body("PATCH", "/assistants/{assistant_id}", {"name": "Renamed"}),
    Body("POST", "/assistants/{assistant_id}/versions", {"limit": 2}),
    Body("POST", "/assistants/{assistant_id}/latest", {"version": 1}),
    Body("POST", "/threads", {"metadata": {"topic": "rag"}}),
    Body("POST", "/threads/search", {"status": "interrupted"}),
    Body("POST", "/threads/count", {"status": "interrupted"}),
    Body("POST", "/threads/{thread_id}/state/checkpoint", {"checkpoint": {}}),
    Body("POST", "/threads/{thread_id}/state", {"values": {}, "as_node": "no_such_node"}),
    Body("POST", "/threads/prune", {"thread_ids": ["{thread_id}"], "strategy": "keep_latest"}),
    Body("PATCH", "/threads/{thread_id}", {"metadata": {"topic": "rag"}}),
    Body("POST", "/threads/{thread_id}/history", {"limit": 2}),
    Body(
        "POST",
        "/runs/stream",
        {"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": "Hi"}]}},
    ),
    *(
        Body(
            "POST",
            route,
            {"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": "Hi"}]}},
        )
        for route in ("/runs", "/runs/wait", "/threads/{thread_id}/runs/wait")
    ),
    Body(
        "POST",
        "/runs/batch",
        [{"assistant_id": "tutor", "input": {"messages": [{"role": "user", "content": "Hi"}]}}],
        inside=(0,),
    ),
    Body("POST", "/runs/cancel", {"thread_id": "{thread_id}", "status": "pending"}),
    Body(
        "POST",
        "/threads/{thread_id}/runs/crons",
        {"assistant_id": "tutor", "schedule": "0 0 1 1 *", "input": {}},
    ),
    Body("POST", "/runs/crons", {"assistant_id": "tutor", "schedule": "0 0 1 1 *", "input": {}}),
    Body("PATCH", "/runs/crons/{cron_id}", {"enabled": False}),
    Body("POST", "/runs/crons/search", {"enabled": True}),
    Body("POST", "/runs/crons/count", {"assistant_id": "tutor"}),
    Body("PUT", "/store/items", {"namespace": ["n"], "key": "k", "value": {"a": 1}}),
    Body("DELETE", "/store/items", {"namespace": ["n"], "key": "k"}),
    Body("POST", "/store/items/search", {"namespace_prefix": ["n"]}),
    Body("POST", "/store/namespaces", {"prefix": ["n"]}),
    Body(
        "POST",
        "/threads/{thread_id}/runs",
        {"assistant_id": "tutor", "command": {"resume": {"decision": "approve"}}},
        inside=("command",),
    ),
    Body(
        "POST",
        "/threads/{thread_id}/runs/stream",
        {"assistant_id": "tutor", "command": {"resume": {"decision": "approve"}}},
        inside=("command",),
    ),
)

OPEN_PROTOCOL_BODIES = {("POST", "/v1/agui/{graph}")}
"""Bodies whose models are another protocol's, used as published: AG-UI's ``RunAgentInput``
(``ag-ui-protocol``) keeps unknown fields by design, so that a newer client is not refused. The
face reads the fields ``docs/ag-ui.md`` names and nothing else: a field of its own assigns
nothing (``tests/integration/test_agui.py`` sends the hostile fields below and checks)."""

FREE_FORM = {
    "ResumeDecision.edited",
    "DecisionRequest.edited",
    "ChatRequest.input",
    "ChatRequest.context",
    "ChatRequest.configurable",
    "ThreadStateUpdateRequest.values",
    "AssistantSearchRequest.metadata",
    "AssistantCountRequest.metadata",
    "AssistantVersionsRequest.metadata",
    "AssistantCreateRequest.config",
    "AssistantCreateRequest.context",
    "AssistantCreateRequest.metadata",
    "AssistantUpdateRequest.config",
    "AssistantUpdateRequest.context",
    "AssistantUpdateRequest.metadata",
    "ThreadCreateRequest.metadata",
    "ThreadUpdateRequest.metadata",
    "StorePutRequest.value",
    "StoreSearchRequest.filter",
    "ThreadSearchRequest.metadata",
    "ThreadCountRequest.metadata",
    "ThreadHistoryRequest.metadata",
    "RunCreate.input",
    "RunCreate.metadata",
    "RunCreate.config",
    "RunCreate.context",
    "CronCreate.input",
    "CronCreate.metadata",
    "CronCreate.config",
    "CronCreate.context",
    "CronUpdate.input",
    "CronUpdate.metadata",
    "CronUpdate.config",
    "CronUpdate.context",
    "CronSearchRequest.metadata",
    "CronCountRequest.metadata",
}
"""The only objects of a request body that take any field: a person's edit, which the consent
kind's edit model checks, a graph's own input, which the graph's input schema checks, and the
LangGraph SDK face's metadata (the client's own keys, stored and searched as given), and a run's
`context` (checked against the graph's ``context_schema``) and `configurable` / `config` (any
values but the server's own keys: ``invalid_config``; another key of `config`:
``unsupported_field``)."""


def hostile_fields(victim: OwnedObjects) -> dict[str, Any]:
    """Fields a client might send to take over objects or steer the run: ownership, the
    checkpoint and durability of LangGraph's config, versions, ids of somebody else's objects."""
    return {
        "owner": "globex/alice",
        "principal": {"tenant": "globex", "user": "alice"},
        "tenant": "globex",
        "tenant_id": "globex",
        "user": "alice",
        "user_id": "alice",
        "created_by": "globex/alice",
        "decided_by": "policy",
        "author": "assistant",
        "checkpoint_id": "1f0a0000-0000-6000-8000-000000000000",
        "checkpoint_ns": "elsewhere",
        "configurable": {"thread_id": victim.thread_id, "checkpoint_id": "1f0a"},
        "durability": "exit",
        "thread_ts": "1f0a0000-0000-6000-8000-000000000000",
        "version": 99,
        "run_id": "00000000-0000-4000-8000-000000000000",
        "id": victim.note_id,
        "thread_id": victim.thread_id,
        "project_id": victim.project_id,
        "note_id": victim.note_id,
        "approval_id": victim.approval_id,
        "status": "approved",
        "is_default": True,
        "created_at": "2020-01-01T00:00:00Z",
    }


@pytest_asyncio.fixture
async def keyed_client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(api_keys=API_KEYS) as client:
        yield client


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    ref = schema.get("$ref")
    if ref is None:
        return None, schema
    name = ref.rsplit("/", 1)[-1]
    return name, spec["components"]["schemas"][name]


def _objects(
    spec: dict[str, Any], schema: dict[str, Any], where: str, seen: frozenset[str] = frozenset()
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema reachable from ``schema``, with where it is (``Model.field``)."""
    name, schema = _resolve(spec, schema)
    if name is not None:
        if name in seen:
            return
        seen, where = seen | {name}, name
    if schema.get("type") == "object" or "properties" in schema:
        yield where, schema
    # The `oneOf`/`anyOf` beside an object's properties (ChatRequest's) are cases of that same
    # object, which narrow its properties: no objects of their own.
    for key in () if "properties" in schema else ("anyOf", "oneOf", "allOf"):
        for variant in schema.get(key, []):
            yield from _objects(spec, variant, where, seen)
    if "items" in schema:
        yield from _objects(spec, schema["items"], where, seen)
    for field, sub in schema.get("properties", {}).items():
        yield from _objects(spec, sub, f"{where}.{field}", seen)


def _body_schemas(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation["requestBody"]["content"]["application/json"]["schema"]
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    }


def _fields_at(
    spec: dict[str, Any], schema: dict[str, Any], inside: tuple[str | int, ...]
) -> set[str]:
    """The fields the schema allows where ``inside`` points."""
    schemas = [schema]
    for step in inside:
        found: list[dict[str, Any]] = []
        for candidate in schemas:
            for _, obj in _objects(spec, candidate, ""):
                if isinstance(step, str) and step in obj.get("properties", {}):
                    found.append(obj["properties"][step])
            if isinstance(step, int):
                found.append(candidate)
        schemas = found
    return {
        field
        for s in schemas
        for _, obj in _objects(spec, s, "")
        for field in obj.get("properties", {})
    }


def _without_union_tags(loc: list[Any]) -> list[Any]:
    """Pydantic names the member of a union it tried (``function-after[...]``): drop those."""
    return [part for part in loc if not (isinstance(part, str) and "[" in part)]


def _refused_for(response: httpx.Response, loc: list[Any]) -> bool:
    """422 ``request_invalid`` whose one complaint is the extra field at ``loc`` (inside a union,
    beside the other members' mismatch at the union itself)."""
    error = response.json().get("error", {}) if response.status_code == 422 else {}
    errors = [
        (e["type"], _without_union_tags(e["loc"]), e["msg"])
        for e in error.get("details", {}).get("errors", [])
    ]
    extra = ("extra_forbidden", loc, EXTRA_FORBIDDEN)
    union = [e for e in errors if e != extra and e[1] == loc[: len(e[1])] and len(e[1]) == 2]
    return error.get("code") == "request_invalid" and sorted(errors) == sorted([extra, *union])


def test_every_request_body_forbids_fields_of_its_own_and_has_a_row_here(tmp_path: Path) -> None:
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}", api_keys=API_KEYS)
    )
    spec = app.openapi()
    bodies = {
        route: schema
        for route, schema in _body_schemas(spec).items()
        if route not in OPEN_PROTOCOL_BODIES
    }

    objects = [obj for schema in bodies.values() for obj in _objects(spec, schema, "body")]
    open_models = sorted(
        where
        for where, obj in objects
        if "properties" in obj and obj.get("additionalProperties") is not False
    )
    free_form = {where for where, obj in objects if "properties" not in obj}
    with_rows = {(body.method, body.route) for body in BODIES}

    assert open_models == []
    assert free_form == FREE_FORM
    assert sorted(set(bodies) - with_rows) == [], "body routes without a row in BODIES"
    assert sorted(with_rows - set(bodies)) == [], "rows of BODIES for routes without a body"


async def test_a_body_with_a_field_of_its_own_is_refused_and_changes_nothing(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    spec = (await client.get("/openapi.json")).json()
    bodies = _body_schemas(spec)
    mine = await build_owned_objects(client, OWNER)
    theirs = await build_owned_objects(client, OTHER_TENANT)
    hostile = hostile_fields(theirs)
    threads = (mine.thread_id, mine.inbox_thread_id, theirs.thread_id, theirs.inbox_thread_id)
    before = (
        await visible_state(client, OWNER, mine),
        await visible_state(client, OTHER_TENANT, theirs),
        await row_counts(client),
        await checkpoint_ids(client, *threads),
    )
    failures: list[str] = []
    tried = 0

    for body in BODIES:
        if (body.method, body.route) not in bodies:
            continue
        allowed = _fields_at(spec, bodies[body.method, body.route], body.inside)
        assert allowed, body
        for field, value in hostile.items():
            if field in allowed:
                continue
            url, json = body.filled(mine.ids(), extra={field: value})
            response = await client.request(body.method, url, json=json, headers=OWNER)
            tried += 1
            if not _refused_for(response, ["body", *body.inside, field]):
                failures.append(f"{body} + {field}: {response.status_code} {response.text[:300]}")

    after = (
        await visible_state(client, OWNER, mine),
        await visible_state(client, OTHER_TENANT, theirs),
        await row_counts(client),
        await checkpoint_ids(client, *threads),
    )
    for what, old, new in zip(
        ("the sender's state", "the other tenant's state", "row counts", "checkpoints"),
        before,
        after,
        strict=True,
    ):
        if old != new:
            failures.append(f"{what} changed")
    assert tried >= len(BODIES) * 10
    assert failures == [], "\n".join(failures)


async def test_an_edit_with_fields_of_its_own_is_refused_and_the_consent_stays_pending(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    mine = await build_owned_objects(client, OWNER)
    theirs = await build_owned_objects(client, OTHER_TENANT)
    before = (await visible_state(client, OWNER, mine), await row_counts(client))
    routes: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
        (
            "/v1/chat",
            lambda edit: {
                "thread_id": mine.thread_id,
                "resume": {"approval_id": mine.approval_id, "decision": "edit", "edited": edit},
            },
        ),
        (
            f"/v1/approvals/{mine.inbox_approval_id}/decision",
            lambda edit: {"decision": "edit", "edited": edit},
        ),
    ]
    answers: list[tuple[str, str, int, Any]] = []

    for url, body in routes:
        for field, value in hostile_fields(theirs).items():
            edit = {"content": "Mine now", field: value}
            response = await client.post(url, json=body(edit), headers=OWNER)
            is_json = response.headers["content-type"] == "application/json"
            answers.append(
                (url, field, response.status_code, response.json() if is_json else response.text)
            )

    assert answers == [
        (
            url,
            field,
            422,
            {
                "error": {
                    "code": "invalid_edit",
                    "message": "The edit is not valid; the consent is still pending.",
                    "details": {
                        "errors": [
                            {"type": "extra_forbidden", "loc": [field], "msg": EXTRA_FORBIDDEN}
                        ]
                    },
                }
            },
        )
        for url, _ in routes
        for field in hostile_fields(theirs)
    ]
    assert (await visible_state(client, OWNER, mine), await row_counts(client)) == before


async def test_query_parameters_and_headers_naming_another_principal_are_ignored(
    keyed_client: httpx.AsyncClient,
) -> None:
    client = keyed_client
    mine = await build_owned_objects(client, OWNER)
    await build_owned_objects(client, OTHER_TENANT)
    claims = {"tenant": "globex", "user": "alice", "owner": "globex/alice", "tenant_id": "globex"}
    headers = {
        "X-Tenant": "globex",
        "X-Tenant-Id": "globex",
        "X-User": "alice",
        "X-Consentry-Tenant": "globex",
        "X-Forwarded-User": "globex/alice",
        "Forwarded": "for=globex",
    }
    urls = ["/v1/projects", "/v1/threads", "/v1/approvals", f"/v1/notes/{mine.note_id}"]

    plain = [(await client.get(url, headers=OWNER)).json() for url in urls]
    claimed = [
        (await client.get(url, params=claims, headers={**OWNER, **headers})).json() for url in urls
    ]

    assert claimed == plain
    assert [t["thread_id"] for t in claimed[1]["threads"]] == [
        mine.inbox_thread_id,
        mine.thread_id,
    ]
