"""A note change as the terminal shows it: hunks, not the whole note.

Changed lines come with 3 lines of context; an unchanged stretch between, before or after them is
one dim line, ``… 17 unchanged lines``, so the first change is on screen at once, whatever the
note's length. A changed line that replaces another shows which words changed (in reverse video,
when colours are on). The web app's consent card does the same (``backend/consentry/web/diff.js``).
"""

from __future__ import annotations

import difflib
import re

from consentry.terminal.palette import Palette

__all__ = ["CONTEXT_LINES", "removed_line_count", "render_note_change"]

CONTEXT_LINES = 3
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def render_note_change(
    base: str, proposed: str, *, old_header: str, new_header: str, palette: Palette
) -> str:
    """``base`` → ``proposed`` as hunks, under ``--- old_header`` and ``+++ new_header``."""
    old, new = base.splitlines(), proposed.splitlines()
    out = [palette.bold(f"--- {old_header}"), palette.bold(f"+++ {new_header}")]
    matcher = _line_matcher(old, new)
    shown = 0  # lines of the base shown or folded so far
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first = group[0][1]
        if first > shown:
            out.append(_folded(first - shown, palette))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(f" {line}" for line in old[i1:i2])
            elif tag == "replace" and i2 - i1 == j2 - j1:
                for before, after in zip(old[i1:i2], new[j1:j2], strict=True):
                    out.extend(_changed_words(before, after, palette))
            else:
                out.extend(palette.red(f"-{line}") for line in old[i1:i2])
                out.extend(palette.green(f"+{line}") for line in new[j1:j2])
        shown = group[-1][2]
    if len(old) > shown and shown:
        out.append(_folded(len(old) - shown, palette))
    return "\n".join(out)


def removed_line_count(base: str, proposed: str) -> int:
    """How many lines of ``base`` the change to ``proposed`` removes (or replaces): the ``-``
    lines :func:`render_note_change` shows."""
    matcher = _line_matcher(base.splitlines(), proposed.splitlines())
    return sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal")


def _line_matcher(old: list[str], new: list[str]) -> difflib.SequenceMatcher[str]:
    return difflib.SequenceMatcher(a=old, b=new, autojunk=False)


def _folded(count: int, palette: Palette) -> str:
    return palette.dim(f"… {count} unchanged line{'s' if count != 1 else ''}")


def _changed_words(before: str, after: str, palette: Palette) -> list[str]:
    """A line and the line that replaces it, the words that differ marked (with colours)."""
    if not palette.enabled:
        return [f"-{before}", f"+{after}"]
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    removed, added = [palette.red("-")], [palette.green("+")]
    words = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in words.get_opcodes():
        gone, came = "".join(old[i1:i2]), "".join(new[j1:j2])
        if tag == "equal":
            removed.append(palette.red(gone))
            added.append(palette.green(came))
        else:
            removed.append(palette.red_marked(gone))
            added.append(palette.green_marked(came))
    return ["".join(removed), "".join(added)]
