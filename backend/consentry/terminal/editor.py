"""Let the person edit a text in their own editor (``$EDITOR``, else ``$VISUAL``, else ``vi``)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

__all__ = ["EditorError", "edit_text"]


class EditorError(Exception):
    """The editor could not start, or exited with a failure: nothing is sent."""


def edit_text(text: str, *, command: list[str], suffix: str = ".md") -> str:
    """Open ``command`` on a temporary file holding ``text``; return the file as saved."""
    with tempfile.TemporaryDirectory(prefix="consentry-") as directory:
        path = Path(directory) / f"proposal{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            raise EditorError(f"cannot start the editor {command[0]!r}: {exc.strerror}") from None
        if result.returncode != 0:
            raise EditorError(f"the editor exited with status {result.returncode}")
        return path.read_text(encoding="utf-8")
