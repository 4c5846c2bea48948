"""SIGKILL at labelled points of a consent run, then a new server on the same database: nothing a
client was told is lost, and the approved note edit is applied exactly once.

The servers run ``tests.system.kill_points_graph`` (an edit of the open note behind the tutor's
``note_edit`` consent). A test writes a label into ``$KILL_POINTS_DIR/stop-at``; the graph node
at that label writes ``reached-<label>`` and waits forever; the test kills the process there,
removes ``stop-at`` and starts a new server on the same SQLite file. The kill while the model
streams is in ``test_streaming_and_crash.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import pytest

from consentry.principal import LOCAL_PRINCIPAL
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    NoteEvent,
    RunStartedEvent,
    StepEvent,
)
from tests.sse import assert_numbered, chat, kinds, next_event, parse_events
from tests.system.kill_points import KillPoints, interrupt_stored
from tests.system.kill_points_graph import (
    AFTER_THE_WRITE,
    BEFORE_THE_WRITE,
    BESIDE_THE_CONSENT,
    DECISION_RECORDED,
    KILL_POINTS_DIR,
)
from tests.system.server import serve

POINTS_GRAPH = (
    "points=tests.system.kill_points_graph:graph_spec,"
    "aside=tests.system.kill_points_graph:aside_graph_spec"
)
WAIT_SECONDS = 30.0
NOTE_CONTENT = "Hiragana has 46 basic characters."
LINE = "Katakana has 46 basic characters too."
ASKED = ["run_started", "step", "step", "consent", "final"]
APPLIED = ["run_started", "step", "step", "note", "message", "final"]
RECOVERED_AFTER_THE_DECISION = APPLIED  # the consent node runs again, with the recorded decision
RECOVERED_IN_THE_EFFECT = ["run_started", "step", "note", "message", "final"]
DEAD_RUN_CLOSED = ["error", "final"]
RESUMED_THEN_RECOVERED = ["message", "resume", "recovery"]


@pytest.fixture
def points(tmp_path: Path) -> KillPoints:
    return KillPoints.in_folder(tmp_path)


class Server:
    """``async with Server(...) as server``: a ``consentry serve`` process serving the kill-points
    graph, and ``server.http``, a client of it. ``kill()`` SIGKILLs it (leaving the block does
    too); the client stays open until the block ends, so a stream can break under it."""

    def __init__(self, database: Path, points: KillPoints) -> None:
        self._process: AbstractContextManager[str] = serve(
            database,
            env={"CONSENTRY_GRAPHS": POINTS_GRAPH, KILL_POINTS_DIR: str(points.folder)},
        )
        self._alive = False
        self.http = httpx.AsyncClient(timeout=WAIT_SECONDS)

    async def __aenter__(self) -> Server:
        self.http.base_url = httpx.URL(await asyncio.to_thread(self._process.__enter__))
        self._alive = True
        return self

    async def kill(self) -> None:
        if self._alive:
            self._alive = False
            await asyncio.to_thread(self._process.__exit__, None, None, None)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.kill()
        finally:
            await self.http.aclose()


async def _read_until(lines: AsyncIterator[str], last: str) -> list[Event]:
    """Events up to and including the first one of type ``last``."""
    events: list[Event] = []
    async with asyncio.timeout(WAIT_SECONDS):
        while not events or events[-1].type != last:
            events.append(await next_event(lines))
    return events


async def _read_events(lines: AsyncIterator[str], count: int) -> list[Event]:
    async with asyncio.timeout(WAIT_SECONDS):
        return [await next_event(lines) for _ in range(count)]


async def _open_note(http: httpx.AsyncClient) -> dict[str, Any]:
    project = (await http.get("/v1/projects")).json()["projects"][0]
    response = await http.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "Kana", "content": NOTE_CONTENT},
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


def _add_line(note: dict[str, Any]) -> dict[str, Any]:
    return {
        "graph": "points",
        "message": LINE,
        "project_id": note["project_id"],
        "note_id": note["note_id"],
    }


def _approve(consent: ConsentEvent) -> dict[str, Any]:
    return {
        "thread_id": consent.thread_id,
        "resume": {"approval_id": consent.approval_id, "decision": "approve"},
    }


async def _ask(http: httpx.AsyncClient, note: dict[str, Any]) -> tuple[list[Event], ConsentEvent]:
    asked = await chat(http, _add_line(note))
    assert kinds(asked) == ASKED
    consent = asked[3]
    assert isinstance(consent, ConsentEvent)
    assert consent.proposal["proposed_content"] == f"{NOTE_CONTENT}\n{LINE}\n"
    return asked, consent


async def _approval(http: httpx.AsyncClient, approval_id: str) -> dict[str, Any]:
    response = await http.get(f"/v1/approvals/{approval_id}")
    assert response.status_code == 200, response.text
    approval: dict[str, Any] = response.json()
    return approval


async def _versions(http: httpx.AsyncClient, note_id: str) -> list[tuple[int, str, str | None]]:
    versions = (await http.get(f"/v1/notes/{note_id}/versions")).json()["versions"]
    return sorted((v["version"], v["author"], v["approval_id"]) for v in versions)


async def _join_after(http: httpx.AsyncClient, thread_id: str, seen: list[Event]) -> list[Event]:
    """What a client that saw ``seen`` gets when it rejoins: the rest, until the active run's
    final (the recovery run of the restarted server)."""
    response = await http.get(
        f"/v1/threads/{thread_id}/stream", params={"last_event_id": max(e.seq for e in seen)}
    )
    assert response.status_code == 200, response.text
    return [e for e in parse_events(response.text) if e.type != "token"]


def _nodes(events: list[Event]) -> list[str]:
    return [e.node for e in events if isinstance(e, StepEvent)]


def _reason(event: Event) -> str:
    assert isinstance(event, FinalEvent)
    return event.reason


def _only(events: list[Event], event_type: type[Event]) -> Any:
    matching = [e for e in events if isinstance(e, event_type)]
    assert len(matching) == 1, matching
    return matching[0]


def _assert_recovered(joined: list[Event], *, expected: list[str], nodes: list[str]) -> None:
    """The dead run was closed as ``failed`` (``server_restarted``), then a recovery run ran
    ``nodes`` without anyone asking, wrote version 2 of the note and completed."""
    assert kinds(joined) == DEAD_RUN_CLOSED + expected
    assert _only(joined, ErrorEvent).code == "server_restarted"
    assert _reason(joined[1]) == "failed"
    recovered = joined[2:]
    assert _only(recovered, RunStartedEvent).trigger == "recovery"
    assert _nodes(recovered) == nodes
    assert _only(recovered, NoteEvent).version == 2
    assert _reason(recovered[-1]) == "completed"


async def _assert_nothing_lost(
    http: httpx.AsyncClient, thread_id: str, seen: list[Event], after_restart: list[Event]
) -> None:
    """Every durable event the client saw before the kill is stored as it was sent, and every
    event made after the restart is numbered after them."""
    history = parse_events((await http.get(f"/v1/threads/{thread_id}/stream")).text)
    assert_numbered(history, first=1)  # 1, 2, 3, ...: no gap where the process died
    stored = {e.seq: e for e in history}
    durable = [e for e in seen if e.type != "token"]
    assert [stored.get(e.seq) for e in durable] == durable
    newest_seen = max(e.seq for e in seen)
    assert after_restart
    assert min(e.seq for e in after_restart) > newest_seen
    assert {e.seq for e in after_restart} <= set(stored)


async def _assert_applied_once(
    http: httpx.AsyncClient,
    consent: ConsentEvent,
    *,
    triggers: list[str],
    decided: dict[str, Any] | None = None,
) -> None:
    """One new note version, written by the approval; one decision and one effect in the audit,
    after runs started by ``triggers``; the approval approved by the person who decided (exactly
    as recorded before the kill, if given); the thread done."""
    proposal = consent.proposal
    assert await _versions(http, proposal["note_id"]) == [
        (1, "user", None),
        (2, "assistant", consent.approval_id),
    ]
    note = (await http.get(f"/v1/notes/{proposal['note_id']}")).json()
    assert (note["version"], note["content"]) == (2, proposal["proposed_content"])

    approval = await _approval(http, consent.approval_id)
    assert approval["status"] == "approved"
    assert approval["decided"]["decided_by"] == LOCAL_PRINCIPAL.display
    if decided is not None:
        assert approval["decided"] == decided

    audit = (await http.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
    about_it = [r["action"] for r in audit if r["approval_id"] == consent.approval_id]
    assert about_it.count("consent_decided") == 1
    assert about_it.count("effect_applied") == 1
    assert [r["data"]["trigger"] for r in audit if r["action"] == "run_started"] == triggers

    thread = (await http.get(f"/v1/threads/{consent.thread_id}")).json()
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "completed",
        [],
    )


@dataclass(frozen=True)
class Stopped:
    """What a client knew when the server was killed in the run of a decision."""

    consent: ConsentEvent
    seen: list[Event]
    """Every event the client received, from the ask and from the decision's stream."""
    decided: dict[str, Any]
    """The approval's recorded decision."""
    versions: list[tuple[int, str, str | None]]
    """The note's versions."""


async def _ask_then_stop_in_the_decided_run(
    server: Server, points: KillPoints, label: str
) -> Stopped:
    """Ask, approve on a stream, and kill the server once the resumed graph stands at ``label``."""
    note = await _open_note(server.http)
    asked, consent = await _ask(server.http, note)
    points.stop_at(label)
    async with server.http.stream("POST", "/v1/chat", json=_approve(consent)) as response:
        assert response.status_code == 200
        await points.reached(label)
        # run_started and a step per node started; the graph stands inside the last one.
        steps = 1 if label == DECISION_RECORDED else 2
        seen = await _read_events(response.aiter_lines(), 1 + steps)
        decided = (await _approval(server.http, consent.approval_id))["decided"]
        versions = await _versions(server.http, note["note_id"])
        await server.kill()
    return Stopped(consent, asked + seen, decided, versions)


async def test_a_kill_right_after_the_consent_is_stored_loses_nothing(
    tmp_path: Path, points: KillPoints
) -> None:
    database = tmp_path / "consentry.db"
    async with Server(database, points) as first:
        note = await _open_note(first.http)
        async with first.http.stream("POST", "/v1/chat", json=_add_line(note)) as response:
            assert response.status_code == 200
            seen = await _read_until(response.aiter_lines(), "consent")
            # The consent event is sent only after its approval committed: kill right there.
            await first.kill()
    consent = seen[-1]
    assert isinstance(consent, ConsentEvent)
    assert kinds(seen) == ASKED[:-1]
    assert _nodes(seen) == ["draft_note_edit", "request_note_edit_consent"]

    async with Server(database, points) as second:
        inbox = (await second.http.get("/v1/approvals", params={"status": "pending"})).json()
        assert [a["approval_id"] for a in inbox["approvals"]] == [consent.approval_id]
        thread = (await second.http.get(f"/v1/threads/{consent.thread_id}")).json()
        assert thread["status"] == "awaiting_consent"
        assert [ConsentEvent.model_validate(c) for c in thread["pending_consents"]] == [consent]
        assert await _versions(second.http, note["note_id"]) == [(1, "user", None)]

        resumed = await chat(second.http, _approve(consent))

        assert kinds(resumed) == APPLIED
        assert _only(resumed, RunStartedEvent).trigger == "resume"
        assert _nodes(resumed) == ["request_note_edit_consent", "apply_note_edit"]
        written = _only(resumed, NoteEvent)
        assert (written.version, written.content) == (2, consent.proposal["proposed_content"])
        assert _reason(resumed[-1]) == "completed"
        await _assert_nothing_lost(second.http, consent.thread_id, seen, resumed)
        await _assert_applied_once(second.http, consent, triggers=["message", "resume"])


async def test_a_kill_after_the_decision_is_recorded_is_resumed_with_it_on_restart(
    tmp_path: Path, points: KillPoints
) -> None:
    database = tmp_path / "consentry.db"
    async with Server(database, points) as first:
        stopped = await _ask_then_stop_in_the_decided_run(first, points, DECISION_RECORDED)
    consent, seen = stopped.consent, stopped.seen
    assert kinds(seen) == [*ASKED, "run_started", "step"]
    assert _nodes(seen)[-1] == "request_note_edit_consent"
    assert (stopped.decided["status"], stopped.decided["decision"]) == ("approved", "approve")
    assert stopped.versions == [(1, "user", None)]
    points.go_on()

    async with Server(database, points) as second:
        joined = await _join_after(second.http, consent.thread_id, seen)

        _assert_recovered(
            joined,
            expected=RECOVERED_AFTER_THE_DECISION,
            nodes=["request_note_edit_consent", "apply_note_edit"],
        )
        await _assert_nothing_lost(second.http, consent.thread_id, seen, joined)
        await _assert_applied_once(
            second.http, consent, triggers=RESUMED_THEN_RECOVERED, decided=stopped.decided
        )


async def test_a_kill_in_the_effect_before_the_write_applies_it_once_on_restart(
    tmp_path: Path, points: KillPoints
) -> None:
    database = tmp_path / "consentry.db"
    async with Server(database, points) as first:
        stopped = await _ask_then_stop_in_the_decided_run(first, points, BEFORE_THE_WRITE)
    consent, seen = stopped.consent, stopped.seen
    assert kinds(seen) == [*ASKED, "run_started", "step", "step"]
    assert _nodes(seen)[-2:] == ["request_note_edit_consent", "apply_note_edit"]
    assert stopped.versions == [(1, "user", None)]
    points.go_on()

    async with Server(database, points) as second:
        joined = await _join_after(second.http, consent.thread_id, seen)

        _assert_recovered(joined, expected=RECOVERED_IN_THE_EFFECT, nodes=["apply_note_edit"])
        await _assert_nothing_lost(second.http, consent.thread_id, seen, joined)
        await _assert_applied_once(
            second.http, consent, triggers=RESUMED_THEN_RECOVERED, decided=stopped.decided
        )


async def test_a_kill_in_the_effect_after_the_write_does_not_write_twice_on_restart(
    tmp_path: Path, points: KillPoints
) -> None:
    database = tmp_path / "consentry.db"
    async with Server(database, points) as first:
        stopped = await _ask_then_stop_in_the_decided_run(first, points, AFTER_THE_WRITE)
    consent, seen = stopped.consent, stopped.seen
    assert kinds(seen) == [*ASKED, "run_started", "step", "step"]
    assert _nodes(seen)[-2:] == ["request_note_edit_consent", "apply_note_edit"]
    # The write committed before the kill; the node's checkpoint was never saved.
    assert stopped.versions == [(1, "user", None), (2, "assistant", consent.approval_id)]
    points.go_on()

    async with Server(database, points) as second:
        joined = await _join_after(second.http, consent.thread_id, seen)

        # The node ran again; the ledger gave back the recorded outcome (version 2).
        _assert_recovered(joined, expected=RECOVERED_IN_THE_EFFECT, nodes=["apply_note_edit"])
        await _assert_nothing_lost(second.http, consent.thread_id, seen, joined)
        await _assert_applied_once(
            second.http, consent, triggers=RESUMED_THEN_RECOVERED, decided=stopped.decided
        )


async def test_a_kill_after_the_graph_asked_and_before_the_run_recorded_it_asks_again(
    tmp_path: Path, points: KillPoints
) -> None:
    """The consent node asked while ``look_aside`` runs beside it; the server dies before the
    run's closing transaction, which stores the interrupt with the consent that asks it: nothing
    of the ask is stored (no interrupt without its consent). The next server closes the dead run
    (``server_restarted``) and its recovery runs the step again, which asks again; the client's
    keyed retry replays both runs, and the decision applies the edit once."""
    database = tmp_path / "consentry.db"
    key = {"Idempotency-Key": "ask-beside"}
    async with Server(database, points) as first:
        note = await _open_note(first.http)
        body = {**_add_line(note), "graph": "aside"}
        points.stop_at(BESIDE_THE_CONSENT)
        async with first.http.stream("POST", "/v1/chat", json=body, headers=key) as response:
            assert response.status_code == 200
            run_id, thread_id = response.headers["X-Run-Id"], response.headers["X-Thread-Id"]
            await points.reached(BESIDE_THE_CONSENT)
            seen = await _read_events(response.aiter_lines(), 4)  # run_started and three steps
            await first.kill()
    assert kinds(seen) == ["run_started", "step", "step", "step"]
    assert not interrupt_stored(database, thread_id)
    points.go_on()

    async with Server(database, points) as second:
        joined = await _join_after(second.http, thread_id, seen)
        assert kinds(joined) == [
            *DEAD_RUN_CLOSED,
            "run_started",
            "step",
            "step",
            "consent",
            "final",
        ]
        assert _only(joined, ErrorEvent).code == "server_restarted"
        assert {e.run_id for e in joined[:2]} == {run_id}
        recovery = joined[2:]
        assert _only(recovery, RunStartedEvent).trigger == "recovery"
        assert sorted(_nodes(recovery)) == ["look_aside", "request_note_edit_consent"]
        assert _reason(recovery[-1]) == "interrupted"
        consent = _only(recovery, ConsentEvent)
        thread = (await second.http.get(f"/v1/threads/{thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("awaiting_consent", "interrupted")
        assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
        await _assert_nothing_lost(second.http, thread_id, seen, joined)

        again = await second.http.post("/v1/chat", json=body, headers=key)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Run-Id"] == run_id
        assert parse_events(again.text) == [*seen, *joined]
        threads = (await second.http.get("/v1/threads")).json()["threads"]
        assert [t["thread_id"] for t in threads] == [thread_id]

        resumed = await chat(second.http, _approve(consent))
        assert kinds(resumed)[-3:] == ["note", "message", "final"]
        await _assert_applied_once(second.http, consent, triggers=["message", "recovery", "resume"])
