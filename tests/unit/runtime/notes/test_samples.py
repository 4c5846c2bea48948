"""The sample notes of data/samples/ (backend/consentry/runtime/notes/_samples.py) and their
setting."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from consentry.runtime.notes import SampleNote, read_sample_notes
from consentry.runtime.notes._samples import SAMPLES_DIRECTORY
from consentry.settings import Settings
from consentry_graphs import sentences

_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,3}[.)]) ")


def test_the_repository_has_a_few_short_sample_notes_titled_by_their_heading() -> None:
    samples = read_sample_notes()

    assert 3 <= len(samples) <= 5
    assert len(samples) == len(list(SAMPLES_DIRECTORY.glob("*.md")))
    assert samples[0].title == "Taking notes with the tutor"  # the first file, listed first
    for sample in samples:
        assert sample.title
        assert not sample.title.startswith("#")
        assert not sample.content.startswith("# ")
        assert sample.content.endswith(".\n")
        assert len(sample.content) < 2000
        assert "**" not in sample.content  # what the tutor quotes is plain text
        assert sentences.sentences(sample.content)


def test_sample_notes_are_not_hard_wrapped() -> None:
    """A paragraph is one line, so it reflows in the web app's and the terminal's editors: two
    lines of text in a row are list items."""
    for sample in read_sample_notes():
        lines = sample.content.splitlines()
        for line, after in itertools.pairwise(lines):
            if line.strip() and after.strip():
                assert _LIST_ITEM.match(after), (sample.title, after)


def test_a_sample_without_a_heading_is_titled_by_its_file_name(tmp_path: Path) -> None:
    (tmp_path / "2-second.md").write_text("# Second\n\nText two.\n", encoding="utf-8")
    (tmp_path / "1-first-note.md").write_text("Text one.", encoding="utf-8")
    (tmp_path / "ignored.txt").write_text("Not a note.", encoding="utf-8")

    assert read_sample_notes(tmp_path) == (
        SampleNote(title="1 first note", content="Text one.\n"),
        SampleNote(title="Second", content="Text two.\n"),
    )


def test_a_missing_samples_directory_gives_no_sample_notes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert read_sample_notes(tmp_path / "missing") == ()
    assert "no sample notes" in caplog.text


@pytest.mark.parametrize(("value", "expected"), [("false", False), ("0", False), ("true", True)])
def test_consentry_sample_notes_turns_them_on_and_off(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: bool
) -> None:
    assert Settings().sample_notes is True
    monkeypatch.setenv("CONSENTRY_SAMPLE_NOTES", value)

    assert Settings().sample_notes is expected
