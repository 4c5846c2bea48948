"""A golden conversation through the HTTP API, on the real note search of both databases (SQLite
FTS5's ``snippet()`` and PostgreSQL's ``ts_headline`` put ``**`` around the words they matched and
cut mid-sentence): the offline model's answers, search results and summaries are whole sentences
from the note, with no marker, and a second summary replaces the first in place."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent, Event, MessageEvent
from tests.sse import chat

INTRO = "I'm the offline model, so I answer from your notes rather than from general knowledge."
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
NOTE = {
    "title": "RAG",
    "content": (
        "Retrieval-augmented generation looks documents up first. Then it answers from them,\n"
        "and a good answer cites them.\n"
        "\n"
        "## Chunks\n"
        "\n"
        "Documents are split into chunks of a few hundred words. Each chunk is embedded as a "
        "vector.\n"
    ),
}
RETRIEVAL = "In \u201cRAG\u201d: Retrieval-augmented generation looks documents up first."
CHUNKS = (
    "In \u201cRAG\u201d: Documents are split into chunks of a few hundred words. "
    "Each chunk is embedded as a vector."
)
EMBEDDED = (
    "In \u201cRAG\u201d: Retrieval-augmented generation looks documents up first. "
    "Documents are split into chunks of a few hundred words. Each chunk is embedded as a vector."
)


def _said(events: list[Event]) -> str:
    return next(e.content for e in events if isinstance(e, MessageEvent))


def _asked(events: list[Event]) -> ConsentEvent:
    return next(e for e in events if isinstance(e, ConsentEvent))


async def test_a_conversation_gives_whole_sentences_and_one_summary_section(
    client: httpx.AsyncClient,
) -> None:
    project = (await client.get("/v1/projects")).json()["projects"][0]
    note = (await client.post(f"/v1/projects/{project['project_id']}/notes", json=NOTE)).json()
    about: dict[str, Any] = {"note_id": note["note_id"]}
    first = await chat(client, {"message": "What is retrieval?", **about})
    thread = {"thread_id": first[0].thread_id, **about}
    search = await chat(client, {"message": "search my notes for chunks", **thread})
    summary = _asked(await chat(client, {"message": ASK_FOR_SUMMARY, **thread}))
    resume = {"approval_id": summary.approval_id, "decision": "approve"}
    applied = await chat(client, {"thread_id": thread["thread_id"], "resume": resume})
    again = await chat(client, {"message": "How are documents embedded?", **thread})
    second = _asked(await chat(client, {"message": ASK_FOR_SUMMARY, **thread}))

    assert _said(first) == f"{INTRO} Here is what your notes say:\n- {RETRIEVAL}"
    assert _said(search) == f"I found 1 note matching \u201cchunks\u201d:\n- {CHUNKS}"
    assert summary.title == "Add a summary to your note \u201cRAG\u201d?"
    assert summary.proposal["proposed_content"] == (
        f"{NOTE['content']}\n"
        "## Summary of our discussion\n"
        "\n"
        "- **Question:** What is retrieval?\n"
        f"  **Answer:** {RETRIEVAL}\n"
        "- **Question:** search my notes for chunks\n"
        f"  **Answer:** {CHUNKS}\n"
        "\n"
        "_Summarized by the offline model._\n"
    )
    assert _said(applied) == "Done: I updated \u201cRAG\u201d (version 2)."
    assert _said(again) == f"{INTRO} Here is what your notes say:\n- {EMBEDDED}"
    assert second.title == "Update the summary in your note \u201cRAG\u201d?"
    assert second.proposal["diff"] == (
        "--- RAG (version 2)\n"
        "+++ RAG (proposed)\n"
        "@@ -11,5 +11,7 @@\n"
        f"   **Answer:** {RETRIEVAL}\n"
        " - **Question:** search my notes for chunks\n"
        f"   **Answer:** {CHUNKS}\n"
        "+- **Question:** How are documents embedded?\n"
        f"+  **Answer:** {EMBEDDED}\n"
        " \n"
        " _Summarized by the offline model._\n"
    )
