"""Size limits checked on a parsed request, each a setting: the text of a note
(``CONSENTRY_MAX_NOTE_CHARS``), the text of a decision's ``edited`` value
(``CONSENTRY_MAX_EDIT_CHARS``) and the ``limit`` of a listing (``CONSENTRY_MAX_PAGE_SIZE``,
``CONSENTRY_MAX_SEARCH_RESULTS``). Each refusal is 422 ``limit_exceeded`` whose message names the
setting and whose ``details`` are ``{"limit": <setting>, "max": <value>, "where": <field>}``.

The body's size, depth and arrays are checked before parsing (``body_limit``, ``json_limits``);
a chat message's length where the run starts (``message_too_long``). docs/limits.md lists them
all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from fastapi import Depends, Query

from consentry.api.http.deps import SettingsDep
from consentry.errors import InvalidRequestError
from consentry.schemas.chat import ChatRequest
from consentry.settings import Settings

__all__ = ["check_chat_edits", "check_edits", "check_note_text", "limit_exceeded", "page_limit"]

LIMIT_EXCEEDED = "limit_exceeded"


def limit_exceeded(setting: str, maximum: int, message: str, *, where: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"{message} ({setting}).",
        code=LIMIT_EXCEEDED,
        details={"limit": setting, "max": maximum, "where": where},
    )


def check_note_text(settings: Settings, content: str | None, *, where: str = "content") -> None:
    """A note's content a client writes: at most ``max_note_chars`` characters."""
    maximum = settings.max_note_chars
    if content is not None and len(content) > maximum:
        raise limit_exceeded(
            "max_note_chars",
            maximum,
            f"The note's content is {len(content)} characters; at most {maximum} are allowed",
            where=where,
        )


def check_edits(settings: Settings, edits: Iterable[tuple[str, Any]]) -> None:
    """Every text in each decision's ``edited`` value (given as ``(where, edited)``): at most
    ``max_edit_chars`` characters."""
    maximum = settings.max_edit_chars
    for where, edited in edits:
        stack: list[tuple[Any, str]] = [(edited, where)]
        while stack:
            value, path = stack.pop()
            if isinstance(value, str) and len(value) > maximum:
                raise limit_exceeded(
                    "max_edit_chars",
                    maximum,
                    f"The edited text at {path} is {len(value)} characters; at most {maximum} "
                    "are allowed",
                    where=path,
                )
            if isinstance(value, dict):
                stack.extend((item, f"{path}.{key}") for key, item in value.items())
            elif isinstance(value, list):
                stack.extend((item, f"{path}.{index}") for index, item in enumerate(value))


def check_chat_edits(settings: Settings, request: ChatRequest) -> None:
    """The ``edited`` values of a chat request's decisions (``check_edits``)."""
    if isinstance(request.resume, list):
        edits = [(f"resume.{n}.edited", d.edited) for n, d in enumerate(request.resume)]
    else:
        edits = [("resume.edited", d.edited) for d in request.decisions]
    check_edits(settings, edits)


PageSetting = Literal["max_page_size", "max_search_results"]


def page_limit(default: int, *, setting: PageSetting = "max_page_size") -> Any:
    """The ``limit`` query parameter of a listing, as a dependency: 1 to the setting's value,
    ``default`` when absent; above the setting, 422 ``limit_exceeded`` (never clamped)."""

    async def limit_parameter(settings: SettingsDep, limit: int = default) -> int:
        maximum: int = getattr(settings, setting)
        if limit > maximum:
            raise limit_exceeded(
                setting, maximum, f"`limit` is {limit}; at most {maximum} is allowed", where="limit"
            )
        return limit

    # Annotations as objects, not strings (this module's ``from __future__``): FastAPI reads the
    # query parameter's description, which names the setting, from here.
    description = f"Items per page, at most `CONSENTRY_{setting.upper()}`."
    limit_parameter.__annotations__ = {
        "settings": SettingsDep,
        "limit": Annotated[int, Query(ge=1, description=description)],
        "return": int,
    }
    return Depends(limit_parameter)
