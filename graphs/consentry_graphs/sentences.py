"""Note text as whole sentences: what the tutor quotes from a note, and what the offline model
answers and summarizes with.

A note is Markdown. It is read block by block: a paragraph (its lines joined) or one list item;
headings, code blocks and table rows are left out, and so are list markers and ``**`` (bold, and
the markers a search engine puts around the words it matched). A block is split into sentences
after ``.``, ``!`` or ``?`` and a space, where the next word starts with a capital letter or a
digit and the word before is no abbreviation ("e.g. Anki" stays whole); a block that does not end
a sentence gets a full stop. Nothing is ever cut inside a sentence, except one sentence longer than
a whole quote may be (it then ends with "…").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = [
    "STOPWORDS",
    "about",
    "coverage",
    "leading",
    "plain",
    "sentences",
    "shorten",
    "words",
]

STOPWORDS = frozenset(
    {
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "describe",
        "do",
        "does",
        "explain",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "like",
        "me",
        "mean",
        "means",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "said",
        "say",
        "says",
        "tell",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    }
)
"""Words that say nothing about a topic (the server's note search leaves out the same kind)."""

_WORD = re.compile(r"\w+")
_BOLD = re.compile(r"\*\*")
_SPACES = re.compile(r"\s+")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_TABLE_ROW = re.compile(r"^\s*\|")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_BREAK = re.compile(r"[.!?]+[\"”’')\]]*\s+(?=[\"“‘'(\[]?(?P<next>\w))")
_ABBREVIATIONS = frozenset(
    {"cf", "dr", "e.g", "eg", "etc", "i.e", "ie", "mr", "mrs", "ms", "no", "vs"}
)
_ENDS_SENTENCE = re.compile(r"[.!?:…][\"”’')\]]*$")


def plain(text: str) -> str:
    """``text`` on one line, without ``**`` markers."""
    return _SPACES.sub(" ", _BOLD.sub("", text)).strip()


def _stem(word: str) -> str:
    """A word cut to what its forms share: a plural's "s", an "-ing" or an "-ed" ("spacing" and
    "spaced" both begin "spac"), as long as four letters stay."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def words(text: str) -> set[str]:
    """The words of ``text`` that can name a topic, in lower case, each cut to its stem
    (``_stem``)."""
    return {_stem(word) for word in _WORD.findall(text.lower()) if word not in STOPWORDS}


def _blocks(text: str) -> Iterable[str]:
    """Paragraphs and list items, each on one line; headings, code and tables left out."""
    block: list[str] = []
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            yield " ".join(block)
            block = []
            continue
        if in_code or _TABLE_ROW.match(line):
            continue
        if not line.strip() or _HEADING.match(line) or _LIST_ITEM.match(line):
            yield " ".join(block)
            block = []
            if _LIST_ITEM.match(line):
                block = [_LIST_ITEM.sub("", line)]
            continue
        block.append(line)
    yield " ".join(block)


def _split(block: str) -> list[str]:
    found: list[str] = []
    start = 0
    for end in _BREAK.finditer(block):
        word = block[block.rfind(" ", 0, end.start()) + 1 : end.start()]  # before the "."
        starts_sentence = end.group("next").isupper() or end.group("next").isdigit()
        if starts_sentence and word.lower() not in _ABBREVIATIONS:
            found.append(block[start : end.end()].strip())
            start = end.end()
    found.append(block[start:].strip())
    return [sentence for sentence in found if sentence]


def sentences(text: str) -> list[str]:
    """The sentences of a note (or of any Markdown text), in order, each one whole."""
    found: list[str] = []
    for block in _blocks(text):
        split = _split(plain(block))
        if split and not _ENDS_SENTENCE.search(split[-1]):
            split[-1] += "."
        found += split
    return found


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word and ended with "…" if it is longer than ``limit``."""
    text = plain(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def leading(found: Sequence[str], limit: int) -> list[str]:
    """The first sentences that fit in ``limit`` characters (joined by spaces); at least one,
    shortened if it alone is longer."""
    picked: list[str] = []
    size = -1
    for sentence in found:
        if picked and size + 1 + len(sentence) > limit:
            break
        picked.append(sentence)
        size += 1 + len(sentence)
    if picked and len(picked[0]) > limit:
        return [shorten(picked[0], limit)]
    return picked


def _mentioned(sentence: str, topic: set[str]) -> set[str]:
    """The topic words a sentence has a word beginning like."""
    found = _WORD.findall(sentence.lower())
    return {t for t in topic if any(word.startswith(t) for word in found)}


def coverage(found: Sequence[str], question: str) -> int:
    """How many of ``question``'s topic words the sentences mention: how well a note fits it."""
    topic = words(question)
    mentioned: set[str] = set()
    for sentence in found:
        mentioned |= _mentioned(sentence, topic)
    return len(mentioned)


def about(found: Sequence[str], question: str, *, limit: int, fallback: bool = True) -> list[str]:
    """The sentences about ``question`` (with a word that begins like one of its words) that fit
    in ``limit`` characters, given in the note's order. The first picked are those with the most
    of its words, then those whose words few other sentences have (the one sentence with
    "coffee" before the three with "katakana"). When none is about it: the first ones
    (``fallback``), or none."""
    topic = words(question)
    mentions = [_mentioned(sentence, topic) for sentence in found]
    sentences_with = {t: sum(t in mentioned for mentioned in mentions) for t in topic}
    ranked = sorted(
        (-len(mentioned), -sum(1 / sentences_with[t] for t in mentioned), index)
        for index, mentioned in enumerate(mentions)
        if mentioned
    )
    if not ranked:
        return leading(found, limit) if fallback else []
    order = [index for *_, index in ranked]
    chosen = leading([found[index] for index in order], limit)
    if chosen and chosen[0] != found[order[0]]:  # the best one alone, shortened
        return chosen
    return [found[index] for index in sorted(order[: len(chosen)])]
