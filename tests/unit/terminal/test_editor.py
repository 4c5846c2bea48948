"""An edit is sent only when the person changed something: a file left as it was opened (vi's
``:q!``; a final newline aside; JSON compared as values), emptied, or an editor that fails sends
nothing, with one line that says why (issue 33: "a decision the person did not make")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from consentry.terminal.editor import (
    Unsent,
    edit_json,
    edit_text,
    read_json_edit,
    read_text_edit,
)

NOTE = "Kana: the Japanese syllabaries.\n\n## Summary\n- hiragana\n"
ARGS = {"to": "ada@example.com", "cc": ["bob"], "urgent": True, "nights": 1}
OPENED_ARGS = json.dumps(ARGS, indent=2) + "\n"


def writing(tmp_path: Path, content: str) -> list[str]:
    """An editor that saves ``content`` and exits 0."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({content!r})\n")
    return [sys.executable, str(script)]


# ---- a note's text ----


@pytest.mark.parametrize(
    "saved", [NOTE, NOTE.removesuffix("\n")], ids=["as-opened", "final-newline-dropped"]
)
def test_a_text_saved_as_it_was_opened_is_unchanged(saved: str) -> None:
    assert read_text_edit(NOTE, saved) == Unsent("the edit was left unchanged")


def test_a_note_opened_without_a_final_newline_is_unchanged_when_the_editor_adds_one() -> None:
    assert read_text_edit("one line", "one line\n") == Unsent("the edit was left unchanged")


@pytest.mark.parametrize("saved", ["", "\n", "  \n\n"])
def test_an_emptied_text_is_abandoned(saved: str) -> None:
    assert read_text_edit(NOTE, saved) == Unsent("the edited file was empty")


@pytest.mark.parametrize(
    "saved",
    [
        NOTE.replace("hiragana", "katakana"),
        NOTE + "- katakana\n",
        NOTE + "\n",  # a blank line added at the end: a change, if a small one
        NOTE.replace("\n", "", 1),
    ],
)
def test_any_other_change_of_the_text_is_the_edit_exactly_as_saved(saved: str) -> None:
    assert read_text_edit(NOTE, saved) == saved


# ---- JSON ----


@pytest.mark.parametrize(
    "saved",
    [
        OPENED_ARGS,
        json.dumps(ARGS),  # on one line, no final newline
        json.dumps(dict(reversed(ARGS.items())), indent=4),  # other keys order, other indent
    ],
    ids=["as-opened", "one-line", "reordered"],
)
def test_json_with_the_same_values_is_unchanged(saved: str) -> None:
    assert read_json_edit(OPENED_ARGS, saved) == Unsent("the edit was left unchanged")


@pytest.mark.parametrize(
    "changed",
    [
        {**ARGS, "to": "eve@example.com"},
        {**ARGS, "urgent": 1},  # `true` and `1` are two values
        {**ARGS, "nights": 1.0},
        {k: v for k, v in ARGS.items() if k != "cc"},
        {**ARGS, "note": None},
    ],
)
def test_json_with_another_value_is_the_edit(changed: dict[str, object]) -> None:
    assert read_json_edit(OPENED_ARGS, json.dumps(changed)) == changed


def test_json_that_is_empty_not_json_or_not_an_object_sends_nothing() -> None:
    assert read_json_edit(OPENED_ARGS, " \n") == Unsent("the edited file was empty")
    not_json = read_json_edit(OPENED_ARGS, "{to: eve}")
    assert isinstance(not_json, Unsent)
    assert not_json.failed
    assert not_json.line.startswith("Nothing sent: the edit is not JSON (Expecting property")
    assert read_json_edit(OPENED_ARGS, "[1, 2]") == Unsent(
        "the edit must be a JSON object", failed=True
    )


# ---- the editor itself ----


def test_an_editor_that_exits_0_without_saving_sends_nothing() -> None:
    # `true` is vi's `:q!`: the file is left as it was, and the editor exits 0
    assert edit_text(NOTE, command=["true"]) == Unsent("the edit was left unchanged")
    assert edit_json(ARGS, command=["true"]) == Unsent("the edit was left unchanged")


def test_an_editor_that_fails_or_cannot_start_sends_nothing(tmp_path: Path) -> None:
    assert edit_text(NOTE, command=["false"]) == Unsent(
        "the editor exited with status 1", failed=True
    )
    missing = str(tmp_path / "no-such-editor")
    assert edit_json(ARGS, command=[missing]) == Unsent(
        f"cannot start the editor {missing!r}: No such file or directory", failed=True
    )


def test_an_editor_that_removes_the_file_sends_nothing(tmp_path: Path) -> None:
    script = tmp_path / "editor.py"
    script.write_text("import os, sys\nos.remove(sys.argv[1])\n")

    assert edit_text(NOTE, command=[sys.executable, str(script)]) == Unsent(
        "the edited file was removed"
    )


def test_what_the_editor_saved_is_the_edit(tmp_path: Path) -> None:
    assert edit_text(NOTE, command=writing(tmp_path, "Kana: kana.\n")) == "Kana: kana.\n"
    assert edit_json(ARGS, command=writing(tmp_path, '{"to": "eve@example.com"}')) == {
        "to": "eve@example.com"
    }


def test_the_nothing_sent_line() -> None:
    assert Unsent("the edit was left unchanged").line == (
        "Nothing sent: the edit was left unchanged"
    )
