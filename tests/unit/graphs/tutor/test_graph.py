"""The tutor graph runs on its own: plain LangGraph, an in-memory checkpointer, the offline model
and a notes store written in tests/tutor.py. Answers and searches, and the note-edit consent:
consent only asks; the write happens after approval, once. (Creating and deleting notes:
test_graph_note_create_and_delete.py.)"""

from __future__ import annotations

import pytest

from consentry_graphs.consent import ConsentRequest
from consentry_graphs.tutor.graph import CONSENT_KINDS, STEP_LABELS
from consentry_graphs.tutor.memory_notes import EffectCall
from tests.tutor import INTERRUPTED, NOTE, PROJECT, Tutor

ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
ASKED = ["analyze_message", "draft_note_edit", "request_note_edit_consent", INTERRUPTED]


@pytest.fixture
def tutor() -> Tutor:
    return Tutor.with_notes(NOTE)


async def _consent_after_a_question(tutor: Tutor) -> tuple[str, ConsentRequest]:
    await tutor.say("What is retrieval?")
    turn = await tutor.say(ASK_FOR_SUMMARY)
    assert turn.nodes == ASKED
    return await tutor.pending()


async def test_a_question_is_answered_from_the_stores_notes(tutor: Tutor) -> None:
    turn = await tutor.say("What is retrieval?", note_id=None)

    assert turn.nodes == ["analyze_message", "answer_question"]
    assert "offline model" in turn.reply
    assert "- In \u201cRAG\u201d: Retrieval-augmented generation uses documents." in turn.reply
    assert not await tutor.has_pending()
    assert tutor.store.calls == []


async def test_a_search_request_reports_the_stores_hits(tutor: Tutor) -> None:
    turn = await tutor.say("search my notes for documents.")

    assert turn.nodes == ["analyze_message", "search_notes", "report_search_results"]
    assert turn.reply == (
        "I found 1 note matching \u201cdocuments\u201d:\n"
        "- In \u201cRAG\u201d: Retrieval-augmented generation uses documents."
    )


async def test_an_edit_request_interrupts_with_a_note_edit_consent_and_writes_nothing(
    tutor: Tutor,
) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)

    assert request.kind == "note_edit"
    assert request.title == "Add a summary to your note \u201cRAG\u201d?"
    assert request.allowed_decisions == ["approve", "edit", "reject"]
    assert (request.ttl_seconds, request.always_ask) == (None, False)
    proposal = request.proposal
    assert (proposal["project_id"], proposal["note_id"], proposal["title"]) == (
        PROJECT,
        NOTE.note_id,
        "RAG",
    )
    assert (proposal["base_version"], proposal["base_content"]) == (1, NOTE.content)
    assert proposal["proposed_content"].startswith(NOTE.content + "\n\n## Summary of our")
    assert "- **Question:** What is retrieval?" in proposal["proposed_content"]
    assert ASK_FOR_SUMMARY not in proposal["proposed_content"]
    assert "+## Summary of our discussion\n" in proposal["diff"]
    assert interrupt_id
    state = await tutor.graph.aget_state(tutor.config)
    assert state.next == ("request_note_edit_consent",)
    assert tutor.store.calls == []
    assert tutor.store.notes[NOTE.note_id] == NOTE


async def test_an_edit_request_whose_note_was_deleted_meanwhile_asks_nothing(
    tutor: Tutor,
) -> None:
    del tutor.store.notes[NOTE.note_id]

    turn = await tutor.say(ASK_FOR_SUMMARY)

    assert turn.nodes == ["analyze_message", "draft_note_edit", "report_no_open_note"]
    assert turn.reply == "The note you had open no longer exists, so I changed nothing."
    assert not await tutor.has_pending()


async def test_approve_applies_the_proposed_content_exactly_once(tutor: Tutor) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)

    turn = await tutor.decide(interrupt_id, "approve")

    assert turn.nodes == ["request_note_edit_consent", "apply_note_edit"]
    assert tutor.store.calls == [
        EffectCall(
            "apply_note_edit",
            interrupt_id,
            {
                "note_id": NOTE.note_id,
                "title": "RAG",
                "content": request.proposal["proposed_content"],
                "base_version": 1,
            },
        )
    ]
    written = tutor.store.notes[NOTE.note_id]
    assert (written.version, written.content) == (2, request.proposal["proposed_content"])
    assert turn.notes_sent == [{"event": "note", **written.model_dump()}]
    assert turn.reply == "Done: I updated \u201cRAG\u201d (version 2)."
    state = await tutor.graph.aget_state(tutor.config)
    assert (state.next, state.interrupts, state.values["proposal"]) == ((), (), None)


async def test_edit_applies_the_persons_version_instead(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)
    mine = "My own summary."

    turn = await tutor.decide(interrupt_id, "edit", edited={"content": mine, "title": "RAG notes"})

    assert [(c.args["content"], c.args["title"]) for c in tutor.store.calls] == [
        (mine, "RAG notes")
    ]
    assert turn.reply == "Done: I saved your edit to \u201cRAG notes\u201d (version 2)."


async def test_reject_never_applies_anything(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)

    turn = await tutor.decide(interrupt_id, "reject", comment="not now")

    assert turn.nodes == ["request_note_edit_consent", "skip_note_edit"]
    assert tutor.store.calls == []
    assert tutor.store.notes[NOTE.note_id] == NOTE
    assert turn.reply == "OK, I left your notes unchanged. You said: \u201cnot now\u201d."


async def test_an_expired_edit_never_applies_anything(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)

    turn = await tutor.decide(interrupt_id, "expire")

    assert turn.nodes == ["request_note_edit_consent", "skip_note_edit"]
    assert tutor.store.calls == []
    assert turn.reply == (
        "Nobody decided on my proposed edit in time, so I left your notes unchanged."
    )


async def test_a_rerun_of_the_apply_step_passes_the_same_approval_id_and_writes_once(
    tutor: Tutor,
) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)
    await tutor.decide(interrupt_id, "approve")
    history = [snapshot async for snapshot in tutor.graph.aget_state_history(tutor.config)]
    before_apply = next(s for s in history if s.next == ("apply_note_edit",))

    replayed = await tutor.run(None, before_apply.config)

    assert replayed.nodes == ["apply_note_edit"]
    assert len(tutor.store.calls) == 2
    assert tutor.store.calls[0] == tutor.store.calls[1]
    assert tutor.store.calls[1].approval_id == interrupt_id
    assert tutor.store.writes == 1
    assert tutor.store.notes[NOTE.note_id].version == 2
    assert replayed.reply == "Done: I updated \u201cRAG\u201d (version 2)."
    assert tutor.store.notes[NOTE.note_id].content == request.proposal["proposed_content"]


async def test_a_note_changed_since_the_draft_is_not_overwritten(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)
    changed = NOTE.model_copy(update={"content": "Rewritten meanwhile.", "version": 2})
    tutor.store.notes[NOTE.note_id] = changed

    turn = await tutor.decide(interrupt_id, "approve")

    assert tutor.store.writes == 0
    assert tutor.store.notes[NOTE.note_id] == changed
    assert turn.notes_sent == []
    assert turn.reply == (
        "Nothing was written: \u201cRAG\u201d changed since I drafted this edit "
        "(version 1 \u2192 2). Ask me again to draft it on the current version."
    )


def test_every_node_has_a_step_label_and_every_kind_is_registered(tutor: Tutor) -> None:
    nodes = set(tutor.graph.get_graph().nodes) - {"__start__", "__end__"}

    assert nodes == set(STEP_LABELS)
    assert list(CONSENT_KINDS) == ["note_edit", "note_create", "note_delete"]
