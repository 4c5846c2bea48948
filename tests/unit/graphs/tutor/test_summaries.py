"""consentry_graphs.tutor.summaries and passages: what a summary covers (questions and answers,
never an outcome of a consent), where it goes in a note (merged into the one it has, keeping every
line a person wrote), and what the model and a search result read of a note."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.services import NoteSnapshot
from consentry_graphs.tutor import prompts
from consentry_graphs.tutor.passages import PROMPT_CHARS, notes_block, search_excerpt
from consentry_graphs.tutor.replies import is_outcome, say, say_outcome
from consentry_graphs.tutor.summaries import (
    SUMMARY_HEADING,
    as_summary_section,
    discussion,
    has_summary,
    with_summary,
    without_summary,
)

SECTION = f"{SUMMARY_HEADING}\n\n- **Question:** Why?\n  **Answer:** Because."
NEW_SECTION = f"{SUMMARY_HEADING}\n\n- **Question:** How?\n  **Answer:** Like this."


def _note(content: str, title: str = "RAG") -> NoteSnapshot:
    return NoteSnapshot(note_id="n", project_id="p", title=title, content=content, version=1)


# discussion()


def test_the_discussion_leaves_out_requests_about_notes_and_their_outcomes() -> None:
    question, answer = HumanMessage("What is RAG?"), AIMessage("Retrieval first.")
    search, results = HumanMessage("search my notes for RAG"), say("I found 1 note.")
    messages = [
        question,
        answer,
        HumanMessage("Add a summary of our discussion to my note"),
        say_outcome("OK, I left your notes unchanged."),
        HumanMessage("delete this note"),
        say_outcome("There is no note open to delete."),
        search,
        results,
        HumanMessage("A question whose run failed"),
        HumanMessage("Add a summary of our discussion to my note"),  # the request now
    ]

    assert discussion(messages) == [question, answer, search, results]


def test_an_outcome_is_marked_and_an_answer_is_not() -> None:
    assert is_outcome(say_outcome("Done: I updated \u201cRAG\u201d (version 3)."))
    assert not is_outcome(say("I found 1 note."))
    assert not is_outcome(AIMessage("An answer."))


# where the summary goes


def test_a_note_without_a_summary_gets_it_at_its_end() -> None:
    assert with_summary("Line one.\n", NEW_SECTION, drafted_before=None) == (
        f"Line one.\n\n{NEW_SECTION}\n"
    )
    assert with_summary("  \n", NEW_SECTION, drafted_before=None) == f"{NEW_SECTION}\n"


def test_a_new_summary_rewrites_the_tutors_own_section_in_place() -> None:
    content = f"Intro.\n\n{SECTION}\n\n## Later\n\nMore.\n"

    updated = with_summary(content, NEW_SECTION, drafted_before=SECTION)

    assert updated == f"Intro.\n\n{NEW_SECTION}\n\n## Later\n\nMore.\n"


def test_a_new_summary_keeps_the_lines_a_person_changed_in_the_tutors_section() -> None:
    drafted = f"{SECTION}\n\n_Summarized by the offline model._"
    edited = f"{SECTION}\n\n_Summarized by the offline model, edited by me._"
    again = (
        f"{SECTION}\n- **Question:** How?\n  **Answer:** Like this.\n\n"
        "_Summarized by the offline model._"
    )

    updated = with_summary(f"Intro.\n\n{edited}\n", again, drafted_before=drafted)

    assert updated == (
        f"Intro.\n\n{SECTION}\n- **Question:** How?\n  **Answer:** Like this.\n\n"
        "_Summarized by the offline model, edited by me._\n"
    )


def test_a_section_the_tutor_did_not_write_here_is_kept_whole_and_added_to() -> None:
    content = f"Intro.\n\n{SECTION}\n\nMy own line.\n"

    updated = with_summary(content, NEW_SECTION, drafted_before=None)

    assert updated == (
        f"Intro.\n\n{SECTION}\n\nMy own line.\n- **Question:** How?\n  **Answer:** Like this.\n"
    )


def test_a_note_with_several_summaries_gets_the_new_one_in_the_first_and_keeps_the_rest() -> None:
    content = f"Intro.\n\n{SECTION}\n\n## Middle\n\nText.\n\n{SECTION}\n"

    assert with_summary(content, NEW_SECTION, drafted_before=SECTION) == (
        f"Intro.\n\n{NEW_SECTION}\n\n## Middle\n\nText.\n\n{SECTION}\n"
    )


def test_a_subheading_inside_the_summary_belongs_to_it() -> None:
    content = f"Intro.\n\n{SECTION}\n\n### Details\n\nStill the summary.\n"

    assert with_summary(content, NEW_SECTION, drafted_before=SECTION) == (
        f"Intro.\n\n{NEW_SECTION}\n\n### Details\n\nStill the summary.\n"
    )


def test_without_summary_is_what_the_user_wrote() -> None:
    content = f"Intro.\n\n{SECTION}\n\n## Later\n\nMore.\n"

    assert without_summary(content) == "Intro.\n\n## Later\n\nMore."
    assert has_summary(content)
    assert not has_summary(without_summary(content))


def test_a_models_summary_is_put_under_the_summary_heading() -> None:
    assert as_summary_section("## Key points\n\n- One.\n") == f"{SUMMARY_HEADING}\n\n- One."
    assert as_summary_section("- One.") == f"{SUMMARY_HEADING}\n\n- One."
    assert as_summary_section(f"{SECTION}\n") == SECTION


async def test_the_offline_model_and_the_prompt_use_the_summary_heading() -> None:
    summary = await OfflineChatModel().ainvoke(
        [SystemMessage(prompts.SUMMARIZE), HumanMessage("Summarize")]
    )

    assert str(summary.content).startswith(f"{SUMMARY_HEADING}\n")
    assert f'"{SUMMARY_HEADING}"' in prompts.SUMMARIZE


# what the model and a search result read of a note


def test_the_prompt_carries_the_note_without_its_summary_and_escapes_the_title() -> None:
    note = _note(f"RAG looks **documents** up.\n\n{SECTION}\n", title='"Quoted" <RAG>')

    assert notes_block([note, _note("")], "What is RAG?", open_note_id=None) == (
        '<note title="&quot;Quoted&quot; &lt;RAG&gt;">\nRAG looks **documents** up.\n</note>\n'
    )


def test_the_prompt_marks_the_note_the_person_has_open() -> None:
    found = _note("RAG looks documents up.").model_copy(update={"note_id": "found"})
    opened = _note("Kana are syllabaries.", title="Kana").model_copy(update={"note_id": "open"})

    assert notes_block([found, opened], "What is RAG?", open_note_id="open") == (
        '<note title="RAG">\nRAG looks documents up.\n</note>\n'
        '<note title="Kana" open="true">\nKana are syllabaries.\n</note>\n'
    )


def test_a_long_note_reaches_the_prompt_as_its_sentences_about_the_question() -> None:
    filler = "Filler sentence about nothing. " * 60
    note = _note(f"{filler}Chunks are passages.\n\n{filler}")

    assert len(note.content) > PROMPT_CHARS
    assert notes_block([note], "What are chunks?", open_note_id=None) == (
        '<note title="RAG">\nChunks are passages.\n</note>\n'
    )


def test_a_search_result_shows_whole_sentences_about_the_query() -> None:
    note = _note("Intro here. RAG looks **documents** up first, then answers.\n\nOther text.")

    assert search_excerpt(note, "documents") == "RAG looks documents up first, then answers."


def test_a_search_result_found_only_in_the_summary_shows_the_summarys_sentence() -> None:
    note = _note(f"Intro here.\n\n{SECTION}\n")

    assert search_excerpt(note, "because") == "Answer: Because."
    assert search_excerpt(note, "nothing") == "Intro here."
