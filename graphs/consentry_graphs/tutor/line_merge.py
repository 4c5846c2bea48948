"""A three-way merge of lines that never drops a line a person wrote.

The tutor rewrites only its own words. ``merge_lines(base, ours, theirs)`` takes what the tutor
wrote last time (``base``), the text as it is now, with whatever a person changed since
(``ours``), and what the tutor would write now (``theirs``):

- a line of ``ours`` that is in ``base`` is the tutor's own, as it wrote it: it stays if the
  tutor keeps it in ``theirs``, and goes if the tutor dropped or rewrote it;
- every other line of ``ours`` is a person's (written, or changed from the tutor's): it stays,
  where it is;
- the tutor's new lines go where ``theirs`` puts them among its own lines: never in place of a
  person's line, and a line of its own that a person deleted is not brought back unless the
  tutor rewrote it.

With no ``base`` (the tutor never wrote here), every line is the person's: the tutor only adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

__all__ = ["merge_lines", "removed_lines"]


def _matches(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Each line of ``old`` that stays in ``new``, by its index: its index in ``new``."""
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return {
        block.a + offset: block.b + offset
        for block in matcher.get_matching_blocks()
        for offset in range(block.size)
    }


def _beside(ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """Both versions of one region: every line of ``ours``, and the lines of ``theirs`` that it
    lacks, each added after the lines it follows."""
    merged: list[str] = []
    matcher = SequenceMatcher(None, ours, theirs, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        merged += ours[i1:i2]
        if op in ("insert", "replace"):
            merged += theirs[j1:j2]
    return merged


def merge_lines(
    base: Sequence[str] | None, ours: Sequence[str], theirs: Sequence[str]
) -> list[str]:
    """``ours`` with the tutor's change from ``base`` to ``theirs``; see the module docstring."""
    if base is None:
        return _beside(ours, theirs)
    kept = set(_matches(base, theirs))
    # The tutor's new lines, by the line of base they come before (len(base): at the end).
    added: list[list[str]] = [[] for _ in range(len(base) + 1)]
    matcher = SequenceMatcher(None, base, theirs, autojunk=False)
    for op, i1, _, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            added[i1] += theirs[j1:j2]
    drafted = {o: b for b, o in _matches(base, ours).items()}
    merged: list[str] = []
    passed = 0  # the lines of base before this one are behind us in ours
    for index, line in enumerate(ours):
        b = drafted.get(index)
        if b is None:  # a person's line: it stays where it is
            merged.append(line)
            continue
        for before in added[passed : b + 1]:
            merged += before
        passed = b + 1
        if b in kept:  # the tutor's own line, which it keeps; else it goes
            merged.append(line)
    for before in added[passed:]:
        merged += before
    return merged


def removed_lines(
    base: Sequence[str] | None, ours: Sequence[str], merged: Sequence[str]
) -> tuple[int, int]:
    """What going from ``ours`` to ``merged`` removes: (lines of the tutor's own, as it wrote
    them in ``base``; lines a person wrote or changed)."""
    kept = _matches(ours, merged)
    own = _matches(ours, base or [])
    gone = [index for index in range(len(ours)) if index not in kept]
    tutors = sum(1 for index in gone if index in own)
    return tutors, len(gone) - tutors
