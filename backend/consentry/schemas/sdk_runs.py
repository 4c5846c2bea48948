"""The LangGraph SDK face's run requests (``POST /threads/{id}/runs/stream``, ``/runs/stream``):
the subset of the LangGraph Agent Server's ``RunCreate`` that Consentry serves. A field the SDK
sends that Consentry does not serve is refused by name (422), never silently ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, JsonValue

from consentry.schemas.requests import RequestModel

__all__ = ["STREAM_MODES", "RunCommand", "RunCreate", "StreamMode"]

StreamMode = Literal["values", "messages-tuple", "custom"]
STREAM_MODES: tuple[str, ...] = ("values", "messages-tuple", "custom")


class RunCommand(RequestModel):
    """``command``: resume the thread's interrupts (``goto`` and ``update`` are not served)."""

    model_config = ConfigDict(extra="forbid")

    resume: JsonValue = Field(
        description="The answer to the interrupt the thread waits for, or `{interrupt_id: "
        'answer}` for several. A kit consent takes the kit\'s decision (`{"decision": '
        '"approve"}`), a raw interrupt any JSON, a tool-call review the middleware\'s '
        '`{"decisions": [...]}`.'
    )


class RunCreate(RequestModel):
    """Start a run on a thread (or on a new one, ``/runs/stream``) and stream it."""

    model_config = ConfigDict(extra="forbid")

    assistant_id: str = Field(
        min_length=1, max_length=64, description="A served graph's name, or its assistant UUID."
    )
    input: dict[str, JsonValue] | None = None
    command: RunCommand | None = None
    stream_mode: StreamMode | list[StreamMode] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = Field(
        default=False, description="Accepted: every Consentry run can be joined (`id:` lines)."
    )
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = Field(
        default=None, description="Only `configurable` keys the graph reads are passed on."
    )
    context: dict[str, Any] | None = None
    multitask_strategy: Literal["reject"] = Field(
        default="reject",
        description="`reject` (one run per thread: 409 `run_in_progress`); others are refused.",
    )
    on_disconnect: Literal["continue"] = Field(
        default="continue", description="The run goes on when the client goes away."
    )
    if_not_exists: Literal["reject"] = "reject"
    durability: Literal["sync"] | None = None
