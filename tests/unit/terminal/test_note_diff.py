"""The terminal client shows a note change as hunks: 3 lines of context, unchanged stretches
folded into one line, the words a changed line changes marked."""

from __future__ import annotations

from consentry.terminal.note_diff import render_note_change
from consentry.terminal.palette import Palette

LONG_NOTE = "".join(f"Line {n} of the note.\n" for n in range(1, 61))


def _change(base: str, proposed: str, *, colour: bool = False) -> list[str]:
    text = render_note_change(
        base,
        proposed,
        old_header="Note (version 1)",
        new_header="Note (proposed)",
        palette=Palette(colour),
    )
    return text.splitlines()


def test_a_change_deep_in_a_long_note_is_shown_with_its_context_and_the_rest_folded() -> None:
    proposed = LONG_NOTE.replace("Line 50 of the note.", "Line 50 of the edited note.")

    assert _change(LONG_NOTE, proposed) == [
        "--- Note (version 1)",
        "+++ Note (proposed)",
        "… 46 unchanged lines",
        " Line 47 of the note.",
        " Line 48 of the note.",
        " Line 49 of the note.",
        "-Line 50 of the note.",
        "+Line 50 of the edited note.",
        " Line 51 of the note.",
        " Line 52 of the note.",
        " Line 53 of the note.",
        "… 7 unchanged lines",
    ]


def test_two_changes_far_apart_are_two_hunks_with_the_stretch_between_folded() -> None:
    proposed = LONG_NOTE.replace("Line 2 of", "Line two of").replace("Line 40 of", "Line 40, of")

    shown = _change(LONG_NOTE, proposed)

    assert shown[2:4] == [" Line 1 of the note.", "-Line 2 of the note."]
    assert "… 31 unchanged lines" in shown
    assert shown[-1] == "… 17 unchanged lines"


def test_the_words_a_changed_line_changes_are_marked_in_colour() -> None:
    shown = _change("Kana are syllabaries.\n", "Kana are two syllabaries.\n", colour=True)

    removed, added = shown[2], shown[3]
    assert "\x1b[7;32mtwo \x1b[0m" in added or "\x1b[7;32mtwo\x1b[0m" in added
    assert "\x1b[7;31m" not in removed.replace("\x1b[7;31m\x1b[0m", "")  # nothing was removed
    assert added.startswith("\x1b[32m+\x1b[0m")
