"""Webhooks through the real ``langgraph-sdk`` client (``webhook=`` on a run): each run's end is
posted once to a local receiver the test starts, with the run's record as ``runs.get`` reads it,
the thread's values (JSON-safe; none for a rolled-back run) and a delivery id; signed with the
secret over the delivery id and the body; retried after a 500 or a redirect (never followed) under
the same delivery id; given up past the retry window; not posted to a name that resolves to an
address the list does not take; a host outside the allow-list or a URL that is not one is refused
at the run's start with nothing run, and a queued run's when its turn comes (docs/webhooks.md)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Awaitable, Callable
from importlib.util import module_from_spec, spec_from_file_location
from typing import Any, Literal
from uuid import NAMESPACE_URL, uuid5

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk.errors import UnprocessableEntityError

from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.webhooks import WebhookHosts
from consentry.storage.tables import webhook_deliveries
from tests.conftest import ManualClock
from tests.integration import gate_graph, unjsonable_state_graph
from tests.langgraph_client import parts, sdk_client
from tests.paths import DOCS
from tests.sse import parse_events
from tests.webhook_receiver import REDIRECT_PATH, Receiver, serve_receiver

SERVED = (
    f"city=consentry_graphs.examples.ask_city:graph,{gate_graph.SERVED},"
    f"{unjsonable_state_graph.SERVED}"
)
CITY = str(uuid5(NAMESPACE_URL, "city"))
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}
SECRET = "a shared secret of the receiver"


def _recipe() -> Any:
    """docs/examples/verify_webhook.py, the receiver's side as docs/webhooks.md gives it."""
    spec = spec_from_file_location("verify_webhook", DOCS / "examples" / "verify_webhook.py")
    assert spec is not None
    assert spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECIPE = _recipe()
RECORD_FIELDS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "multitask_strategy",
    "reason",
    "error_code",
)


async def _until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait for a state the sender reaches on its own (bounded: fails the test after 15 s)."""
    async with asyncio.timeout(15):
        while not await check():  # noqa: ASYNC110 - the outbox is observable in its table only
            await asyncio.sleep(0.02)


async def _deliveries(services: Any) -> list[dict[str, Any]]:
    async with services.db.read() as conn:
        rows = await conn.execute(
            sa.select(webhook_deliveries).order_by(webhook_deliveries.c.created_at)
        )
        return [dict(row._mapping) for row in rows]


async def _all_settled(services: Any, count: int) -> None:
    async def settled() -> bool:
        rows = await _deliveries(services)
        return len(rows) == count and all(row["status"] != "pending" for row in rows)

    await _until(settled)


def _attempts(services: Any) -> dict[str, float]:
    counted = {}
    for metric in services.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "consentry_webhook_attempts_total":
                counted[sample.labels["outcome"]] = sample.value
    return counted


async def test_each_run_end_is_posted_once_with_its_record_its_values_and_a_delivery_id(
    open_live: Any,
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        created = await sdk.runs.create(
            None, "city", input=PLAN, metadata={"origin": "cli"}, webhook=receiver.url
        )
        thread_id = created["thread_id"]
        (asked,) = await receiver.wait_for(1)
        asked_run = await sdk.runs.get(thread_id, created["run_id"])

        answered = await sdk.runs.wait(
            thread_id, "city", command={"resume": "Lisbon"}, webhook=receiver.url
        )
        _, done = await receiver.wait_for(2)
        runs = await sdk.runs.list(thread_id)
        await _all_settled(services, 2)
        rows = await _deliveries(services)

    assert {key: asked.json[key] for key in RECORD_FIELDS} == {
        key: asked_run[key] for key in RECORD_FIELDS
    }
    assert (asked.json["status"], asked.json["reason"]) == ("interrupted", "interrupted")
    assert (asked.json["assistant_id"], asked.json["metadata"]) == (CITY, {"origin": "cli"})
    assert asked.json["values"]["messages"][0]["content"] == "Plan a trip"
    assert (asked.json["run_started_at"], asked.json["run_ended_at"]) == (
        asked_run["created_at"],
        asked_run["updated_at"],
    )
    assert asked.json["error"] is None
    assert "webhook_sent_at" in asked.json
    finished = next(run for run in runs if run["run_id"] == done.json["run_id"])
    assert {key: done.json[key] for key in RECORD_FIELDS} == {
        key: finished[key] for key in RECORD_FIELDS
    }
    assert (done.json["status"], done.json["reason"]) == ("success", "completed")
    assert done.json["values"] == answered  # the state `runs.wait` answers with
    assert (asked.path, asked.headers["content-type"]) == ("/hook", "application/json")
    assert "x-consentry-signature" not in asked.headers  # (no secret set)
    assert [post.headers["x-consentry-delivery"] for post in receiver.posts] == [
        row["id"] for row in rows
    ]
    assert [(row["status"], row["attempts"], row["run_id"]) for row in rows] == [
        ("delivered", 1, created["run_id"]),
        ("delivered", 1, done.json["run_id"]),
    ]
    assert [row["run_values"] for row in rows] == [None, None]  # dropped once delivered
    assert len(receiver.posts) == 2


async def test_a_post_is_signed_with_the_secret_over_its_timestamp_delivery_id_and_body(
    open_live: Any,
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED, webhook_secret=SECRET) as (client, _),
        sdk_client(client) as sdk,
    ):
        await parts(sdk.runs.stream(None, "city", input=PLAN, webhook=receiver.url))
        (post,) = await receiver.wait_for(1)

    timestamp = post.headers["x-consentry-timestamp"]
    delivery_id = post.headers["x-consentry-delivery"]
    signed = f"{timestamp}.{delivery_id}.".encode() + post.body
    expected = hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    assert post.headers["x-consentry-signature"] == f"sha256={expected}"
    # The recipe of docs/webhooks.md (the manual clock's time is when it was sent).
    sent = float(timestamp)
    headers = post.headers
    assert RECIPE.verify_post(SECRET, headers, post.body, now=sent + 10)
    assert not RECIPE.verify_post("another shared secret", headers, post.body, now=sent)
    assert not RECIPE.verify_post(SECRET, headers, post.body + b" ", now=sent)
    assert not RECIPE.verify_post(SECRET, headers, post.body, now=sent + 301)
    another_id = headers | {"x-consentry-delivery": "another-delivery"}
    assert not RECIPE.verify_post(SECRET, another_id, post.body, now=sent)
    arabic_digits = "".join(chr(0x0660 + int(d)) for d in timestamp)  # str.isdigit() says yes
    assert not RECIPE.verify_post(
        SECRET, headers | {"x-consentry-timestamp": arabic_digits}, post.body, now=sent
    )
    not_ascii = headers | {"x-consentry-signature": "sha256=é" + expected[1:]}
    assert not RECIPE.verify_post(SECRET, not_ascii, post.body, now=sent)


async def _after_attempt(services: Any, receiver: Receiver, count: int) -> None:
    """Once attempt ``count`` has arrived and its outcome is recorded (its lease let go)."""
    await receiver.wait_for(count)

    async def recorded() -> bool:
        (row,) = await _deliveries(services)
        return row["attempts"] == count and row["lease_owner"] is None

    await _until(recorded)


async def test_a_post_answered_500_is_retried_later_under_the_same_delivery_id(
    open_live: Any, clock: ManualClock
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        receiver.statuses = [500, 503]
        before = _attempts(services)
        await sdk.runs.wait(None, "city", input=PLAN, webhook=receiver.url)
        await _after_attempt(services, receiver, 1)
        (waiting,) = await _deliveries(services)
        for attempt in (2, 3):
            clock.advance(seconds=2 ** (attempt - 1))  # the backoff: 1 s, then 2 s
            services.webhooks.wake()
            await _after_attempt(services, receiver, attempt)
        (row,) = await _deliveries(services)
        after = _attempts(services)

    assert [post.status for post in receiver.posts] == [500, 503, 200]
    assert {post.headers["x-consentry-delivery"] for post in receiver.posts} == {row["id"]}
    assert len({post.json["webhook_sent_at"] for post in receiver.posts}) == 3
    assert (waiting["status"], waiting["last_error"]) == ("pending", "HTTP 500")
    assert (row["status"], row["attempts"], row["last_error"]) == ("delivered", 3, None)
    assert {k: after[k] - before.get(k, 0) for k in after} == {"retry": 2, "delivered": 1}


async def test_a_post_is_given_up_once_its_next_attempt_falls_past_the_retry_window(
    open_live: Any, clock: ManualClock
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED, webhook_retry_seconds=2.5) as (client, services),
        sdk_client(client) as sdk,
    ):
        receiver.statuses = [500] * 3
        await sdk.runs.wait(None, "city", input=PLAN, webhook=receiver.url)
        await _after_attempt(services, receiver, 1)
        clock.advance(seconds=1)  # the second attempt, due 1 s later, is inside the window
        services.webhooks.wake()
        await _after_attempt(services, receiver, 2)
        (row,) = await _deliveries(services)
        attempts = _attempts(services)

    # The third would come 2 s after the second: past 2.5 s after the run's end.
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 2, "HTTP 500")
    assert len(receiver.posts) == 2
    assert (attempts["retry"], attempts["gave_up"]) == (1, 1)


@pytest.mark.parametrize(
    ("action", "values", "found"),
    [
        ("interrupt", {"messages": []}, 200),
        # What it wrote is undone and the run deleted: the end of a deleted run, no values.
        ("rollback", None, 404),
    ],
)
async def test_a_run_cancelled_through_the_sdk_posts_its_end_once(
    open_live: Any,
    gate: asyncio.Event,
    action: Literal["interrupt", "rollback"],
    values: dict[str, Any] | None,
    found: int,
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        thread = await sdk.threads.create(graph_id="gate")
        run = await sdk.runs.create(
            thread["thread_id"], "gate", input={"messages": []}, webhook=receiver.url
        )
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        await sdk.runs.cancel(thread["thread_id"], run["run_id"], wait=True, action=action)
        (post,) = await receiver.wait_for(1)
        await _all_settled(services, 1)  # (a second post would have come before)
        record = await client.get(f"/threads/{thread['thread_id']}/runs/{run['run_id']}")

    assert (post.json["run_id"], post.json["status"], post.json["reason"]) == (
        run["run_id"],
        "interrupted",
        "cancelled",
    )
    assert (post.json["values"], record.status_code) == (values, found)
    assert len(receiver.posts) == 1


async def test_a_nan_or_an_infinity_in_the_state_is_posted_as_null_and_the_run_ends_normally(
    open_live: Any,
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        run = await sdk.runs.create(None, "scores", input=PLAN, webhook=receiver.url)
        (post,) = await receiver.wait_for(1)
        await _all_settled(services, 1)
        ended = await sdk.runs.get(run["thread_id"], run["run_id"])
        (row,) = await _deliveries(services)

    assert (ended["status"], post.json["status"], post.json["reason"]) == (
        "success",
        "success",
        "completed",
    )
    assert (post.json["values"]["score"], post.json["values"]["bounds"]) == (None, [None, None])
    assert [m["content"] for m in post.json["values"]["messages"]] == ["Plan a trip", "Scored."]
    assert (row["status"], row["attempts"]) == ("delivered", 1)


async def test_a_redirect_is_not_followed_and_the_post_is_retried(
    open_live: Any, clock: ManualClock
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        receiver.statuses = [307]
        await sdk.runs.wait(None, "city", input=PLAN, webhook=receiver.url)
        await _after_attempt(services, receiver, 1)
        (waiting,) = await _deliveries(services)
        clock.advance(seconds=1)
        services.webhooks.wake()
        await _after_attempt(services, receiver, 2)
        (row,) = await _deliveries(services)

    assert [(post.path, post.status) for post in receiver.posts] == [("/hook", 307), ("/hook", 200)]
    assert REDIRECT_PATH not in {post.path for post in receiver.posts}
    assert (waiting["status"], waiting["last_error"]) == ("pending", "HTTP 307")
    assert (row["status"], row["attempts"]) == ("delivered", 2)


async def test_an_allowed_name_that_resolves_to_an_address_the_list_does_not_take_is_not_posted(
    open_live: Any,
) -> None:
    async with (
        serve_receiver() as receiver,
        # `localhost` is listed by name only: its loopback addresses are not.
        open_live(graphs=SERVED, webhook_hosts="localhost") as (client, services),
        sdk_client(client) as sdk,
    ):
        before = _attempts(services)
        webhook = receiver.url.replace("127.0.0.1", "localhost")
        ended = await sdk.runs.wait(None, "city", input=PLAN, webhook=webhook)
        await _all_settled(services, 1)
        (row,) = await _deliveries(services)
        after = _attempts(services)

    assert ended["__interrupt__"]  # the run itself went as it would
    assert (row["status"], row["attempts"], row["last_error"]) == (
        "failed",
        1,
        "address_not_allowed",
    )
    assert (row["run_values"], receiver.posts) == (None, [])
    assert {k: after[k] - before.get(k, 0) for k in after} == {"refused": 1}


async def test_a_queued_run_whose_webhook_the_list_no_longer_takes_is_refused_when_its_turn_comes(
    open_live: Any, gate: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        thread = await sdk.threads.create(graph_id="gate")
        thread_id = thread["thread_id"]
        first = await sdk.runs.create(thread_id, "gate", input={"messages": []})
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        queued = await sdk.runs.create(
            thread_id,
            "gate",
            input={"messages": []},
            multitask_strategy="enqueue",
            webhook=receiver.url,
        )
        # The allow-list changes while the run waits (a release with another list, say).
        changed = WebhookHosts(["hooks.example.com"])
        monkeypatch.setattr(services.webhook_hosts, "check", changed.check)
        gate.set()
        await sdk.runs.join(thread_id, first["run_id"])
        await sdk.runs.join(thread_id, queued["run_id"])
        refused = await sdk.runs.get(thread_id, queued["run_id"])
        rows = await _deliveries(services)

    assert (refused["status"], refused["error_code"]) == ("error", "webhook_not_allowed")
    assert (rows, receiver.posts) == ([], [])  # it never ran: nothing to post


@pytest.mark.parametrize(
    ("webhook", "code"),
    [
        ("http://hooks.example.com/end", "webhook_not_allowed"),
        ("http://10.0.0.7:8080/end", "webhook_not_allowed"),
        ("http://[::ffff:169.254.169.254]/", "webhook_not_allowed"),
        ("ftp://127.0.0.1/end", "webhook_invalid"),
        ("127.0.0.1:9000/end", "webhook_invalid"),
        ("http://user:password@127.0.0.1/end", "webhook_invalid"),
        ("http://127.0.0.1:99999/end", "webhook_invalid"),
        ("http:///end", "webhook_invalid"),
        ("http://a..localhost/end", "webhook_invalid"),  # an empty label: IDNA refuses it
        (f"http://{'a' * 64}.localhost/end", "webhook_invalid"),  # a label over 63 characters
    ],
)
async def test_a_webhook_the_allow_list_does_not_take_is_refused_at_the_start_with_nothing_run(
    open_live: Any, webhook: str, code: str
) -> None:
    async with open_live(graphs=SERVED) as (client, services), sdk_client(client) as sdk:
        thread = await sdk.threads.create(graph_id="city")
        refusals = []
        for start in (
            lambda: sdk.runs.create(None, "city", input=PLAN, webhook=webhook),
            lambda: sdk.runs.wait(thread["thread_id"], "city", input=PLAN, webhook=webhook),
            lambda: parts(sdk.runs.stream(None, "city", input=PLAN, webhook=webhook)),
        ):
            with pytest.raises(httpx.HTTPStatusError) as refused:  # (`wait` raises httpx's own)
                await start()
            assert refused.value.response.status_code == 422
            refusals.append(refused.value.response.json()["error"])
        runs = await sdk.runs.list(thread["thread_id"])
        threads = await sdk.threads.search()
        rows = await _deliveries(services)

    assert {(error["code"], error["details"]["field"]) for error in refusals} == {(code, "webhook")}
    assert (runs, [t["thread_id"] for t in threads], rows) == ([], [thread["thread_id"]], [])


async def test_a_listed_host_is_taken_and_a_run_without_a_webhook_queues_nothing(
    open_live: Any,
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED, webhook_hosts="hooks.example.com,127.0.0.1") as (
            client,
            services,
        ),
        sdk_client(client) as sdk,
    ):
        await sdk.runs.wait(None, "city", input=PLAN)
        await sdk.runs.wait(None, "city", input=PLAN, webhook=receiver.url)
        await receiver.wait_for(1)
        await _all_settled(services, 1)
        with pytest.raises(UnprocessableEntityError) as refused:  # `localhost` is not listed
            await sdk.runs.create(None, "city", input=PLAN, webhook="http://localhost:9/")

    assert refused.value.response.json()["error"]["code"] == "webhook_not_allowed"
    assert len(receiver.posts) == 1


async def test_a_webhook_runs_end_that_cannot_be_stored_sends_no_consent_before_its_failure(
    open_live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with a webhook stores what its graph held (its interrupt) before reading the state
    its post carries, and before its end's events are made: when the end's transaction then
    fails, the run ends ``failed`` with nothing of that end told (no ``consent``, one
    ``final``), as a run without a webhook does."""
    real_store_end = RunStore.store_end
    failed: list[str] = []

    async def fails_once(self: RunStore, run: Any, outcome: Any, **kwargs: Any) -> None:
        if not failed:
            failed.append(outcome.reason)
            raise RuntimeError("the database refused the run's end")
        await real_store_end(self, run, outcome, **kwargs)

    monkeypatch.setattr(RunStore, "store_end", fails_once)
    async with (
        serve_receiver() as receiver,
        open_live(graphs=SERVED) as (client, services),
        sdk_client(client) as sdk,
    ):
        created = await sdk.runs.create(None, "city", input=PLAN, webhook=receiver.url)
        thread_id = created["thread_id"]
        await _all_settled(services, 1)
        run = await sdk.runs.get(thread_id, created["run_id"])
        told = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": 0})

    assert failed == ["interrupted"]
    assert run["status"] == "error"
    events = parse_events(told.text)
    assert [e.type for e in events if e.type in ("consent", "error", "final")] == [
        "error",
        "final",
    ]
