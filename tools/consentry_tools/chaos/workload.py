"""The chaos clients: each on its own note and thread, doing message → consent → decision like a
person in a browser tab, through kills.

A client sends every logical request with a fresh ``Idempotency-Key`` and, when the attempt
breaks (connection refused or reset, stream cut), sends the same request with the same key
again once a server answers; ``409 request_in_progress`` and ``run_in_progress`` also mean "try
again with the same key" (after the thread's run ended). Between steps it waits for its thread
to settle by joining ``GET /v1/threads/{id}/stream`` with ``Last-Event-ID`` (the last durable
event it saw) and reading the thread, within a bounded time.

Odd clients ask a question first (its answer streams tokens); every client then asks for a
summary in its note, and decides the consent: approve, edit or reject (seeded), sometimes raced by
a second, different decision on the other channel (a second tab). The last client of a trial
leaves its last consent undecided: it must survive the kills, pending.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from consentry_tools.chaos.observations import ClientLog, Event, KeyedRequest
from consentry_tools.chaos.violations import InvariantName, Violation
from consentry_tools.chaos.wire import Wire

__all__ = ["Client", "ClientPlan", "Progress"]

Decision = Literal["approve", "edit", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "edit", "reject")
RETRY_FIRST_SECONDS = 0.05
RETRY_MAX_SECONDS = 0.5
BUSY_CODES = frozenset(
    {"request_in_progress", "database_unavailable", "storage_full", "rate_limited"}
)
RUN_UNDER_WAY = frozenset({"run_started", "step", "message", "note", "model_retry"})
"""Events after which the run still has work to do (``consent`` and ``final`` come after its
closing transaction; ``token`` events are too many to weigh the same)."""


class Progress:
    """How far the clients' runs got (a tick per event that says a run is under way: its start,
    a step, a message, a note) and how many of their requests are open; the killer waits for a
    tick count, so that a kill lands inside a run however fast the machine is."""

    def __init__(self) -> None:
        self.ticks = 0
        self.open_requests = 0
        self.finished = False
        self._waiting: list[tuple[int, asyncio.Event]] = []

    def tick(self) -> None:
        self.ticks += 1
        for ticks, reached in self._waiting:
            if self.ticks >= ticks:
                reached.set()

    def finish(self) -> None:
        """The clients are done: whoever waits for more ticks goes on now."""
        self.finished = True
        for _, reached in self._waiting:
            reached.set()

    async def reached(self, ticks: int) -> None:
        """Until ``ticks`` were counted, or the clients are done."""
        reached = asyncio.Event()
        if self.ticks >= ticks or self.finished:
            return
        self._waiting.append((ticks, reached))
        try:
            await reached.wait()
        finally:
            self._waiting.remove((ticks, reached))


@dataclass(frozen=True)
class ClientPlan:
    trial: int
    seed: int
    conversations: int
    race_rate: float
    settle_seconds: float
    """How long a thread may take to settle (no run left) before the client reports it stuck."""
    leaves_last_consent: bool


class Client:
    def __init__(
        self,
        index: int,
        *,
        servers: Sequence[str],
        plan: ClientPlan,
        progress: Progress,
        rng: random.Random,
    ) -> None:
        self.index = index
        self.log = ClientLog(client=index, note_id="")
        self._plan = plan
        self._progress = progress
        self._rng = rng
        self._wire = Wire(servers, rng=rng, on_event=self._saw)
        self._thread_id: str | None = None
        self._requests = 0
        self._rejoin_from_start: set[str] = set()

    @property
    def tag(self) -> str:
        return f"{self._plan.trial}.{self.index}"

    async def aclose(self) -> None:
        await self._wire.aclose()

    async def open_note(self) -> None:
        """A note of its own in the default project (before any kill)."""
        projects = await self._wire.get_json("/v1/projects")
        if not projects:
            raise RuntimeError("GET /v1/projects failed before the trial started")
        project = next(p for p in projects["projects"] if p["is_default"])
        note = await self._wire.post_note(
            f"/v1/projects/{project['project_id']}/notes",
            {"title": f"Chaos {self.tag}", "content": f"Chaos trial notes {self.tag}.\n"},
        )
        if not note:
            raise RuntimeError("creating a note failed before the trial started")
        self.log.note_id = note["note_id"]

    async def run(self) -> None:
        for number in range(self._plan.conversations):
            await self._conversation(number, last=number == self._plan.conversations - 1)
            self.log.conversations += 1

    async def _conversation(self, number: int, *, last: bool) -> None:
        tag = f"{self.tag}.{number}"
        if self.index % 2 == 1:
            await self._message(f"What is chaos {tag}?")
            await self._settle()
        await self._message(f"Add a summary of our discussion to my note (chaos {tag})")
        thread = await self._settle()
        leave = last and self._plan.leaves_last_consent
        if thread is not None and not leave:
            for consent in thread.get("pending_consents", []):
                await self._decide(consent)
            await self._settle()

    async def _message(self, text: str) -> None:
        body: dict[str, Any] = {"message": text, "note_id": self.log.note_id}
        if self._thread_id is not None:
            body["thread_id"] = self._thread_id
        request = self._request("message", "/v1/chat", body, text=text)
        await self._send(request)
        answered = [a.thread_id for a in request.attempts if a.thread_id]
        if self._thread_id is None and answered:
            self._thread_id = answered[-1]

    async def _decide(self, consent: Event) -> None:
        allowed = [d for d in DECISIONS if d in consent.get("allowed_decisions", [])]
        if consent.get("kind") != "note_edit":
            allowed = [d for d in allowed if d != "edit"]
        if not allowed:
            return
        decision = self._rng.choice(allowed)
        channel = self._rng.choice(("chat", "inbox"))
        requests = [self._decision(consent, decision, channel)]
        if self._rng.random() < self._plan.race_rate and len(allowed) > 1:
            other = self._rng.choice([d for d in allowed if d != decision])
            requests.append(
                self._decision(consent, other, "inbox" if channel == "chat" else "chat")
            )
        await asyncio.gather(*(self._send(r) for r in requests))

    def _decision(self, consent: Event, decision: Decision, channel: str) -> KeyedRequest:
        approval_id = str(consent["approval_id"])
        edited = None
        if decision == "edit":
            proposed = str(consent["proposal"]["proposed_content"])
            edited = {"content": f"{proposed}\nEdited by chaos client {self.tag}.\n"}
        choice: dict[str, Any] = {"decision": decision}
        if edited is not None:
            choice["edited"] = edited
        if channel == "chat":
            path = "/v1/chat"
            body: dict[str, Any] = {
                "thread_id": consent["thread_id"],
                "resume": {"approval_id": approval_id, **choice},
            }
        else:
            path, body = f"/v1/approvals/{approval_id}/decision", choice
        request = self._request("decision", path, body)
        request.thread_id = str(consent["thread_id"])
        request.approval_id, request.decision, request.edited = approval_id, decision, edited
        return request

    def _request(
        self, kind: Literal["message", "decision"], path: str, body: dict[str, Any], **more: Any
    ) -> KeyedRequest:
        self._requests += 1
        key = f"chaos-{self._plan.seed}-{self.tag}-{self._requests}"
        request = KeyedRequest(kind, key, path, body, self.index, thread_id=self._thread_id, **more)
        self.log.requests.append(request)
        return request

    async def _send(self, request: KeyedRequest) -> None:
        """Until the request is answered: retried with the same key while no server answers, the
        stream is cut, or the server says to try again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._plan.settle_seconds
        pause = RETRY_FIRST_SECONDS
        while True:
            self._progress.open_requests += 1
            try:
                # Bounded as a whole: a stream kept open by keep-alives, its run never ending,
                # is a stuck thread to report, not a trial to hang.
                async with asyncio.timeout(max(deadline - loop.time(), RETRY_MAX_SECONDS)):
                    if request.path == "/v1/chat":
                        attempt = await self._wire.post_stream(
                            request.path, request.body, key=request.key
                        )
                    else:
                        attempt = await self._wire.post_json(
                            request.path, request.body, key=request.key
                        )
            except TimeoutError:
                self._problem(
                    "thread_stuck",
                    request.thread_id,
                    f"{request.describe()}: an answer still open after "
                    f"{self._plan.settle_seconds:.0f} s (attempt {len(request.attempts) + 1})",
                )
                return
            finally:
                self._progress.open_requests -= 1
            request.attempts.append(attempt)
            self.log.told_of(attempt.thread_id)
            if attempt.failure is None and attempt.status in (200, 202):
                return
            busy = attempt.code in BUSY_CODES or attempt.status in (429, 503, 507)
            thread_busy = attempt.code == "run_in_progress"
            if attempt.failure is None and not busy and not thread_busy:
                return  # refused: it did not run
            if loop.time() > deadline:
                self._problem(
                    "thread_stuck",
                    request.thread_id,
                    f"{request.describe()} still unanswered after "
                    f"{self._plan.settle_seconds:.0f} s ({len(request.attempts)} attempts, last "
                    f"{attempt.status} {attempt.code})",
                )
                return
            if thread_busy:
                await self._settle(request.thread_id)
            else:
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_SECONDS)

    async def _settle(self, thread_id: str | None = None) -> dict[str, Any] | None:
        """Follow the thread until no run is left on it; the thread as ``GET`` shows it then."""
        thread_id = thread_id or self._thread_id
        if thread_id is None:
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._plan.settle_seconds
        pause = RETRY_FIRST_SECONDS
        while loop.time() < deadline:
            after = (
                None if thread_id in self._rejoin_from_start else self.log.seen.last_seq(thread_id)
            )
            try:
                async with asyncio.timeout(max(deadline - loop.time(), RETRY_MAX_SECONDS)):
                    joined = await self._wire.join(thread_id, after=after)
            except TimeoutError:
                break  # (a stream kept open past the bound: reported below)
            if joined.code == "invalid_last_event_id":
                self._rejoin_from_start.add(thread_id)
                self._problem(
                    "replay",
                    thread_id,
                    f"rejoining after seq {after}, an event this client received live, was "
                    "refused with 400 invalid_last_event_id",
                )
            thread = await self._wire.get_json(f"/v1/threads/{thread_id}")
            if thread is not None and thread["status"] != "running":
                result: dict[str, Any] = thread
                return result
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_SECONDS)
        self._problem(
            "thread_stuck",
            thread_id,
            f"the thread still had a run after {self._plan.settle_seconds:.0f} s",
        )
        return None

    def _saw(self, event: Event) -> None:
        if event.get("type") in RUN_UNDER_WAY:
            self._progress.tick()
        self.log.seen.add(event)
        self.log.told_of(event.get("thread_id"))

    def _problem(self, invariant: InvariantName, thread_id: str | None, detail: str) -> None:
        violation = Violation(invariant, thread_id, f"client {self.tag}: {detail}")
        if violation not in self.log.problems:
            self.log.problems.append(violation)
