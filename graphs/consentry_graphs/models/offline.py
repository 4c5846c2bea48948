"""The offline model: a small deterministic chat model that needs no key and no network.

It is a real LangChain chat model, used by the same graph code as any other: it reads the task from
the heading of the system prompt (``# task: classify | answer | summarize | review``) and answers
it with rules instead of weights. It classifies intent with keyword rules (answer, search, edit or
delete a note, remember something about the person, review the project's notes), answers from the
notes the prompt carries, summarizes the conversation into a note section, reviews the notes it is
given, and streams its answers word by word. It always says that it is the offline model.

What it writes is what lands in people's notes, so it writes whole sentences
(``consentry_graphs.sentences``: a note's sentences, never cut, without ``**`` markers):

- an **answer** quotes the note that fits the question best: the one whose title and sentences
  mention the most of the question's words (a word fits a word that begins like its stem:
  "spacing" fits "spaced"), the first in the prompt (the search's best) on a tie, two at most;
  of it, the sentences with the most of those words (its first ones if only its title has
  them), up to about 300 characters, in the note's order. A note that mentions none of them is
  never quoted: when no note fits, it says so (a question about "this note" quotes the open
  note's first sentences);
- a **summary** lists each question with the gist of its answer (the answer's sentences, without
  the offline model's introduction and lead-ins, up to about 400 characters), under
  "## Summary of our discussion". The graph gives it the discussion only, no replies about
  consents; a last user message (the request to summarize) is left out;
- a **review** lists each note of the prompt, in its order, with its title and its first
  sentence, under "## Notes reviewed" ("no text yet" for an empty note).

The same conversation always gives the same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from html import unescape
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from consentry_graphs import sentences

__all__ = ["OFFLINE_MODEL_NAME", "OfflineChatModel"]

OFFLINE_MODEL_NAME = "consentry-offline"

# An edit is a *request*: the verb opens a clause ("Add …", "Can you … and put it …"), so a
# question about notes ("What did I write in my note?") is not one.
_REQUEST = (
    r"(?:^|[.!?;,:]\s*|\band\s+|\bthen\s+)"
    r"(?:(?:please|pls|kindly|ok(?:ay)?|now|so|also|go\s+ahead\s+and|can\s+you|could\s+you|"
    r"would\s+you|will\s+you|i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to)\s+)*"
)
_INTO_NOTE = (
    r"(?:add|save|put|write|append|record|store|jot(?:\s+down)?|copy|insert|summari[sz]e)\b"
    r"[^.!?]*?\b(?:to|in|into|on|onto)\s+(?:(?:my|the|this|that|a|an|our|your)\s+)?"
    r"(?:[\w-]+\s+)?notes?\b"
)
_NEW_NOTE = (
    r"(?:write|add|create|make|start|save|take)\s+(?:(?:it|this|that)\s+as\s+)?"
    r"(?:(?:a|an|the|my)\s+)?(?:new\s+)?notes?\b"
)
_EDIT_PATTERN = re.compile(rf"{_REQUEST}(?:{_INTO_NOTE}|{_NEW_NOTE})", re.IGNORECASE)
# Deleting is a request too, about one note ("delete this note", "remove my RAG note"): "What
# happens if I delete a note?" is a question, and "delete my notes" names no single note.
_DELETE_PATTERN = re.compile(
    rf"{_REQUEST}(?:delete|remove|erase|trash|discard)\s+"
    r"(?:(?:this|that|the|my|our|current|open)\s+)*(?:[\w-]+\s+)?note\b",
    re.IGNORECASE,
)
_SEARCH_PATTERN = re.compile(
    r"\b(search|find|look\s+up|look\s+for|lookup)\b(?:\s+(?:in|through|my|the|our|all))*"
    r"\s+notes?\b(?:\s+(?:for|about|on|mentioning))?\s*(?P<query>.*)",
    re.IGNORECASE | re.DOTALL,
)
_NOTES_BLOCK = re.compile(r"<notes>\n?(?P<body>.*?)</notes>", re.DOTALL)
MINDING_LEAD = "(You asked me to remember:"
"""How an answer starts saying back the person's memories (left out of note summaries)."""
# "Remember that I prefer short answers", "Please remember: I'm a nurse": something about the
# person, kept for later. Not "remember to add this to my note" (a request to act), nor a
# question ("Remember when we talked about RAG?"), nor a bare "remember this".
_REMEMBER_PATTERN = re.compile(
    r"\s*(?:please,?\s+)?remember\s*[:,]?\s+(?:that\s+)?"
    r"(?!(?:to|when|how|what|why|where|who|whom|which|if|whether)\b)"
    r"(?!(?:this|that|it)\W*$)(?P<what>[^?]*[^?\s])[.!]*\s*$",
    re.IGNORECASE | re.DOTALL,
)
# "Review my notes", "Write a weekly review of my project's notes", "Can you draft a review of
# this week's notes?": a request (the verb opens a clause) about the person's notes. Not a
# question ("How do I review for an exam?", "Should I review my notes daily?").
_NOTES_NAMED = (
    r"(?:(?:all|of|my|our|the|this|these|recent|latest|(?:this|last|the)\s+week'?s|"
    r"(?:my|our|the|this)\s+project'?s|project)\s+)*notes\b"
)
_REVIEW_PATTERN = re.compile(
    rf"{_REQUEST}(?:review|(?:write|draft|make|do|prepare|create|give\s+me)\s+"
    r"(?:(?:a|an|my|the|this|our)\s+)?(?:(?:weekly|short|quick|new)\s+)*review\s+of)\s+"
    rf"{_NOTES_NAMED}",
    re.IGNORECASE,
)
_NOTE = re.compile(
    r'<note title="(?P<title>[^"]*)"(?P<open> open="true")?>\n(?P<text>.*?)\n</note>', re.DOTALL
)
_ABOUT_OPEN_NOTE = re.compile(
    r"\b(?:this|my|the|open|current)\s+note\b|\bnote\s+(?:is|says?)\b", re.IGNORECASE
)
"""A question about the note the person has open ("What does this note say?")."""
_WORD = re.compile(r"\S+\s*")
_INTRO = "I'm the offline model, so I answer from your notes rather than from general knowledge."
_NOTHING_FOUND = "I found nothing in this project's notes about"
_SUMMARY_HEADING = "## Summary of our discussion"
_REVIEW_HEADING = "## Notes reviewed"
_REVIEW_SENTENCE_CHARS = 200
"""About the most a review quotes of one note: its first sentence."""
_ANSWER_CHARS = 300
"""About the most an answer quotes of one note (whole sentences)."""
_MOST_NOTES = 2
"""The most notes one answer quotes (those that fit the question equally well)."""
_SUMMARY_ANSWER_CHARS = 400
_QUESTION_CHARS = 300


def classify(message: str) -> dict[str, str]:
    """Return ``{"intent": "search" | "delete_note" | "review" | "edit_note" | "remember" |
    "answer", "query": ...}``."""
    search = _SEARCH_PATTERN.search(message)
    if search:
        query = search.group("query").strip().strip("\"'?.!").strip()
        return {"intent": "search", "query": query or message.strip()}
    if _DELETE_PATTERN.search(message):
        return {"intent": "delete_note", "query": ""}
    if _REVIEW_PATTERN.search(message):
        return {"intent": "review", "query": ""}
    if _EDIT_PATTERN.search(message):
        return {"intent": "edit_note", "query": ""}
    if remember := _REMEMBER_PATTERN.match(message):
        what = " ".join(remember.group("what").split())
        return {"intent": "remember", "query": what.rstrip(".!")}
    return {"intent": "answer", "query": message.strip()}


def _usage(messages: Sequence[BaseMessage], answer: str) -> UsageMetadata:
    """Tokens, counted as words: the offline model has no tokenizer, but budgets still apply."""
    prompt = sum(len(m.text.split()) for m in messages)
    output = len(answer.split())
    return {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}


def _answer(system: str, question: str) -> str:
    """Quote the notes that fit the question best: those whose title and sentences mention the
    most of its words (the first ones of the prompt, in the search's order, on a tie). A note
    that mentions none is not quoted; when none does, it says so, unless the question is about
    the open note."""
    block = _NOTES_BLOCK.search(system)
    notes = [
        (unescape(note.group("title")), bool(note.group("open")), found)
        for note in _NOTE.finditer(block.group("body") if block else "")
        if (found := sentences.sentences(note.group("text")))
    ]
    about_open_note = bool(_ABOUT_OPEN_NOTE.search(question))
    topic = _ABOUT_OPEN_NOTE.sub(" ", question)  # "this note" names no topic
    fits = [sentences.coverage([title, *found], topic) for title, _, found in notes]
    best = max(fits, default=0)
    quoted = [
        f"- In \u201c{title}\u201d: " + " ".join(sentences.about(found, topic, limit=_ANSWER_CHARS))
        for (title, _, found), fit in zip(notes, fits, strict=True)
        if best and fit == best
    ][:_MOST_NOTES]
    if not quoted and about_open_note:
        quoted = [
            f"- Your note \u201c{title}\u201d says: "
            + " ".join(sentences.leading(found, _ANSWER_CHARS))
            for title, is_open, found in notes
            if is_open
        ]
    if not quoted:
        return (
            f"{_INTRO} {_NOTHING_FOUND} \u201c{sentences.shorten(question, 80)}\u201d. Write a "
            "note about it, or ask me to add a summary of our discussion to your note."
        )
    return "\n".join([f"{_INTRO} Here is what your notes say:", *quoted])


def _minding(system: str) -> str:
    """What the person asked to be remembered (the prompt's last ``<memories>`` block, after the
    notes, which may quote the tag), said back at the end of the answer: the offline model
    cannot follow a preference, so it shows it knows it."""
    _, tag, after = system.rpartition("<memories>")
    body, closed, _ = after.partition("</memories>")
    lines = body.splitlines() if tag and closed else []
    kept = [line.removeprefix("- ").strip() for line in lines if line.strip()]
    return f"\n\n{MINDING_LEAD} {'; '.join(kept)}.)" if kept else ""


def _gist(answer: str) -> str:
    """An answer in a summary: its sentences, without the introduction, lead-ins ("…:") and what
    it said back of the person's memories."""
    answer = answer.partition(f"\n\n{MINDING_LEAD}")[0]
    answer = answer.strip().removeprefix(_INTRO).strip()
    if answer.startswith(_NOTHING_FOUND):
        return "Your notes say nothing about it yet."
    found = [sentence for sentence in sentences.sentences(answer) if not sentence.endswith(":")]
    return " ".join(sentences.leading(found, _SUMMARY_ANSWER_CHARS))


def _summarize(conversation: Sequence[BaseMessage]) -> str:
    """Summarize the turns before the last request (which is the request to summarize)."""
    turns = list(conversation)
    if turns and isinstance(turns[-1], HumanMessage):
        turns = turns[:-1]
    lines = [_SUMMARY_HEADING, ""]
    questions = 0
    for message in turns:
        if isinstance(message, HumanMessage):
            question = sentences.shorten(message.text, _QUESTION_CHARS)
            lines.append(f"- **Question:** {question}")
            questions += 1
        elif isinstance(message, AIMessage) and (gist := _gist(message.text)):
            lines.append(f"  **Answer:** {gist}")
    if questions == 0:
        lines.append("- We have not discussed anything yet in this conversation.")
    lines += ["", "_Summarized by the offline model._"]
    return "\n".join(lines)


def _review(system: str) -> str:
    """Each note of the prompt's ``<notes>``, in its order: its title and first sentence."""
    block = _NOTES_BLOCK.search(system)
    lines = [_REVIEW_HEADING, ""]
    for note in _NOTE.finditer(block.group("body") if block else ""):
        title = unescape(note.group("title"))
        found = sentences.sentences(unescape(note.group("text")))
        first = " ".join(sentences.leading(found[:1], _REVIEW_SENTENCE_CHARS)) or "No text yet."
        lines.append(f"- **{title}**: {first}")
    if len(lines) == 2:
        lines.append("- There are no notes to review.")
    lines += ["", "_Reviewed by the offline model._"]
    return "\n".join(lines)


class OfflineChatModel(BaseChatModel):
    """Deterministic rule-based chat model; see the module docstring."""

    @property
    def _llm_type(self) -> str:
        return OFFLINE_MODEL_NAME

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": OFFLINE_MODEL_NAME}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The model's name in callbacks' metadata (``ls_model_name``: metrics, traces)."""
        return LangSmithParams(
            ls_provider="consentry", ls_model_name=OFFLINE_MODEL_NAME, ls_model_type="chat"
        )

    def _respond(self, messages: Sequence[BaseMessage]) -> str:
        system = next((m.text for m in messages if m.type == "system"), "")
        conversation = [m for m in messages if m.type != "system"]
        last_human = next(
            (m.text for m in reversed(conversation) if isinstance(m, HumanMessage)), ""
        )
        task = system.split("\n", 1)[0].removeprefix("# task:").strip()
        if task == "classify":
            return json.dumps(classify(last_human))
        if task == "summarize":
            return _summarize(conversation)
        if task == "review":
            return _review(system)
        return _answer(system, last_human) + _minding(system)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self._respond(messages)
        usage = _usage(messages, text)
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))]
        )

    def _chunks(self, messages: list[BaseMessage]) -> Iterator[tuple[str, ChatGenerationChunk]]:
        """The answer word by word (each with its trailing whitespace)."""
        text = self._respond(messages)
        words = _WORD.findall(text)
        for i, word in enumerate(words):
            # The last chunk reports the call's usage, as streaming providers do.
            usage = _usage(messages, text) if i == len(words) - 1 else None
            yield (
                word,
                ChatGenerationChunk(message=AIMessageChunk(content=word, usage_metadata=usage)),
            )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for word, chunk in self._chunks(messages):
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for word, chunk in self._chunks(messages):
            if run_manager:
                await run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
