"""Consentry's SSE frames (``api.http.streaming``) are written without sse-starlette's
``ServerSentEvent`` for an event's JSON, byte for byte what it would write; data with a line
break still goes as several ``data`` lines."""

from __future__ import annotations

import pytest
from sse_starlette import ServerSentEvent

from consentry.api.http.streaming import _frame
from consentry.runtime.outgoing import OutgoingEvent


@pytest.mark.parametrize(
    "data",
    [
        '{"delta":" word"}',
        '{"delta":"\\n escaped \\" \\\\"}',
        '{"delta":"é 😀 \u2028 \u2029 \x85 \x7f"}',
        "",
        "two\nlines",
        "carriage\rreturn\r\nand both",
    ],
)
def test_a_frame_is_what_sse_starlette_writes(data: str) -> None:
    event = OutgoingEvent(12, "token", data)
    expected = ServerSentEvent(data=data, event="token", id="12").encode()
    assert _frame(event) == expected
