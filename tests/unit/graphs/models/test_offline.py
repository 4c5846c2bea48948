"""The offline model: keyword intent rules, grounded answers, summaries and word-by-word streaming,
all deterministic."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from consentry_graphs.models.offline import OFFLINE_MODEL_NAME, OfflineChatModel, classify
from consentry_graphs.tutor import prompts

NOTES = (
    '<note title="RAG">\nRetrieval-augmented generation uses documents.\n</note>\n'
    '<note title="Embeddings">\nDense vectors.\n</note>\n'
)


def _answer_prompt(notes: str, question: str, memories: str = "") -> list[BaseMessage]:
    system = prompts.ANSWER.format(notes=notes, memories=memories)
    return [SystemMessage(system), HumanMessage(question)]


async def _text(messages: list[BaseMessage]) -> str:
    reply = await OfflineChatModel().ainvoke(messages)
    return str(reply.content)


# classify()


@pytest.mark.parametrize(
    "message",
    [
        "Add a summary of our discussion to my note",
        "add a summary of our discussion to my note",
        "Please save this to my notes.",
        "Put the key points in my note",
        "Write that down in my note please",
        "Append this to the note",
        "Can you summarize our discussion and put it in my note?",
        "Summarise this into my notes",
        "Could you record our conversation\nin my note?",
        "Write a note about photosynthesis",
        "ok, add this to the note",
        "Add the key points to my RAG note",
    ],
)
def test_asking_to_put_something_in_a_note_routes_to_edit_note(message: str) -> None:
    assert classify(message) == {"intent": "edit_note", "query": ""}


@pytest.mark.parametrize(
    "message",
    [
        "delete this note",
        "remove my note",
        "please delete the note",
        "Please delete this note.",
        "Can you delete my RAG note?",
        "ok, remove the current note",
        "Thanks. Now trash this note",
    ],
)
def test_asking_to_delete_the_note_routes_to_delete_note(message: str) -> None:
    assert classify(message) == {"intent": "delete_note", "query": ""}


@pytest.mark.parametrize(
    "message",
    [
        "What happens if I delete a note?",
        "How do I delete a note?",
        "Can I get a note back after I remove it?",
        "delete my notes",
        "remove the summary from my note",
    ],
)
def test_questions_about_deleting_and_unclear_deletions_are_not_delete_requests(
    message: str,
) -> None:
    assert classify(message)["intent"] != "delete_note"


@pytest.mark.parametrize(
    ("message", "query"),
    [
        ("search my notes for retrieval", "retrieval"),
        ("Search my notes for vector databases", "vector databases"),
        ("find notes about embeddings", "embeddings"),
        ("Find my notes on chunking?", "chunking"),
        ('search notes for "RAG"', "RAG"),
        ("look up my notes about transformers", "transformers"),
        ("Search through all notes mentioning attention.", "attention"),
    ],
)
def test_asking_to_search_notes_routes_to_search_with_the_query(message: str, query: str) -> None:
    assert classify(message) == {"intent": "search", "query": query}


def test_a_search_request_without_a_topic_searches_for_the_whole_message() -> None:
    assert classify("search my notes") == {"intent": "search", "query": "search my notes"}


@pytest.mark.parametrize(
    "message",
    [
        "What is retrieval?",
        "Explain vector search in two sentences",
        "Tell me about my note on RAG",
        "How does chunking affect recall?",
        "Summarize transformers for me",
        "What did I write in my note?",
        "How do I write good notes?",
        "Did you save my note?",
        "Summarize my notes on RAG",
    ],
)
def test_other_messages_route_to_answer_with_the_message_as_query(message: str) -> None:
    assert classify(message) == {"intent": "answer", "query": message}


def test_answer_query_is_the_trimmed_message() -> None:
    assert classify("  What is retrieval?\n") == {"intent": "answer", "query": "What is retrieval?"}


# OfflineChatModel


def test_the_model_identifies_as_the_offline_model() -> None:
    model = OfflineChatModel()

    assert model._llm_type == OFFLINE_MODEL_NAME == "consentry-offline"


async def test_classify_task_answers_with_the_json_of_classify() -> None:
    message = "Can you summarize our discussion and put it in my note?"

    text = await _text([SystemMessage(prompts.CLASSIFY), HumanMessage(message)])

    assert json.loads(text) == classify(message) == {"intent": "edit_note", "query": ""}


async def test_classify_task_reads_the_last_user_message() -> None:
    text = await _text(
        [
            SystemMessage(prompts.CLASSIFY),
            HumanMessage("Add a summary of our discussion to my note"),
            AIMessage("OK."),
            HumanMessage("search my notes for retrieval"),
        ]
    )

    assert json.loads(text) == {"intent": "search", "query": "retrieval"}


async def test_an_answer_says_it_is_the_offline_model_and_cites_the_note_that_fits() -> None:
    text = await _text(_answer_prompt(NOTES, "What is RAG?"))

    assert text == (
        "I'm the offline model, so I answer from your notes rather than from general knowledge. "
        "Here is what your notes say:\n"
        "- In \u201cRAG\u201d: Retrieval-augmented generation uses documents."
    )


SAMPLE_NOTES = "".join(
    f'<note title="{title}"{opened}>\n{text}\n</note>\n'
    for title, opened, text in (
        (
            "Spaced repetition",
            "",
            "You review a fact just before you would forget it. Every review makes the memory "
            "more stable. Apps such as Anki schedule the reviews for you.",
        ),
        (
            "Japanese kana",
            "",
            "Kana are the two Japanese syllabaries. Katakana writes words borrowed from other "
            "languages. For example, \u30b3\u30fc\u30d2\u30fc is k\u014dh\u012b (coffee). "
            "Most learners can read both kana within a few weeks, and spaced repetition makes "
            "them stick.",
        ),
        (
            "Retrieval-augmented generation",
            ' open="true"',
            "A retriever looks up the passages most related to the question. Split the documents "
            "into chunks of a few hundred words.",
        ),
    )
)


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        (
            "Why does spacing help memory?",
            "- In \u201cSpaced repetition\u201d: Every review makes the memory more stable.",
        ),
        (
            "How do I read katakana words like coffee?",
            "- In \u201cJapanese kana\u201d: Katakana writes words borrowed from other languages. "
            "For example, \u30b3\u30fc\u30d2\u30fc is k\u014dh\u012b (coffee). Most learners "
            "can read both kana within a few weeks, and spaced repetition makes them stick.",
        ),
        (
            "What does this note say?",
            "- Your note \u201cRetrieval-augmented generation\u201d says: A retriever looks up the "
            "passages most related to the question. Split the documents into chunks of a few "
            "hundred words.",
        ),
    ],
)
async def test_an_answer_quotes_only_the_note_that_fits_the_question_best(
    question: str, quoted: str
) -> None:
    text = await _text(_answer_prompt(SAMPLE_NOTES, question))

    assert text.splitlines()[1:] == [quoted]


async def test_an_answer_that_no_note_fits_says_so_instead_of_quoting_the_open_note() -> None:
    text = await _text(_answer_prompt(SAMPLE_NOTES, "What is photosynthesis?"))

    assert text == (
        "I'm the offline model, so I answer from your notes rather than from general knowledge. "
        "I found nothing in this project's notes about \u201cWhat is photosynthesis?\u201d. "
        "Write a note about it, or ask me to add a summary of our discussion to your note."
    )


async def test_an_answer_without_notes_says_nothing_was_found() -> None:
    text = await _text(_answer_prompt("", "What is photosynthesis?"))

    assert "offline model" in text
    assert (
        "I found nothing in this project's notes about \u201cWhat is photosynthesis?\u201d" in text
    )
    assert "**" not in text


LONG_NOTE = (
    "# Retrieval\n"
    "\n"
    "Retrieval-augmented generation looks documents up before it answers. The model then\n"
    "answers from the passages it found. Chunking splits documents into passages of a few\n"
    "hundred words, and a passage that is too small loses its context.\n"
    "\n"
    "- Embeddings are dense vectors\n"
    "- The **retriever** ranks the passages by similarity, e.g. cosine similarity\n"
    "\n"
    "Good retrieval needs good chunks. " + "Filler sentence about nothing much. " * 20
)


async def test_an_answer_quotes_the_notes_whole_sentences_about_the_question() -> None:
    notes = f'<note title="Retrieval">\n{LONG_NOTE}\n</note>\n'

    text = await _text(_answer_prompt(notes, "How do chunks and passages work?"))

    assert text.splitlines()[1] == (
        "- In \u201cRetrieval\u201d: The model then answers from the passages it found. Chunking "
        "splits documents into passages of a few hundred words, and a passage that is too small "
        "loses its context. The retriever ranks the passages by similarity, e.g. cosine "
        "similarity. Good retrieval needs good chunks."
    )


async def test_an_answer_quotes_at_most_300_characters_of_a_note_in_whole_sentences() -> None:
    notes = f'<note title="Retrieval">\n{LONG_NOTE}\n</note>\n'

    text = await _text(_answer_prompt(notes, "What about Retrieval?"))

    bullet = text.splitlines()[1]
    assert bullet.startswith(
        "- In \u201cRetrieval\u201d: Retrieval-augmented generation looks documents up"
    )
    assert bullet.endswith(".")
    assert len(bullet) <= len("- In \u201cRetrieval\u201d: ") + 300


async def test_an_answer_copies_no_bold_or_search_highlight_markers() -> None:
    notes = '<note title="RAG">\n**Retrieval**-augmented generation uses **documents**\n</note>\n'

    text = await _text(_answer_prompt(notes, "What is retrieval?"))

    assert "**" not in text
    assert text.endswith("- In \u201cRAG\u201d: Retrieval-augmented generation uses documents.")


async def test_a_sentence_longer_than_a_quote_is_the_only_one_cut() -> None:
    notes = '<note title="Long">\n' + "word " * 100 + "end.\n</note>\n"

    text = await _text(_answer_prompt(notes, "What is a word?"))

    bullet = text.splitlines()[1]
    assert bullet.endswith("word\u2026")
    assert len(bullet) <= len("- In \u201cLong\u201d: ") + 300


async def test_the_same_input_gives_the_same_output() -> None:
    messages = _answer_prompt(NOTES, "What is RAG?")

    first = await OfflineChatModel().ainvoke(messages)
    second = await OfflineChatModel().ainvoke(messages)
    third = OfflineChatModel().invoke(messages)

    assert first.content == second.content == third.content


async def test_a_summary_lists_the_discussion_without_the_request_to_save_it() -> None:
    text = await _text(
        [
            SystemMessage(prompts.SUMMARIZE),
            HumanMessage("What is RAG?"),
            AIMessage("RAG retrieves documents, then generates an answer."),
            HumanMessage("And embeddings?"),
            AIMessage("Embeddings are dense vectors."),
            HumanMessage("Add a summary of our discussion to my note"),
        ]
    )

    assert text == (
        "## Summary of our discussion\n"
        "\n"
        "- **Question:** What is RAG?\n"
        "  **Answer:** RAG retrieves documents, then generates an answer.\n"
        "- **Question:** And embeddings?\n"
        "  **Answer:** Embeddings are dense vectors.\n"
        "\n"
        "_Summarized by the offline model._"
    )


async def test_a_summary_keeps_the_gist_of_the_offline_models_own_answers() -> None:
    answer = await _text(_answer_prompt(NOTES, "What is RAG?"))
    nothing = await _text(_answer_prompt("", "What is photosynthesis?"))

    text = await _text(
        [
            SystemMessage(prompts.SUMMARIZE),
            HumanMessage("What is RAG?"),
            AIMessage(answer),
            HumanMessage("What is photosynthesis?"),
            AIMessage(nothing),
            HumanMessage("Add a summary of our discussion to my note"),
        ]
    )

    assert text == (
        "## Summary of our discussion\n"
        "\n"
        "- **Question:** What is RAG?\n"
        "  **Answer:** In \u201cRAG\u201d: Retrieval-augmented generation uses documents.\n"
        "- **Question:** What is photosynthesis?\n"
        "  **Answer:** Your notes say nothing about it yet.\n"
        "\n"
        "_Summarized by the offline model._"
    )


async def test_a_summary_of_an_empty_conversation_says_so() -> None:
    text = await _text(
        [SystemMessage(prompts.SUMMARIZE), HumanMessage("Add a summary of our discussion")]
    )

    assert text.startswith("## Summary of our discussion\n")
    assert "- We have not discussed anything yet in this conversation." in text
    assert "Add a summary" not in text


async def test_astream_yields_one_word_per_chunk_and_adds_up_to_ainvoke() -> None:
    model = OfflineChatModel()
    messages = _answer_prompt(NOTES, "What is RAG?")

    chunks = [str(chunk.content) async for chunk in model.astream(messages)]
    whole = await model.ainvoke(messages)

    assert "".join(chunks) == whole.content
    words = [chunk for chunk in chunks if chunk]  # LangChain adds an empty closing chunk
    assert len(words) == len(str(whole.content).split())
    assert all(len(word.split()) == 1 for word in words)
    assert words[:3] == ["I'm ", "the ", "offline "]


def test_stream_matches_astream() -> None:
    messages = _answer_prompt(NOTES, "What is RAG?")

    chunks = [str(chunk.content) for chunk in OfflineChatModel().stream(messages)]

    assert "".join(chunks) == OfflineChatModel().invoke(messages).content
    assert len(chunks) > 10


@pytest.mark.parametrize(
    ("message", "what"),
    [
        ("Remember that I prefer short answers.", "I prefer short answers"),
        ("please remember I am learning Japanese", "I am learning Japanese"),
    ],
)
def test_a_request_to_remember_is_routed_with_its_words(message: str, what: str) -> None:
    assert classify(message) == {"intent": "remember", "query": what}


def test_a_question_about_remembering_is_a_question() -> None:
    assert classify("Do you remember my note?")["intent"] == "answer"


async def test_an_answer_says_back_what_it_was_asked_to_remember() -> None:
    plain = await _text(_answer_prompt(NOTES, "What is RAG?"))
    minding = await _text(
        _answer_prompt(NOTES, "What is RAG?", memories="- I prefer short answers\n- I am a nurse\n")
    )

    assert (
        minding == plain + "\n\n(You asked me to remember: I prefer short answers; I am a nurse.)"
    )


@pytest.mark.parametrize(
    "message",
    [
        "Remember to add a summary to my note",  # a request to act
        "Remember when we talked about RAG?",
        "Remember the formula for entropy?",
        "Remember this.",
        "remember",
    ],
)
def test_a_request_to_act_a_question_or_a_bare_remember_is_no_memory(message: str) -> None:
    assert classify(message)["intent"] != "remember"


async def test_memories_are_read_from_the_prompts_last_block_and_never_summarized() -> None:
    quoting = '<note title="Tags">\nWrite <memories> and </memories> around lists.\n</note>\n'
    none_kept = await _text(_answer_prompt(quoting, "What are tags?"))
    conversation = [
        HumanMessage("What is RAG?"),
        AIMessage(
            "I'm the offline model, so I answer from your notes rather than from general "
            "knowledge. Here is what your notes say:\n- In \u201cRAG\u201d: It uses documents."
            "\n\n(You asked me to remember: I prefer short answers.)"
        ),
        HumanMessage("Add a summary of our discussion to my note"),
    ]
    summary = await _text([SystemMessage(prompts.SUMMARIZE), *conversation])

    assert "remember" not in none_kept
    assert "documents" in summary
    assert "remember" not in summary


# Reviews of a project's notes


@pytest.mark.parametrize(
    "message",
    [
        "Review my notes",
        "Write a weekly review of my project's notes",
        "Draft a review of this week's notes",
        "Please review my notes.",
        "Can you write a review of my notes?",
        "Could you do a weekly review of our notes?",
        "Give me a weekly review of my notes",
        "ok, review the project's notes",
        "Review all my notes",
    ],
)
def test_asking_for_a_review_of_the_notes_routes_to_review(message: str) -> None:
    assert classify(message) == {"intent": "review", "query": ""}


@pytest.mark.parametrize(
    "message",
    [
        "How do I review for an exam?",
        "Should I review my notes daily?",
        "When should I review my notes?",
        "What is a weekly review?",
        "Did you review my notes?",
        "Review spaced repetition",
        "Review how to take notes",
        "Remember that I review my notes on Fridays",
    ],
)
def test_questions_about_reviewing_are_not_review_requests(message: str) -> None:
    assert classify(message)["intent"] != "review"


def test_a_review_of_the_discussion_into_a_note_is_still_an_edit() -> None:
    assert classify("Add a review of our discussion to my note")["intent"] == "edit_note"


def _review_prompt(notes: str) -> list[BaseMessage]:
    system = prompts.REVIEW.format(notes=notes)
    return [SystemMessage(system), HumanMessage("Review my notes")]


async def test_classify_task_answers_a_review_request_as_review() -> None:
    text = await _text([SystemMessage(prompts.CLASSIFY), HumanMessage("Review my notes")])

    assert json.loads(text) == {"intent": "review", "query": ""}


async def test_a_review_lists_each_note_with_its_title_and_first_sentence() -> None:
    notes = (
        '<note title="Spaced &amp; repeated">\n'
        "You review a fact **just** before you forget it. Every review helps.\n</note>\n"
        '<note title="To do">\n\n</note>\n' + NOTES
    )

    text = await _text(_review_prompt(notes))

    assert text == (
        "## Notes reviewed\n"
        "\n"
        "- **Spaced & repeated**: You review a fact just before you forget it.\n"
        "- **To do**: No text yet.\n"
        "- **RAG**: Retrieval-augmented generation uses documents.\n"
        "- **Embeddings**: Dense vectors.\n"
        "\n"
        "_Reviewed by the offline model._"
    )


async def test_a_review_of_no_notes_says_so() -> None:
    text = await _text(_review_prompt(""))

    assert text == (
        "## Notes reviewed\n\n- There are no notes to review.\n\n_Reviewed by the offline model._"
    )


async def test_a_review_quotes_one_long_sentence_shortened() -> None:
    long = " ".join(["word"] * 80) + "."

    text = await _text(_review_prompt(f'<note title="Long">\n{long}\n</note>\n'))

    item = text.splitlines()[2]
    assert item.startswith("- **Long**: word word")
    assert item.endswith("\u2026")
    assert len(item) <= len("- **Long**: ") + 200
