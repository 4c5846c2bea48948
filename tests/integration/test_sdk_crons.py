"""Crons through the real ``langgraph-sdk`` client over real HTTP: each due tick starts one
ordinary run (in the thread's history, with the cron's id in its metadata, audited), a tick
while a consent waits on the thread is skipped and audited (not stacked), ticks missed while the
server was down are one run at start-up, a cron without a thread runs each tick on a new thread;
created, searched, counted, changed and deleted as the SDK asks, each owner's alone; what could
never run is refused when the cron is created (422, 404).

The test's clock is moved by hand; the scheduler sleeps the real seconds to the next tick (one,
with a schedule of every second), so each tick is waited for, never slept past."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from consentry.runtime.runs import RunQueue
from consentry.storage.tables import crons
from tests.conftest import ManualClock
from tests.sse import ASK_FOR_REVIEW, OFFLINE_REVIEW, REVIEWED_NOTES
from tests.webhook_receiver import serve_receiver

PROGRESS = "progress=tests.graph_forms:progress_writer"
COUNT = "count=tests.integration.raw_interrupt_graphs:counting"
GRAPHS = f"{PROGRESS},{COUNT}"
KEYS = "ka=acme:alice,kb=acme:bob"
EVERY_SECOND = "* * * * * *"


def _sdk(client: httpx.AsyncClient, key: str = "ka") -> LangGraphClient:
    return get_client(url=str(client.base_url), api_key=key)


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _audit(client: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    answer = await client.get(f"/v1/threads/{thread_id}/audit", headers={"X-Api-Key": "ka"})
    records: list[dict[str, Any]] = answer.json()["records"]
    return [r for r in records if r["action"].startswith("cron_")]


async def _until(check: Callable[[], Awaitable[Any]], *, seconds: float = 20) -> Any:
    """``check()``'s first truthy answer, asked every 50 ms for up to ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if found := await check():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("not within the time allowed")


async def _runs_ended(sdk: LangGraphClient, thread_id: str, count: int) -> list[dict[str, Any]]:
    """The thread's runs once ``count`` of them have ended, oldest first."""

    async def ended() -> list[dict[str, Any]] | None:
        runs = await sdk.runs.list(thread_id, limit=100)
        done = [r for r in runs if r["status"] not in ("pending", "running")]
        return list(reversed(runs)) if len(done) >= count else None

    found: list[dict[str, Any]] = await _until(ended)
    return found


async def test_each_due_tick_of_a_thread_cron_starts_one_run_in_its_history(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id,
            "progress",
            schedule=EVERY_SECOND,
            input=_ask("Report"),
            metadata={"purpose": "daily"},
        )
        first_due = cron["next_run_date"]
        clock.advance(seconds=1)
        one = await _runs_ended(sdk, thread_id, 1)
        clock.advance(seconds=1)
        two = await _runs_ended(sdk, thread_id, 2)
        after = (await sdk.crons.search(thread_id=thread_id))[0]
        state = await sdk.threads.get_state(thread_id)
        audit = await _audit(client, thread_id)
        await sdk.aclose()

    assert cron["thread_id"] == thread_id
    assert cron["enabled"] is True
    assert cron["payload"]["input"] == _ask("Report")
    assert first_due == "2026-01-01T12:00:01Z"
    assert len(one) == 1
    assert len(two) == 2
    assert [r["status"] for r in two] == ["success", "success"]
    assert all(r["metadata"] == {"purpose": "daily", "cron_id": cron["cron_id"]} for r in two)
    said = [m["content"] for m in state["values"]["messages"]]
    assert said == ["Report", "Reported.", "Report", "Reported."]
    assert after["next_run_date"] == "2026-01-01T12:00:03Z"
    assert [(r["action"], r["run_id"], r["data"]["due_at"]) for r in audit] == [
        ("cron_ticked", two[0]["run_id"], "2026-01-01T12:00:01+00:00"),
        ("cron_ticked", two[1]["run_id"], "2026-01-01T12:00:02+00:00"),
    ]


async def test_a_tick_while_a_consent_waits_is_skipped_and_audited_not_stacked(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="count"))["thread_id"]
        await sdk.crons.create_for_thread(thread_id, "count", schedule=EVERY_SECOND, input={})
        clock.advance(seconds=1)
        asked = await _runs_ended(sdk, thread_id, 1)  # it waits for a person now
        clock.advance(seconds=1)

        async def skipped() -> list[dict[str, Any]]:
            return [r for r in await _audit(client, thread_id) if r["action"] != "cron_ticked"]

        skips = await _until(skipped)
        runs_while_waiting = await sdk.runs.list(thread_id)
        await sdk.runs.wait(thread_id, "count", command={"resume": 3})
        clock.advance(seconds=1)
        after = await _runs_ended(sdk, thread_id, 3)
        audit = await _audit(client, thread_id)
        metrics = (await client.get("/metrics")).text
        await sdk.aclose()

    assert asked[0]["status"] == "interrupted"
    assert skips[0]["data"]["reason"] == "consent_pending"
    assert skips[0]["data"]["due_at"] == "2026-01-01T12:00:02+00:00"
    assert len(runs_while_waiting) == 1  # nothing stacked behind the consent
    assert [r["status"] for r in after] == ["interrupted", "success", "interrupted"]
    assert [r["action"] for r in audit] == ["cron_ticked", "cron_tick_skipped", "cron_ticked"]
    assert 'consentry_cron_ticks_total{outcome="queued",reason=""} 2.0' in metrics
    assert 'consentry_cron_ticks_total{outcome="skipped",reason="consent_pending"} 1.0' in metrics


async def test_ticks_missed_while_the_server_was_down_are_one_run_at_start_up(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule=EVERY_SECOND, input=_ask("Report")
        )
        await sdk.aclose()
    clock.advance(seconds=30)  # thirty ticks due while no server runs
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        runs = await _runs_ended(sdk, thread_id, 1)
        after = (await sdk.crons.search())[0]
        audit = await _audit(client, thread_id)
        await sdk.aclose()

    assert cron["next_run_date"] == "2026-01-01T12:00:01Z"
    assert len(runs) == 1
    # The next tick is the first after the start (nothing else is due: no second run).
    assert after["next_run_date"] == "2026-01-01T12:00:31Z"
    assert [(r["action"], r["run_id"]) for r in audit] == [("cron_ticked", runs[0]["run_id"])]
    assert audit[0]["data"]["missed"] == 29  # 12:00:02 to 12:00:30, in the one run


async def test_a_cron_without_a_thread_runs_each_tick_on_a_new_thread(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        kept = await sdk.crons.create(
            "progress", schedule=EVERY_SECOND, input=_ask("Keep"), on_run_completed="keep"
        )
        deleted = await sdk.crons.create(
            "progress", schedule=EVERY_SECOND, input=_ask("Drop"), metadata={"which": "drop"}
        )
        clock.advance(seconds=1)

        async def kept_thread() -> list[dict[str, Any]]:
            found = await sdk.threads.search(metadata={"cron_id": kept["cron_id"]})
            return [t for t in found if t["status"] == "idle"]

        threads = await _until(kept_thread)
        runs = await _runs_ended(sdk, threads[0]["thread_id"], 1)

        async def dropped() -> bool:
            # Both ticks queued their runs (the thread is made with the tick), and the one
            # `delete` made is gone since its run's end.
            metrics = (await client.get("/metrics")).text
            found = await sdk.threads.search(metadata={"cron_id": deleted["cron_id"]})
            queued = 'consentry_cron_ticks_total{outcome="queued",reason=""} 2.0' in metrics
            return queued and not found

        await _until(dropped)
        await sdk.aclose()

    assert kept["thread_id"] is None
    assert kept["on_run_completed"] == "keep"
    assert deleted["on_run_completed"] == "delete"  # the default
    assert len(threads) == 1
    assert runs[0]["status"] == "success"


async def test_crons_are_searched_counted_changed_and_deleted_each_owners_alone(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        alice, bob = _sdk(client, "ka"), _sdk(client, "kb")
        thread_id = (await alice.threads.create(graph_id="progress"))["thread_id"]
        daily = await alice.crons.create_for_thread(
            thread_id, "progress", schedule="0 9 * * *", input={}, metadata={"kind": "daily"}
        )
        clock.advance(seconds=1)
        weekly = await alice.crons.create(
            "progress",
            schedule="0 9 * * 1",
            timezone="Europe/Paris",
            input=_ask("Review"),
            metadata={"kind": "weekly"},
        )
        everything = await alice.crons.search()
        by_thread = await alice.crons.search(thread_id=thread_id)
        by_metadata = await alice.crons.search(metadata={"kind": "weekly"})
        oldest_first = await alice.crons.search(sort_by="created_at", sort_order="asc")
        chosen = await alice.crons.search(select=["cron_id", "schedule"], limit=1)
        counted = await alice.crons.count(), await alice.crons.count(assistant_id="progress")
        bobs = await bob.crons.search(), await bob.crons.count()
        changed = await alice.crons.update(weekly["cron_id"], schedule="30 8 * * *")
        disabled = await alice.crons.update(daily["cron_id"], enabled=False)
        with pytest.raises(NotFoundError):
            await bob.crons.update(daily["cron_id"], enabled=True)
        with pytest.raises(NotFoundError):
            await bob.crons.delete(daily["cron_id"])
        await alice.crons.delete(daily["cron_id"])
        with pytest.raises(NotFoundError):
            await alice.crons.delete(daily["cron_id"])
        left = await alice.crons.search()
        await alice.aclose()
        await bob.aclose()

    assert [c["cron_id"] for c in everything] == [weekly["cron_id"], daily["cron_id"]]
    assert [c["cron_id"] for c in by_thread] == [daily["cron_id"]]
    assert [c["cron_id"] for c in by_metadata] == [weekly["cron_id"]]
    assert [c["cron_id"] for c in oldest_first] == [daily["cron_id"], weekly["cron_id"]]
    assert chosen == [{"cron_id": weekly["cron_id"], "schedule": "0 9 * * 1"}]
    assert counted == (2, 2)
    assert bobs == ([], 0)
    assert daily["next_run_date"] == "2026-01-01T09:00:00Z".replace("01T", "02T")
    assert weekly["timezone"] == "Europe/Paris"
    assert weekly["next_run_date"] == "2026-01-05T08:00:00Z"  # Monday 9:00 in Paris (UTC+1)
    assert changed["schedule"] == "30 8 * * *"
    assert changed["next_run_date"] == "2026-01-02T07:30:00Z"
    assert changed["payload"] == weekly["payload"]
    assert disabled["enabled"] is False
    assert disabled["next_run_date"] is None
    assert [c["cron_id"] for c in left] == [weekly["cron_id"]]


async def test_a_disabled_or_ended_cron_has_no_tick(open_live: Any, clock: ManualClock) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        off = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule=EVERY_SECOND, input={}, enabled=False
        )
        ending = clock.now + timedelta(seconds=1, milliseconds=500)
        ends = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule=EVERY_SECOND, input=_ask("Once"), end_time=ending
        )
        clock.advance(seconds=1)
        ran = await _runs_ended(sdk, thread_id, 1)

        async def ended() -> bool:
            return (await sdk.crons.search(thread_id=thread_id, enabled=True))[0][
                "next_run_date"
            ] is None

        await _until(ended)  # past its end: no tick any more, however the clock moves
        runs = await sdk.runs.list(thread_id)
        cleared = await sdk.crons.update(ends["cron_id"], end_time=None)
        await sdk.aclose()

    assert off["next_run_date"] is None
    assert len(ran) == len(runs) == 1
    assert cleared["end_time"] is None
    assert cleared["next_run_date"] is not None


async def test_a_cron_that_could_never_run_is_refused_when_created(open_live: Any) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        alice, bob = _sdk(client, "ka"), _sdk(client, "kb")
        thread_id = (await alice.threads.create(graph_id="progress"))["thread_id"]
        refused: dict[str, Any] = {}
        cases: dict[str, Callable[[], Awaitable[Any]]] = {
            "schedule": lambda: alice.crons.create("progress", schedule="every day", input={}),
            "seven_fields": lambda: alice.crons.create(
                "progress", schedule="* * * * * * 2030", input={}
            ),
            "never": lambda: alice.crons.create("progress", schedule="0 0 30 2 *", input={}),
            "timezone": lambda: alice.crons.create(
                "progress", schedule="0 9 * * *", timezone="Mars/Olympus", input={}
            ),
            "no_input": lambda: alice.crons.create("progress", schedule="0 9 * * *"),
            "interrupt": lambda: alice.crons.create_for_thread(
                thread_id, "progress", schedule="0 9 * * *", multitask_strategy="interrupt"
            ),
            "breakpoint": lambda: alice.crons.create_for_thread(
                thread_id, "progress", schedule="0 9 * * *", interrupt_before=["nowhere"]
            ),
            "config": lambda: alice.crons.create_for_thread(
                thread_id, "progress", schedule="0 9 * * *", config={"recursion_limit": 3}
            ),
        }
        for name, create in cases.items():
            with pytest.raises(UnprocessableEntityError) as caught:
                await create()
            refused[name] = caught.value.response.json()["error"]["code"]
        on_thread = await client.post(  # (the SDK sends it only for a cron without a thread)
            f"/threads/{thread_id}/runs/crons",
            headers={"X-Api-Key": "ka"},
            json={"assistant_id": "progress", "schedule": "0 9 * * *", "on_run_completed": "keep"},
        )
        with pytest.raises(NotFoundError) as unknown_assistant:
            await alice.crons.create("nobody", schedule="0 9 * * *", input={})
        with pytest.raises(NotFoundError) as others_thread:
            await bob.crons.create_for_thread(thread_id, "progress", schedule="0 9 * * *")
        stored = await alice.crons.count(), await bob.crons.count()
        await alice.aclose()
        await bob.aclose()

    assert refused == {
        "schedule": "invalid_schedule",
        "seven_fields": "invalid_schedule",
        "never": "invalid_schedule",
        "timezone": "invalid_timezone",
        "no_input": "invalid_input",
        "interrupt": "request_invalid",
        "breakpoint": "invalid_breakpoint",
        "config": "unsupported_field",
    }
    assert (on_thread.status_code, on_thread.json()["error"]["code"]) == (422, "unsupported_field")
    assert unknown_assistant.value.response.json()["error"]["code"] == "assistant_not_found"
    assert others_thread.value.response.json()["error"]["code"] == "thread_not_found"
    assert stored == (0, 0)


async def test_a_weekly_review_waits_in_the_inbox_and_holds_the_next_week_until_approved(
    open_live: Any, clock: ManualClock
) -> None:
    """The worked example of ``docs/schedules.md``: every Friday at 17:00 in Paris, the tutor
    drafts a review of the project's notes as a new note, a ``note_create`` consent in the
    approvals inbox; the next Friday's tick is skipped while it waits, and the note is created
    only once the person approves."""
    alice = {"x-api-key": "ka"}
    a_week = 7 * 24 * 3600 + 3600  # the review waits a week for its person (the default: a day)
    async with open_live(api_keys=KEYS, consent_ttl_seconds=a_week) as (client, _):
        sdk = _sdk(client)
        project_id = (
            await client.post("/v1/projects", json={"name": "Learning"}, headers=alice)
        ).json()["project_id"]
        for title, content in REVIEWED_NOTES:
            note = await client.post(
                f"/v1/projects/{project_id}/notes",
                json={"title": title, "content": content},
                headers=alice,
            )
        # A thread created with a note is in the note's project: the review covers the project.
        thread_id = (await sdk.threads.create(metadata={"note_id": note.json()["note_id"]}))[
            "thread_id"
        ]
        cron = await sdk.crons.create_for_thread(
            thread_id,
            "tutor",
            schedule="0 17 * * 5",
            timezone="Europe/Paris",
            input={"messages": [{"role": "user", "content": ASK_FOR_REVIEW}]},
        )
        # The clock jumps (the test's, by hand): a change to the cron wakes the scheduler, as it
        # wakes every replica's, and it finds the tick due.
        clock.advance(days=1, hours=4)
        await sdk.crons.update(cron["cron_id"], metadata={"week": 1})

        async def pending() -> list[dict[str, Any]]:
            inbox = await client.get("/v1/approvals?status=pending", headers=alice)
            return [a for a in inbox.json()["approvals"] if a["thread_id"] == thread_id]

        waiting = await _until(pending)
        clock.advance(days=7)
        await sdk.crons.update(cron["cron_id"], metadata={"week": 2})

        async def skipped() -> list[dict[str, Any]]:
            audit = await _audit(client, thread_id)
            return [r for r in audit if r["action"] == "cron_tick_skipped"]

        skips = await _until(skipped)
        notes_url = f"/v1/projects/{project_id}/notes"
        before = (await client.get(notes_url, headers=alice)).json()["notes"]
        approve = {"resume": {"decisions": [{"type": "approve"}]}}
        await sdk.runs.wait(thread_id, "tutor", input={}, command=approve)
        after = (await client.get(notes_url, headers=alice)).json()["notes"]
        runs = await sdk.runs.list(thread_id)
        await sdk.aclose()

    title = "Weekly review, 2026-01-02"  # the day of the tick, on the server's clock
    content = OFFLINE_REVIEW
    assert cron["next_run_date"] == "2026-01-02T16:00:00Z"  # Friday 17:00 in Paris (UTC+1)
    assert len(waiting) == 1
    assert waiting[0]["kind"] == "note_create"
    assert waiting[0]["proposal"] == {"project_id": project_id, "title": title, "content": content}
    assert [s["data"]["due_at"] for s in skips] == ["2026-01-09T16:00:00+00:00"]
    assert skips[0]["data"]["reason"] == "consent_pending"
    assert [n["title"] for n in before] == ["Spaced repetition", "RAG"]
    assert [(n["title"], n["content"], n["version"]) for n in after] == [
        (title, content, 1),
        *[(n["title"], n["content"], n["version"]) for n in before],
    ]
    assert len(runs) == 2  # the review, the approval's run: nothing stacked


async def test_each_run_of_a_cron_with_a_webhook_posts_its_end(
    open_live: Any, clock: ManualClock
) -> None:
    async with (
        serve_receiver() as receiver,
        open_live(graphs=GRAPHS, api_keys=KEYS) as (
            client,
            _,
        ),
    ):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id,
            "progress",
            schedule=EVERY_SECOND,
            input=_ask("Report"),
            metadata={"purpose": "daily"},
            webhook=receiver.url,
        )
        clock.advance(seconds=1)
        (post,) = await receiver.wait_for(1)
        runs = await _runs_ended(sdk, thread_id, 1)
        with pytest.raises(UnprocessableEntityError) as elsewhere:
            await sdk.crons.create_for_thread(
                thread_id, "progress", schedule=EVERY_SECOND, webhook="http://10.0.0.8/hook"
            )
        with pytest.raises(UnprocessableEntityError) as changed_elsewhere:
            await sdk.crons.update(cron["cron_id"], webhook="http://10.0.0.8/hook")
        kept = await sdk.crons.search()
        await sdk.aclose()

    assert cron["payload"]["webhook"] == receiver.url
    assert post.json["run_id"] == runs[0]["run_id"]
    assert post.json["status"] == "success"
    assert post.json["metadata"] == {"purpose": "daily", "cron_id": cron["cron_id"]}
    assert elsewhere.value.response.json()["error"]["code"] == "webhook_not_allowed"
    assert changed_elsewhere.value.response.json()["error"]["code"] == "webhook_not_allowed"
    assert [c["payload"]["webhook"] for c in kept] == [receiver.url]


async def test_a_change_is_checked_and_one_that_leaves_the_plan_keeps_its_due_tick(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule="0 9 * * *", input={}
        )
        with pytest.raises(UnprocessableEntityError) as never:
            await sdk.crons.update(cron["cron_id"], schedule="0 0 30 2 *")
        cleared = await client.patch(
            f"/runs/crons/{cron['cron_id']}", json={"schedule": None}, headers={"x-api-key": "ka"}
        )
        clock.advance(days=1)  # its tick (tomorrow 9:00) is due now, not taken yet
        same = await sdk.crons.update(cron["cron_id"], enabled=True, schedule="0 9 * * *")
        zone = await sdk.crons.update(cron["cron_id"], timezone="Asia/Tokyo")
        await sdk.aclose()

    assert never.value.response.json()["error"]["code"] == "invalid_schedule"
    assert (cleared.status_code, cleared.json()["error"]["code"]) == (422, "request_invalid")
    assert same["next_run_date"] == cron["next_run_date"] == "2026-01-02T09:00:00Z"
    assert zone["next_run_date"] == "2026-01-03T00:00:00Z"  # 9:00 in Tokyo, planned from now


async def test_a_run_its_process_left_waiting_is_started_after_a_lease(
    open_live: Any, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that stopped right after the commit that queued a tick's run (here: its
    drainer never told) leaves the run waiting; a scheduler's pass after a run lease starts it,
    without waiting for the cron's next tick."""
    drain = RunQueue.drain
    monkeypatch.setattr(RunQueue, "drain", lambda self, thread_id: None)
    async with open_live(graphs=GRAPHS, api_keys=KEYS, lease_seconds=10) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule="0 13 * * *", input=_ask("Report")
        )
        clock.advance(hours=1)
        await sdk.crons.update(cron["cron_id"], metadata={"woken": 1})  # (wakes the scheduler)

        async def waiting() -> list[dict[str, Any]]:
            return [r for r in await sdk.runs.list(thread_id) if r["status"] == "pending"]

        left = await _until(waiting)
        monkeypatch.setattr(RunQueue, "drain", drain)
        clock.advance(seconds=11)
        await sdk.crons.update(cron["cron_id"], metadata={"woken": 2})
        runs = await _runs_ended(sdk, thread_id, 1)
        audit = await _audit(client, thread_id)
        await sdk.aclose()

    assert [r["run_id"] for r in runs] == [left[0]["run_id"]]
    assert runs[0]["status"] == "success"
    assert [r["action"] for r in audit] == ["cron_ticked"]  # started, not skipped


async def test_a_stored_schedule_no_longer_read_is_skipped_once_and_ticks_no_more(
    open_live: Any, clock: ManualClock
) -> None:
    """A schedule a later release of croniter or tzdata refuses (here: written straight into
    the table) is skipped on its thread's trail, and the cron has no next tick: it is not tried
    again and again."""
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, services):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        cron = await sdk.crons.create_for_thread(
            thread_id, "progress", schedule=EVERY_SECOND, input=_ask("Report")
        )
        async with services.db.write() as conn:
            await conn.execute(
                sa.update(crons).where(crons.c.id == cron["cron_id"]).values(timezone="Gone/Zone")
            )
        clock.advance(seconds=1)

        async def skipped() -> list[dict[str, Any]]:
            return [r for r in await _audit(client, thread_id) if r["action"] != "cron_ticked"]

        skips = await _until(skipped)
        after = (await sdk.crons.search())[0]
        runs = await sdk.runs.list(thread_id)
        await sdk.aclose()

    assert [s["data"]["reason"] for s in skips] == ["invalid_schedule"]
    assert after["next_run_date"] is None
    assert runs == []


async def test_deleting_a_thread_deletes_its_crons(open_live: Any) -> None:
    async with open_live(graphs=GRAPHS, api_keys=KEYS) as (client, _):
        sdk = _sdk(client)
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        await sdk.crons.create_for_thread(thread_id, "progress", schedule="0 9 * * *", input={})
        kept = await sdk.crons.create("progress", schedule="0 9 * * *", input=_ask("Report"))
        before = await sdk.crons.count()
        await sdk.threads.delete(thread_id)
        after = await sdk.crons.search()
        await sdk.aclose()

    assert before == 2
    assert [c["cron_id"] for c in after] == [kept["cron_id"]]
