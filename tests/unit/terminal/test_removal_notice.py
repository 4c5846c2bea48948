"""A note edit that removes lines says whose above its diff, in the terminal as on the web app's
card: a person's lines as a warning, only the tutor's own earlier lines as a plain line, and
nothing when it removes nothing."""

from __future__ import annotations

from typing import Any

from consentry.terminal.palette import Palette
from consentry.terminal.render import render_proposal

BASE = "My line one.\nMy line two.\n\n## Summary of our discussion\n\n- Old bullet.\n"


def _proposal(proposed: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": "Note",
        "base_version": 3,
        "base_content": BASE,
        "proposed_content": proposed,
        **extra,
    }


def _shown(proposal: dict[str, Any]) -> list[str]:
    return render_proposal("note_edit", proposal, Palette(False)).splitlines()


def test_an_edit_that_removes_a_persons_lines_warns_before_the_diff() -> None:
    proposed = "My line one.\n\n## Summary of our discussion\n\n- New bullet.\n"

    shown = _shown(_proposal(proposed, person_lines_removed=1))

    assert shown[:3] == [
        "This removes 1 line you wrote or edited (marked - below). Approve only if you mean to "
        "lose them.",
        "--- Note (version 3)",
        "+++ Note (proposed)",
    ]
    assert "-My line two." in shown


def test_an_edit_that_rewrites_only_the_tutors_lines_says_so_plainly() -> None:
    proposed = BASE.replace("- Old bullet.", "- New bullet.")

    shown = _shown(_proposal(proposed, person_lines_removed=0))

    assert shown[0] == "This rewrites 1 line the tutor wrote earlier; every line you wrote stays."
    assert shown[1] == "--- Note (version 3)"


def test_an_edit_that_only_adds_says_nothing_above_its_diff() -> None:
    shown = _shown(_proposal(BASE + "- Another bullet.\n", person_lines_removed=0))

    assert shown[0] == "--- Note (version 3)"


def test_a_graphs_own_edit_without_the_count_says_how_many_lines_go() -> None:
    shown = _shown(_proposal("My line one.\n"))

    assert shown[0] == "This removes 5 lines of your note."


def test_the_warning_is_red_and_bold_on_a_colour_terminal() -> None:
    proposed = "My line one.\n"
    shown = render_proposal(
        "note_edit", _proposal(proposed, person_lines_removed=2), Palette(True)
    ).splitlines()

    assert shown[0].startswith("\x1b[1m\x1b[31mThis removes 2 lines you wrote or edited")
