"""Reading SSE responses in tests: parse frames into typed events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from consentry.schemas.events import EVENT_ADAPTER, Event


@dataclass(frozen=True)
class Frame:
    event: str
    id: str
    data: Any


def parse_frames(body: str) -> list[Frame]:
    frames: list[Frame] = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))
        if "data" in fields:
            frames.append(
                Frame(
                    event=fields.get("event", ["message"])[0],
                    id=fields.get("id", [""])[0],
                    data="\n".join(fields["data"]),
                )
            )
    return frames


def parse_events(body: str) -> list[Event]:
    events = []
    for frame in parse_frames(body):
        event = EVENT_ADAPTER.validate_json(frame.data)
        assert frame.event == event.type, "SSE `event:` must be the event type"
        assert frame.id == str(event.seq), "SSE `id:` must be the event seq"
        events.append(event)
    return events


def numbering(events: list[Event]) -> list[int]:
    """The seqs the protocol gives ``events`` (a stream as a client got it): each stored event
    (all but ``token``) the next number after the first event's, with no gap; each ``token``
    the number of the stored event before it. Compare with ``[e.seq for e in events]``."""
    expected: list[int] = []
    last = events[0].seq - 1 if events else 0
    for event in events:
        if event.type != "token":
            last += 1
        expected.append(last)
    return expected


def assert_numbered(events: list[Event], *, first: int | None = None) -> None:
    """``events`` are numbered as the protocol says (``numbering``), from ``first`` if given."""
    seqs = [e.seq for e in events]
    assert seqs == numbering(events), seqs
    if first is not None:
        assert events[0].seq == first, seqs


def kinds(events: list[Event], *, tokens: bool = False) -> list[str]:
    """The event types in order; token events collapsed unless asked for."""
    return [e.type for e in events if tokens or e.type != "token"]


async def chat_raw(client: httpx.AsyncClient, body: Mapping[str, Any]) -> tuple[str, list[Event]]:
    """A chat request's raw SSE body (to look for leaks) and its parsed events."""
    response = await client.post("/v1/chat", json=dict(body))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return response.text, parse_events(response.text)


async def chat(
    client: httpx.AsyncClient, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> list[Event]:
    response = await client.post("/v1/chat", json=dict(body), headers=dict(headers or {}))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_events(response.text)


async def next_event(lines: AsyncIterator[str]) -> Event:
    """Read SSE lines up to the end of the next event frame (comments are skipped)."""
    block: list[str] = []
    async for line in lines:
        if line:
            block.append(line)
            continue
        events = parse_events("\n".join(block) + "\n\n")
        block = []
        if events:
            (event,) = events
            return event
    raise AssertionError("the stream ended before the next event")


ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
QUESTION = "What is retrieval?"
OFFLINE_ANSWER = (  # the offline model's answer to QUESTION, with no notes in the project
    "I'm the offline model, so I answer from your notes rather than from general knowledge. "
    "I found nothing in this project's notes about \u201cWhat is retrieval?\u201d. Write a note "
    "about it, or ask me to add a summary of our discussion to your note."
)
SUMMARY_TITLE = "Summary of our discussion"
DRAFTED_NOTE = f"I drafted a new note, \u201c{SUMMARY_TITLE}\u201d."
"""What the tutor says before it asks to save a summary as a new note."""
ASK_FOR_REVIEW = "Write a weekly review of my project's notes"
REVIEWED_NOTES = (
    ("RAG", "Retrieval-augmented generation uses documents. It cites them."),
    ("Spaced repetition", "You review a fact just before you would forget it."),
)
"""A project's notes (title, content), written in this order."""
OFFLINE_REVIEW = (
    "## Notes reviewed\n"
    "\n"
    "- **Spaced repetition**: You review a fact just before you would forget it.\n"
    "- **RAG**: Retrieval-augmented generation uses documents.\n"
    "\n"
    "_Reviewed by the offline model._\n"
)
"""The offline model's review of ``REVIEWED_NOTES``: the note written last first."""
TUTOR_ASKED = ["run_started", "step", "step", "message", "step", "consent", "final"]
"""The event kinds of a tutor's run that drafts a change and asks for it: its steps, what it says
it drafted (the assistant's last message, under which Agent Chat UI draws the consent), the
consent, its end."""
CREATED = f"Done: I created the new note \u201c{SUMMARY_TITLE}\u201d."
"""The offline model's answer once the summary consent is approved (a new note)."""
AGUI_ANSWERED_IN_A_SECOND_STEP = [
    "RUN_STARTED",
    "STEP_STARTED",
    "STEP_FINISHED",
    "STEP_STARTED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "STEP_FINISHED",
    "STATE_SNAPSHOT",
    "RUN_FINISHED",
]
"""AG-UI's events of a two-step run whose second step answers (a run of text contents told
once): the tutor's question, a raw interrupt answered."""


async def after_a_question(
    client: httpx.AsyncClient,
    body: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    *,
    question: str | None = None,
) -> list[Event]:
    """``body`` (a request for a summary, say) sent to a thread that has discussed something:
    the tutor proposes no summary of a conversation in which nothing was discussed yet. Without a
    ``thread_id``, a new thread is asked ``question`` (``QUESTION``) first, with ``body``'s note,
    project, graph and consent policy; the events of ``body``'s run."""
    if "thread_id" not in body:
        kept = ("note_id", "project_id", "graph", "consent_policy")
        about = {k: body[k] for k in kept if k in body}
        first = await chat(client, {**about, "message": question or QUESTION}, headers)
        assert first[-1].type == "final", first
        assert first[-1].reason == "completed", first
        body = {**body, "thread_id": first[0].thread_id}
    return await chat(client, body, headers)


async def a_note_asked_about(
    client: httpx.AsyncClient, *, content: str = "Retrieval first."
) -> tuple[dict[str, Any], list[Event]]:
    """Create a note "RAG" in the caller's default project and ask the tutor ``QUESTION`` about
    it in a new thread: the note, and the question's events (ending ``final`` ``completed``)."""
    projects = (await client.get("/v1/projects")).json()["projects"]
    note: dict[str, Any] = (
        await client.post(
            f"/v1/projects/{projects[0]['project_id']}/notes",
            json={"title": "RAG", "content": content},
        )
    ).json()
    answered = await chat(client, {"message": QUESTION, "note_id": note["note_id"]})
    assert (answered[-1].type, getattr(answered[-1], "reason", None)) == ("final", "completed")
    return note, answered


async def ask_for_note_edit(client: httpx.AsyncClient) -> tuple[dict[str, Any], list[Event]]:
    """:func:`a_note_asked_about`, then a summary asked in its thread: the note, and the summary
    run's events (ending ``consent``, ``final``)."""
    note, answered = await a_note_asked_about(client)
    events = await chat(
        client,
        {
            "thread_id": answered[0].thread_id,
            "message": ASK_FOR_SUMMARY,
            "note_id": note["note_id"],
        },
    )
    assert events[-2].type == "consent", events
    return note, events
