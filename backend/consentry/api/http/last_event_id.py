"""``Last-Event-ID`` (header, or the ``last_event_id`` query parameter) of the streaming routes
that can be rejoined: a thread's stream, and the approvals stream.

The header wins (it is what a reconnecting ``EventSource`` sends); both are checked. A value that
is not a number is 400 ``invalid_last_event_id`` (not FastAPI's 422: documented as a pattern
only, so a client learns the rule from the document). On the LangGraph SDK's run join
(``RunLastEventId``) ``-1`` is also taken, as none: the SDK sends it to join a run from its
start."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Header, Query
from pydantic.config import JsonDict

from consentry.errors import BadRequestError

__all__ = ["LastEventId", "RunLastEventId"]

_PATTERN = re.compile("[0-9]{0,18}")
_FROM_START = "-1"


def _schema(schema: JsonDict) -> None:
    """A string (absent, not null) of the pattern."""
    schema.pop("anyOf", None)
    schema.update(type="string", pattern=f"^{_PATTERN.pattern}$")


def _run_schema(schema: JsonDict) -> None:
    """The pattern, or ``-1``."""
    schema.pop("anyOf", None)
    schema.update(type="string", pattern=f"^(?:{_FROM_START}|{_PATTERN.pattern})$")


def _parse(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    if not _PATTERN.fullmatch(raw):
        raise BadRequestError(
            "Last-Event-ID must be the `id:` of a frame this stream sent (a number).",
            code="invalid_last_event_id",
            details={"last_event_id": raw[:40]},
        )
    return int(raw)


def _last_event_id(
    header: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="The `id:` of the last frame the client has.",
            json_schema_extra=_schema,
        ),
    ] = None,
    last_event_id: Annotated[
        str | None, Query(description="Same as `Last-Event-ID`.", json_schema_extra=_schema)
    ] = None,
) -> int | None:
    after = _parse(last_event_id)
    if header is not None:
        after = _parse(header)
    return after


def _run_last_event_id(
    header: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="The `id:` of the last frame the client has (`-1`: none).",
            json_schema_extra=_run_schema,
        ),
    ] = None,
    last_event_id: Annotated[
        str | None, Query(description="Same as `Last-Event-ID`.", json_schema_extra=_run_schema)
    ] = None,
) -> int | None:
    return _last_event_id(
        None if header == _FROM_START else header,
        None if last_event_id == _FROM_START else last_event_id,
    )


LastEventId = Annotated[int | None, Depends(_last_event_id)]
RunLastEventId = Annotated[int | None, Depends(_run_last_event_id)]
"""The id a client rejoins a stream after (None: from the start, or from now)."""
