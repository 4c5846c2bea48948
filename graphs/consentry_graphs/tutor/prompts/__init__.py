"""Prompt files of the tutor, loaded once at import."""

from __future__ import annotations

from importlib.resources import files

__all__ = ["ANSWER", "CLASSIFY", "REVIEW", "SUMMARIZE"]


def _load(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


CLASSIFY = _load("classify")
ANSWER = _load("answer")
SUMMARIZE = _load("summarize")
REVIEW = _load("review")
