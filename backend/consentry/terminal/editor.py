"""Let the person edit a proposal in their own editor (``$EDITOR``, else ``$VISUAL``, else
``vi``), and read what they saved: the edit to send, or :class:`Unsent` (why nothing is sent).

An edit is sent only when the person changed something. Nothing is sent, and the consent stays
pending (the chat asks again), when:

- the saved file is the text the editor was opened on: the editor quit without saving (vi's
  ``:q!`` leaves the file as it was and exits 0) or saved it as it was. A final newline more or
  less is no change (editors add one when they save); JSON is compared as values, so spacing and
  the order of keys are no change either, while ``1``, ``1.0`` and ``true`` are three values;
- the saved file is empty, or only blanks, or was removed: the way to abandon an edit in any
  editor (as ``git commit`` reads an empty message), and never a note's wanted content
  (deleting a note is its own consent);
- the editor cannot start, or exits with a failure (vi's ``:cq``), or the file cannot be read;
- a JSON edit does not parse, or is not an object.

The first two are the person's choice; the others are failures (:attr:`Unsent.failed`).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Unsent", "edit_json", "edit_text", "read_json_edit", "read_text_edit"]


@dataclass(frozen=True)
class Unsent:
    """Why an edit sends nothing; ``failed`` when the editor or the file failed, rather than the
    person chose to send nothing."""

    reason: str
    failed: bool = False

    @property
    def line(self) -> str:
        """The one line that tells the person: ``Nothing sent: the edit was left unchanged``."""
        return f"Nothing sent: {self.reason}"


_UNCHANGED = Unsent("the edit was left unchanged")
_EMPTIED = Unsent("the edited file was empty")


def edit_text(text: str, *, command: list[str]) -> str | Unsent:
    """A note's content, edited: the file as saved, exactly (its final newline kept)."""
    saved = _run_editor(text, command=command, suffix=".md")
    return saved if isinstance(saved, Unsent) else read_text_edit(text, saved)


def edit_json(value: dict[str, Any], *, command: list[str]) -> dict[str, Any] | Unsent:
    """A JSON object (a tool call's arguments, a proposal's fields), edited as indented JSON."""
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    saved = _run_editor(text, command=command, suffix=".json")
    return saved if isinstance(saved, Unsent) else read_json_edit(text, saved)


def read_text_edit(opened: str, saved: str) -> str | Unsent:
    """``saved``, unless it is ``opened`` (a final newline aside) or empty."""
    if saved.removesuffix("\n") == opened.removesuffix("\n"):
        return _UNCHANGED
    if not saved.strip():
        return _EMPTIED
    return saved


def read_json_edit(opened: str, saved: str) -> dict[str, Any] | Unsent:
    """The object ``saved`` holds, unless it is the value ``opened`` held, or ``saved`` is empty,
    not JSON, or not an object."""
    if not saved.strip():
        return _EMPTIED
    try:
        edited = json.loads(saved)
    except json.JSONDecodeError as exc:
        return Unsent(f"the edit is not JSON ({exc})", failed=True)
    if not isinstance(edited, dict):
        return Unsent("the edit must be a JSON object", failed=True)
    if _canonical(edited) == _canonical(json.loads(opened)):
        return _UNCHANGED
    return edited


def _canonical(value: Any) -> str:
    """One spelling per JSON value: keys sorted, no spaces (``1`` and ``1.0`` stay apart)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _run_editor(text: str, *, command: list[str], suffix: str) -> str | Unsent:
    """Open ``command`` on a temporary file holding ``text``; the file as saved."""
    with tempfile.TemporaryDirectory(prefix="consentry-") as directory:
        path = Path(directory) / f"proposal{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            return Unsent(f"cannot start the editor {command[0]!r}: {exc.strerror}", failed=True)
        if result.returncode != 0:
            return Unsent(f"the editor exited with status {result.returncode}", failed=True)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Unsent("the edited file was removed")
        except (OSError, UnicodeDecodeError) as exc:
            return Unsent(f"cannot read the edited file ({exc})", failed=True)
