"""consentry_graphs.sentences: a note's whole sentences (never cut, no ``**``), and the ones about a
question."""

from __future__ import annotations

import pytest

from consentry_graphs.sentences import about, leading, sentences, shorten, words

NOTE = (
    "# Retrieval\n"
    "\n"
    "Retrieval looks documents up first. Then the model\n"
    "answers from **them**, e.g. with citations.\n"
    "\n"
    "## Steps\n"
    "\n"
    "- Split the documents into chunks\n"
    "- Embed every chunk:\n"
    "  a vector per chunk\n"
    "1. Fetch the closest chunks!\n"
    "\n"
    "```python\n"
    "print('Not a sentence.')\n"
    "```\n"
    "| table | row |\n"
    "Dr. Smith wrote it (in 2024). 3.5 is a version.\n"
)


def test_a_notes_sentences_leave_out_headings_code_tables_list_markers_and_bold() -> None:
    assert sentences(NOTE) == [
        "Retrieval looks documents up first.",
        "Then the model answers from them, e.g. with citations.",
        "Split the documents into chunks.",
        "Embed every chunk: a vector per chunk.",
        "Fetch the closest chunks!",
        "Dr. Smith wrote it (in 2024).",
        "3.5 is a version.",
    ]


@pytest.mark.parametrize(
    ("text", "split"),
    [
        ("One. Two.", ["One.", "Two."]),
        ("Kana, e.g. コーヒー (coffee). Next.", ["Kana, e.g. コーヒー (coffee).", "Next."]),
        ('He said "Go." Then left', ['He said "Go."', "Then left."]),
        ("A list follows:", ["A list follows:"]),
        ("Ends in a quote \u201clike this\u201d", ["Ends in a quote \u201clike this\u201d."]),
        ("not split. lower case goes on.", ["not split. lower case goes on."]),
    ],
)
def test_sentences_split_where_a_new_sentence_starts(text: str, split: list[str]) -> None:
    assert sentences(text) == split


def test_topic_words_leave_out_question_words_and_a_plurals_s() -> None:
    assert words("What are the reviews of kana about, and how does a class work?") == {
        "review",
        "kana",
        "class",
        "work",
    }


def test_about_picks_the_sentences_with_the_questions_words_in_order() -> None:
    found = sentences(NOTE)

    assert about(found, "How are chunks fetched?", limit=1000) == [
        "Split the documents into chunks.",
        "Embed every chunk: a vector per chunk.",
        "Fetch the closest chunks!",
    ]


def test_about_nothing_gives_the_first_sentences_that_fit() -> None:
    found = sentences(NOTE)

    assert about(found, "What is photosynthesis?", limit=90) == [
        "Retrieval looks documents up first.",
        "Then the model answers from them, e.g. with citations.",
    ]


def test_leading_never_cuts_a_sentence_unless_the_first_alone_is_too_long() -> None:
    assert leading(["Short one.", "A second sentence."], 15) == ["Short one."]
    assert leading(["A sentence far longer than the limit."], 20) == ["A sentence far\u2026"]
    assert leading([], 20) == []


def test_shorten_cuts_at_a_word_on_one_line() -> None:
    assert shorten("What is\n**retrieval**?", 80) == "What is retrieval?"
    assert shorten("one two three four", 12) == "one two\u2026"
