"""What the tutor's summary of a discussion covers, and where it goes in a note.

- **What it covers**: the user's questions and the tutor's answers (``discussion``). A reply that
  reports what became of a request about notes (a consent's outcome, "no note is open") is an
  *outcome* (``replies.say_outcome``): it is left out, and so is the request it answers, as is the
  request being drafted now (no reply yet).
- **Where it goes**: a note has at most one summary section, under ``SUMMARY_HEADING`` up to the
  next heading of level 1 or 2. A new summary replaces that section where it is (a note from
  before this rule with several loses the later ones); a note without one gets it at its end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from consentry_graphs.tutor.replies import is_outcome

__all__ = [
    "SUMMARY_HEADING",
    "as_summary_section",
    "discussion",
    "has_summary",
    "with_summary",
    "without_summary",
]

SUMMARY_HEADING = "## Summary of our discussion"
_SECTION_END = re.compile(r"^ {0,3}#{1,2}(?:\s|$)")


def discussion(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Each user message with the tutor's answers to it, for the ones that were answered; the
    requests about notes (answered by outcomes only, or not yet) and the outcomes left out."""
    kept: list[AnyMessage] = []
    question: AnyMessage | None = None
    answers: list[AnyMessage] = []
    for message in [*messages, None]:
        if message is None or isinstance(message, HumanMessage):
            if question is not None and answers:
                kept += [question, *answers]
            question, answers = message, []
        elif (
            isinstance(message, AIMessage)
            and str(message.content).strip()
            and not is_outcome(message)
        ):
            answers.append(message)
    return kept


def as_summary_section(text: str) -> str:
    """A model's summary under ``SUMMARY_HEADING`` (its own first heading replaced), so the next
    summary finds it, whatever the model called it."""
    lines = text.strip().splitlines()
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    body = "\n".join(lines).strip()
    return f"{SUMMARY_HEADING}\n\n{body}" if body else SUMMARY_HEADING


def _sections(lines: Sequence[str]) -> list[tuple[int, int]]:
    """Where the summary sections are: (first line, line after the last)."""
    found: list[tuple[int, int]] = []
    start: int | None = None
    for number, line in enumerate(lines):
        if start is not None and _SECTION_END.match(line):
            found.append((start, number))
            start = None
        if start is None and line.rstrip() == SUMMARY_HEADING:
            start = number
    if start is not None:
        found.append((start, len(lines)))
    return found


def has_summary(content: str) -> bool:
    return bool(_sections(content.splitlines()))


def without_summary(content: str) -> str:
    """The note without the tutor's summary sections (what the user wrote)."""
    lines = content.splitlines()
    for start, end in reversed(_sections(lines)):
        del lines[start:end]
    return "\n".join(lines).strip()


def with_summary(content: str, section: str) -> str:
    """The note with ``section`` as its summary: in place of the one it has, else at its end."""
    lines = content.splitlines()
    sections = _sections(lines)
    if not sections:
        return f"{content.rstrip()}\n\n{section}\n" if content.strip() else f"{section}\n"
    for start, end in reversed(sections[1:]):
        del lines[start:end]
    start, end = sections[0]
    rest = lines[end:]
    new = section.splitlines() + ([""] if rest else [])
    return "\n".join([*lines[:start], *new, *rest]).rstrip("\n") + "\n"
