"""The tutor's summaries never take a person's words away, and never ask for a change that
changes nothing: after a person edited the tutor's summary, the next summary keeps their text;
a summary of nothing discussed, or of nothing new, is not proposed; a new conversation adds to an
earlier conversation's summary instead of replacing it."""

from __future__ import annotations

from consentry_graphs.services import NoteSnapshot
from tests.tutor import INTERRUPTED, PROJECT, Tutor

ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
KANA = NoteSnapshot(
    note_id="note-kana",
    project_id=PROJECT,
    title="Kana",
    version=1,
    content=(
        "Kana are the two Japanese syllabaries, hiragana and katakana.\n"
        "\n"
        "Hiragana writes grammatical endings. Katakana writes borrowed words.\n"
    ),
)
SIGNED = "_Summarized by the offline model._"
EDITED_SIGNATURE = "_Summarized by the offline model, edited by me._"


def _removed(diff: str) -> list[str]:
    return [
        line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")
    ]


def _added(diff: str) -> list[str]:
    return [
        line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    ]


async def test_the_next_summary_keeps_what_the_person_wrote_into_the_last_one() -> None:
    tutor = Tutor.with_notes(KANA)
    await tutor.say("What is katakana for?", note_id=KANA.note_id)
    await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    first_id, first = await tutor.pending()
    mine = first.proposal["proposed_content"].replace(SIGNED, EDITED_SIGNATURE)
    assert mine != first.proposal["proposed_content"]
    await tutor.decide(first_id, "edit", edited={"content": mine})

    await tutor.say("What does hiragana write?", note_id=KANA.note_id)
    await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    _, second = await tutor.pending()

    assert second.title == "Update the summary in your note \u201cKana\u201d?"
    assert second.proposal["base_content"] == mine
    assert _removed(second.proposal["diff"]) == []
    assert _added(second.proposal["diff"]) == [
        "+- **Question:** What does hiragana write?",
        "+  **Answer:** In \u201cKana\u201d: Kana are the two Japanese syllabaries, hiragana and "
        "katakana. Hiragana writes grammatical endings. Katakana writes borrowed words.",
    ]
    assert second.proposal["proposed_content"].endswith(f"\n{EDITED_SIGNATURE}\n")
    assert second.proposal["person_lines_removed"] == 0


async def test_a_summary_with_nothing_new_is_not_asked() -> None:
    tutor = Tutor.with_notes(KANA)
    await tutor.say("What is katakana for?", note_id=KANA.note_id)
    await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    interrupt_id, _ = await tutor.pending()
    await tutor.decide(interrupt_id, "approve")
    written = tutor.store.notes[KANA.note_id]

    again = await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)

    assert again.nodes == ["analyze_message", "draft_note_edit", "report_nothing_to_draft"]
    assert INTERRUPTED not in again.nodes
    assert not await tutor.has_pending()
    assert again.reply == (
        "Your note already has everything we discussed: there is nothing to change."
    )
    assert tutor.store.notes[KANA.note_id] == written


async def test_a_summary_of_a_conversation_with_nothing_discussed_is_not_asked() -> None:
    for note_id, draft in ((KANA.note_id, "draft_note_edit"), (None, "draft_note_creation")):
        tutor = Tutor.with_notes(KANA)

        turn = await tutor.say(ASK_FOR_SUMMARY, note_id=note_id)

        assert turn.nodes == ["analyze_message", draft, "report_nothing_to_draft"]
        assert not await tutor.has_pending()
        assert turn.reply == (
            "We have not discussed anything yet in this conversation, so there is no summary "
            "to save. Ask me a question first."
        )
        assert tutor.store.notes[KANA.note_id] == KANA


async def test_a_new_conversation_adds_to_the_summary_an_earlier_one_wrote() -> None:
    first = Tutor.with_notes(KANA)
    await first.say("What is katakana for?", note_id=KANA.note_id)
    await first.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    interrupt_id, _ = await first.pending()
    await first.decide(interrupt_id, "approve")
    earlier = first.store.notes[KANA.note_id].content
    second = Tutor(first.store, first.graph, {"configurable": {"thread_id": "thread-2"}})

    await second.say("What does hiragana write?", note_id=KANA.note_id)
    await second.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    _, proposal = await second.pending()

    assert proposal.proposal["base_content"] == earlier
    assert _removed(proposal.proposal["diff"]) == []
    assert proposal.proposal["proposed_content"].startswith(earlier.split(f"\n{SIGNED}")[0])
    assert "+- **Question:** What does hiragana write?" in _added(proposal.proposal["diff"])
