"""consentry_graphs.tutor.line_merge: the tutor's new summary merged into a section as it is now,
never dropping a line a person wrote or changed."""

from __future__ import annotations

from consentry_graphs.tutor.line_merge import merge_lines, removed_lines

DRAFTED = ["## Summary", "", "- Q1", "  A1", "", "_Signed._"]


def test_lines_the_person_left_alone_take_the_tutors_new_version() -> None:
    again = ["## Summary", "", "- Q1", "  A1 (better)", "- Q2", "  A2", "", "_Signed._"]

    assert merge_lines(DRAFTED, DRAFTED, again) == again


def test_a_line_the_person_changed_stays_and_the_tutors_new_lines_go_beside_it() -> None:
    edited = ["## Summary", "", "- Q1", "  A1, in my words", "", "_Signed, edited by me._"]
    again = ["## Summary", "", "- Q1", "  A1 (better)", "- Q2", "  A2", "", "_Signed._"]

    merged = merge_lines(DRAFTED, edited, again)

    assert merged == [
        "## Summary",
        "",
        "- Q1",
        "  A1, in my words",
        "  A1 (better)",
        "- Q2",
        "  A2",
        "",
        "_Signed, edited by me._",
    ]
    assert removed_lines(DRAFTED, edited, merged) == (0, 0)


def test_lines_a_person_added_stay_where_they_are() -> None:
    mine = ["## Summary", "My note first.", "", "- Q1", "  A1", "", "_Signed._", "My last word."]
    again = ["## Summary", "", "- Q2", "  A2", "", "_Signed._"]

    merged = merge_lines(DRAFTED, mine, again)

    assert merged == [
        "## Summary",
        "My note first.",
        "",
        "- Q2",
        "  A2",
        "",
        "_Signed._",
        "My last word.",
    ]
    assert removed_lines(DRAFTED, mine, merged) == (2, 0)


def test_a_line_of_its_own_the_person_deleted_is_not_brought_back() -> None:
    mine = ["## Summary", "", "- Q1", "  A1"]

    assert merge_lines(DRAFTED, mine, [*DRAFTED[:4], "- Q2", "  A2", "", "_Signed._"]) == [
        "## Summary",
        "",
        "- Q1",
        "  A1",
        "- Q2",
        "  A2",
    ]


def test_with_nothing_drafted_before_every_line_is_the_persons_and_the_tutor_only_adds() -> None:
    mine = ["## Summary", "", "- Something I wrote", "", "_Signed._"]
    drafted = ["## Summary", "", "- Q1", "  A1", "", "_Signed._"]

    merged = merge_lines(None, mine, drafted)

    assert merged == ["## Summary", "", "- Something I wrote", "- Q1", "  A1", "", "_Signed._"]
    assert removed_lines(None, mine, merged) == (0, 0)


def test_removed_lines_tells_the_persons_lines_from_the_tutors() -> None:
    mine = ["## Summary", "", "- Q1", "  A1", "", "My own line."]

    assert removed_lines(DRAFTED, mine, ["## Summary", ""]) == (3, 1)
