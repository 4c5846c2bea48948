"""The base of every request body: text that a database can store, on SQLite and PostgreSQL.

PostgreSQL cannot store the NUL character (U+0000) in text, and neither database can store a
lone UTF-16 surrogate (JSON allows ``"\\ud800"``, which is not Unicode text). A request carrying
either, anywhere in its body (nested edits included), is refused before it reaches storage with
422 ``unstorable_text``, the same on both databases.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["UNSTORABLE_TEXT", "RequestModel"]

UNSTORABLE_TEXT = "unstorable_text"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _find_unstorable(value: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if isinstance(value, str):
        return path if _UNSTORABLE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _UNSTORABLE.search(key):
                return (*path, key)
            found = _find_unstorable(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_unstorable(item, (*path, index))
            if found is not None:
                return found
    return None


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unstorable_text(cls, data: Any) -> Any:
        found = _find_unstorable(data, ())
        if found is not None:
            raise PydanticCustomError(
                UNSTORABLE_TEXT,
                "Text at {where} contains a NUL character (U+0000) or a lone surrogate, which "
                "cannot be stored.",
                {"where": ".".join(str(part) for part in found) or "the body"},
            )
        return data
