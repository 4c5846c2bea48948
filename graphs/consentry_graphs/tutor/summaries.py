"""What the tutor's summary of a discussion covers, and where it goes in a note.

- **What it covers**: the user's questions and the tutor's answers (``discussion``). A reply that
  reports what became of a request about notes (a consent's outcome, "no note is open") is an
  *outcome* (``replies.say_outcome``): it is left out, and so is the request it answers, as is the
  request being drafted now (no reply yet).
- **Where it goes**: the note's summary section, under ``SUMMARY_HEADING`` up to the next
  heading of level 1 or 2 (the first, if a note has several); a note without one gets it at its
  end.
- **What it may change there**: only the tutor's own words. The conversation remembers the
  section as the model drafted it last time it was written into the note, and the new summary
  is merged into the section as it is now (``line_merge``): lines the person wrote or changed,
  in the section or anywhere else, all stay; the tutor's own lines, as it wrote them, may be
  rewritten. With nothing remembered (another conversation wrote the section, or a person did),
  every line there is the person's, and the tutor only adds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from consentry_graphs.tutor.line_merge import merge_lines
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
        elif isinstance(message, AIMessage) and message.text.strip() and not is_outcome(message):
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


def with_summary(content: str, section: str, *, drafted_before: str | None) -> str:
    """The note with ``section`` merged into its summary section (``drafted_before``: the
    section as the tutor drafted it when it last wrote it here), else added at its end."""
    lines = content.splitlines()
    sections = _sections(lines)
    if not sections:
        return f"{content.rstrip()}\n\n{section}\n" if content.strip() else f"{section}\n"
    start, end = sections[0]
    ours = lines[start:end]
    while ours and not ours[-1].strip():
        ours.pop()
    base = None if drafted_before is None else drafted_before.splitlines()
    merged = merge_lines(base, ours, section.splitlines())
    rest = lines[start + len(ours) :]
    return "\n".join([*lines[:start], *merged, *rest]).rstrip("\n") + "\n"
