"""Where the repository's files are, for tests that read them (docs, README.md, pyproject.toml),
wherever the test file sits in the tree."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root: the folder of ``pyproject.toml``."""
DOCS = ROOT / "docs"
