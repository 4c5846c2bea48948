"""Golden conversations: whole conversations through the tutor graph on the offline model, with
the exact text of every answer, proposal and diff. The offline model is every new user's first
impression and what lands in their notes: whole sentences, no ``**`` copied from a note into an
answer, a summary of the questions and answers only (never "Done: …" or "OK, I left …"), and a
second summary that replaces the first in place. (Through the HTTP API and the real note search:
tests/integration/test_offline_answers_served.py.)"""

from __future__ import annotations

from consentry_graphs.services import NoteSnapshot
from tests.tutor import PROJECT, Tutor

INTRO = "I'm the offline model, so I answer from your notes rather than from general knowledge."
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
KANA = NoteSnapshot(
    note_id="note-kana",
    project_id=PROJECT,
    title="Kana",
    version=1,
    content=(
        "Kana are the two Japanese syllabaries, hiragana and katakana. Each has 46 basic "
        "characters.\n"
        "\n"
        "## Hiragana\n"
        "\n"
        "Hiragana has rounded shapes and writes grammatical endings. For example,\n"
        "**あ** is a and か is ka.\n"
        "\n"
        "## Katakana\n"
        "\n"
        "- Katakana writes borrowed words, e.g. コーヒー (coffee)\n"
        "- It has straight, angular strokes\n"
    ),
)
SPACED_REPETITION = NoteSnapshot(
    note_id="note-srs",
    project_id=PROJECT,
    title="Spaced repetition",
    version=1,
    content=(
        "Spaced repetition means you review a fact just before you would forget it. Each "
        "successful review pushes the next one further away: a card learned today comes back "
        "after a day, then three days, then a week.\n"
    ),
)

KATAKANA_ANSWER = (
    "In \u201cKana\u201d: Kana are the two Japanese syllabaries, hiragana and katakana. "
    "Katakana writes borrowed words, e.g. コーヒー (coffee)."
)
HIRAGANA_RESULT = (
    "In \u201cKana\u201d: Kana are the two Japanese syllabaries, hiragana and katakana. "
    "Hiragana has rounded shapes and writes grammatical endings."
)
HIRAGANA_ANSWER = (
    "In \u201cKana\u201d: Kana are the two Japanese syllabaries, hiragana and katakana. "
    "Hiragana has rounded shapes and writes grammatical endings. "
    "Katakana writes borrowed words, e.g. コーヒー (coffee)."
)
FIRST_QUESTIONS = (
    "## Summary of our discussion\n"
    "\n"
    "- **Question:** What is katakana for?\n"
    f"  **Answer:** {KATAKANA_ANSWER}\n"
    "- **Question:** search my notes for hiragana\n"
    f"  **Answer:** {HIRAGANA_RESULT}\n"
)
SIGNATURE = "\n_Summarized by the offline model._\n"


async def test_a_discussion_about_an_open_note_summarized_then_summarized_again() -> None:
    tutor = Tutor.with_notes(KANA, SPACED_REPETITION)

    katakana = await tutor.say("What is katakana for?", note_id=KANA.note_id)
    search = await tutor.say("search my notes for hiragana", note_id=KANA.note_id)
    await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    rejected_id, rejected = await tutor.pending()
    rejection = await tutor.decide(rejected_id, "reject", comment="later")
    await tutor.say(ASK_FOR_SUMMARY, note_id=KANA.note_id)
    first_id, first = await tutor.pending()
    applied = await tutor.decide(first_id, "approve")
    hiragana = await tutor.say("What does hiragana write?", note_id=KANA.note_id)
    await tutor.say("Please save this to my notes.", note_id=KANA.note_id)
    second_id, second = await tutor.pending()
    applied_again = await tutor.decide(second_id, "approve")

    assert katakana.reply == f"{INTRO} Here is what your notes say:\n- {KATAKANA_ANSWER}"
    assert search.reply == f"I found 1 note matching \u201chiragana\u201d:\n- {HIRAGANA_RESULT}"
    assert rejected.title == "Add a summary to your note \u201cKana\u201d?"
    assert rejected.proposal["proposed_content"] == f"{KANA.content}\n{FIRST_QUESTIONS}{SIGNATURE}"
    assert rejection.reply == "OK, I left your notes unchanged. You said: \u201clater\u201d."
    # The rejected request and its outcome are no part of the discussion.
    assert first.proposal["proposed_content"] == rejected.proposal["proposed_content"]
    assert applied.reply == "Done: I updated \u201cKana\u201d (version 2)."
    assert hiragana.reply == f"{INTRO} Here is what your notes say:\n- {HIRAGANA_ANSWER}"
    # The second summary replaces the first one in place: the diff shows only its new lines.
    assert second.title == "Update the summary in your note \u201cKana\u201d?"
    assert second.proposal["diff"] == (
        "--- Kana (version 2)\n"
        "+++ Kana (proposed)\n"
        "@@ -16,5 +16,7 @@\n"
        f"   **Answer:** {KATAKANA_ANSWER}\n"
        " - **Question:** search my notes for hiragana\n"
        f"   **Answer:** {HIRAGANA_RESULT}\n"
        "+- **Question:** What does hiragana write?\n"
        f"+  **Answer:** {HIRAGANA_ANSWER}\n"
        " \n"
        " _Summarized by the offline model._\n"
    )
    assert applied_again.reply == "Done: I updated \u201cKana\u201d (version 3)."
    assert tutor.store.notes[KANA.note_id].content == (
        f"{KANA.content}\n{FIRST_QUESTIONS}"
        "- **Question:** What does hiragana write?\n"
        f"  **Answer:** {HIRAGANA_ANSWER}\n"
        f"{SIGNATURE}"
    )


async def test_a_discussion_without_an_open_note_saved_as_a_new_note() -> None:
    tutor = Tutor.with_notes(SPACED_REPETITION)

    unknown = await tutor.say("What is photosynthesis?", note_id=None)
    known = await tutor.say("How does spaced repetition work?", note_id=None)
    await tutor.say("Save this as a new note", note_id=None)
    interrupt_id, request = await tutor.pending()
    created = await tutor.decide(interrupt_id, "approve")

    assert unknown.reply == (
        f"{INTRO} I found nothing in this project's notes about \u201cWhat is "
        "photosynthesis?\u201d. Write a note about it, or ask me to add a summary of our "
        "discussion to your note."
    )
    assert known.reply == (
        f"{INTRO} Here is what your notes say:\n"
        "- In \u201cSpaced repetition\u201d: Spaced repetition means you review a fact just "
        "before you would forget it."
    )
    assert (request.kind, request.title) == (
        "note_create",
        "Save a summary as a new note \u201cSummary of our discussion\u201d?",
    )
    assert request.proposal["content"] == (
        "## Summary of our discussion\n"
        "\n"
        "- **Question:** What is photosynthesis?\n"
        "  **Answer:** Your notes say nothing about it yet.\n"
        "- **Question:** How does spaced repetition work?\n"
        "  **Answer:** In \u201cSpaced repetition\u201d: Spaced repetition means you review a "
        "fact just before you would forget it.\n"
        "\n"
        "_Summarized by the offline model._\n"
    )
    assert created.reply == "Done: I created the new note \u201cSummary of our discussion\u201d."
