"""The LangGraph SDK face's run requests (``POST /threads/{id}/runs/stream``, ``/runs/stream``):
the subset of the LangGraph Agent Server's ``RunCreate`` that Consentry serves. A field the SDK
sends that Consentry does not serve is refused by name (422), never silently ignored."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from consentry.schemas.events import TerminalReason
from consentry.schemas.requests import RequestModel
from consentry.schemas.sdk import CheckpointRef, named_checkpoint

__all__ = [
    "STREAM_MODES",
    "CancelledRuns",
    "MultitaskStrategy",
    "RunCancelManyRequest",
    "RunCommand",
    "RunCreate",
    "RunFields",
    "SdkRun",
    "SdkRunStatus",
    "StreamMode",
    "WebhookPayload",
    "ended_status",
    "statuses_of",
]

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]

SdkRunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
"""A run's status as the SDK reads it (``docs/langgraph-sdk.md`` maps Consentry's terminal
reasons onto it)."""

_ENDED: dict[TerminalReason, SdkRunStatus] = {
    "completed": "success",
    "expired": "success",
    "interrupted": "interrupted",
    "cancelled": "interrupted",
    "failed": "error",
    "step_limit": "error",
    "budget_exhausted": "error",
    "timeout": "timeout",
}


def ended_status(reason: TerminalReason | None) -> SdkRunStatus:
    """The SDK's status of a run that ended with ``reason`` (``docs/langgraph-sdk.md``)."""
    return _ENDED[reason] if reason is not None else "error"


def statuses_of(status: SdkRunStatus) -> list[TerminalReason]:
    """The terminal reasons the SDK shows as ``status``."""
    return [reason for reason, shown in _ENDED.items() if shown == status]


StreamMode = Literal[
    "values",
    "updates",
    "tasks",
    "messages-tuple",
    "messages",
    "custom",
    "checkpoints",
    "debug",
    "events",
]
"""The stream modes, as the Agent Server serves them: ``values`` and ``updates`` after every
step, ``tasks`` as each starts and ends, ``messages-tuple`` token by token with its metadata,
``messages`` as the message so far (``messages/partial``...), ``custom`` (a graph's
``get_stream_writer()``), ``checkpoints`` and ``debug`` as LangGraph streams them, ``events``
LangChain's ``astream_events``."""
STREAM_MODES: tuple[str, ...] = get_args(StreamMode)


class RunCommand(RequestModel):
    """``command``: resume the thread's interrupts (``goto`` and ``update`` are not served)."""

    model_config = ConfigDict(extra="forbid")

    resume: JsonValue = Field(
        description="The answer to the interrupt the thread waits for, or `{interrupt_id: "
        'answer}` for several. A kit consent takes the kit\'s decision (`{"decision": '
        '"approve"}`), a raw interrupt any JSON, a tool-call review the middleware\'s '
        '`{"decisions": [...]}`.'
    )


class RunFields(RequestModel):
    """What a run request and a cron (the runs it starts) both say."""

    model_config = ConfigDict(extra="forbid")

    assistant_id: str = Field(
        min_length=1, max_length=64, description="A served graph's name, or its assistant UUID."
    )
    input: dict[str, JsonValue] | None = Field(
        default=None,
        description="The graph's input. Beside a `command` it may be sent empty (`{}`), as "
        "Agent Chat UI does; a `command` with a non-empty `input` is 422 `invalid_input`.",
    )
    stream_mode: StreamMode | list[StreamMode] = "values"
    interrupt_before: Literal["*"] | list[str] | None = Field(
        default=None,
        description='The nodes the run stops before (LangGraph\'s static breakpoints; `"*"`: '
        "every node), named as the graph names them (another: 422 `invalid_breakpoint`). A run "
        "with no `input` goes on from where it stopped.",
    )
    interrupt_after: Literal["*"] | list[str] | None = Field(
        default=None, description="The nodes the run stops after, as `interrupt_before`."
    )
    stream_subgraphs: bool = Field(
        default=False,
        description="Also the subgraphs' outputs of the modes asked, as `<mode>|<namespace>` "
        "frames (for the request that starts the run).",
    )
    stream_resumable: bool = Field(
        default=False,
        description="Every run can be joined (`id:` lines); with this, the run also keeps the "
        "graph outputs this stream asks for (`values`, `messages`...) so that a join replays "
        "them, for `CONSENTRY_RESUMABLE_STREAM_SECONDS` (`runs.stream` only).",
    )
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = Field(
        default=None,
        description='`configurable`: values for the graph\'s `config["configurable"]` (not '
        "`thread_id`, `checkpoint_*` nor keys that start with `__`: 422 `invalid_config`). Any "
        "other key is 422 `unsupported_field` (limits and callbacks are the server's). Kept "
        "with the thread: its runs sent without one get it.",
    )
    context: dict[str, Any] | None = Field(
        default=None,
        description="The graph's own runtime context (`Runtime.context`), checked against its "
        "`context_schema` (422 `invalid_context` naming the field). Kept with the thread, as "
        "`config` is.",
    )
    multitask_strategy: MultitaskStrategy = Field(
        default="enqueue",
        description="`enqueue` (the default, as on the Agent Server): the run starts at once on "
        "a thread with no active run and none waiting, else waits for the thread's active run "
        "(and those queued before it) and starts after it (`pending` until then); `reject`: one "
        "run per thread (409 `run_in_progress` while one runs); `interrupt`: as `enqueue`, and "
        "the active run is cancelled (its step cut within half a second); `rollback`: the "
        "thread's waiting runs are dropped and its active run cancelled, and what that run wrote "
        "is deleted with it (its events and audit records are kept; a consent it left pending "
        "ends `superseded`), then the run starts as with `enqueue`.",
    )
    durability: Literal["sync"] | None = None
    webhook: str | None = Field(
        default=None,
        max_length=2048,
        description="An `http(s)` URL the run's record is posted to when it ends (completed, "
        "interrupted at a consent, failed, cancelled...), from a durable outbox, retried with "
        "backoff for `CONSENTRY_WEBHOOK_RETRY_SECONDS`, signed when `CONSENTRY_WEBHOOK_SECRET` "
        "is set. Its host must be in `CONSENTRY_WEBHOOK_HOSTS` (default: loopback only; else "
        "422 `webhook_not_allowed`); a URL that is not `http(s)://host...` is 422 "
        "`webhook_invalid`. This run's only, never kept with the thread (docs/webhooks.md).",
    )


class RunCreate(RunFields):
    """Start a run on a thread (or on a new one, ``/runs/stream``) and stream it."""

    command: RunCommand | None = None
    on_disconnect: Literal["continue", "cancel"] = Field(
        default="continue",
        description="`continue`: the run goes on when the client goes away; `cancel`: a client "
        "gone before the run's end cancels it (`useStream` without `reconnectOnMount` asks it).",
    )
    if_not_exists: Literal["reject", "create"] = Field(
        default="reject",
        description="`create`: a thread path naming no thread creates it (its id must be a UUID).",
    )
    after_seconds: float | None = Field(
        default=None,
        ge=0,
        le=366 * 24 * 3600,
        description="Start the run this many seconds from now: it waits in its thread's run "
        "queue (`pending`, its `created_at` when it is due) and starts then, or when the runs "
        "before it have ended. A run on a new thread (`thread_id` null) gets its thread at "
        "once. The wait is stored: a restart keeps it.",
    )
    on_completion: Literal["delete", "keep"] | None = Field(
        default=None,
        description="For a run on a new thread (`thread_id` null): `delete` deletes that "
        "thread once the run has ended, unless a consent waits on it (kept then: a consent is "
        "never lost); `keep`, Consentry's default, keeps it. A run on a thread path keeps its "
        "thread whatever this says.",
    )
    checkpoint: CheckpointRef | None = Field(
        default=None,
        description="The checkpoint the run starts from (`useStream` sends the thread's "
        "newest): the thread's newest (or none) continues it; an older one the thread keeps "
        "forks it (a new branch from there; the consents pending on the branch it leaves end "
        "`superseded`). A `command` answers the newest only (else 409 `checkpoint_not_head`); "
        "a fork is not queued (409 `fork_not_queued`).",
    )
    checkpoint_id: str | None = Field(
        default=None, max_length=64, description="The same as `checkpoint`, by its id alone."
    )

    @property
    def from_checkpoint(self) -> str | None:
        """The id of the checkpoint the client asks the run to start from, if it names one."""
        return named_checkpoint(self.checkpoint, self.checkpoint_id)

    @property
    def modes(self) -> frozenset[str]:
        """The stream modes asked for."""
        return frozenset(
            [self.stream_mode] if isinstance(self.stream_mode, str) else self.stream_mode
        )


class SdkRun(BaseModel):
    """A run as the SDK's ``Run``, with Consentry's terminal reason and error code beside it."""

    run_id: str
    thread_id: str
    assistant_id: str = Field(description="The UUID of the thread's graph's assistant.")
    created_at: datetime
    updated_at: datetime = Field(description="When it ended (when it started, while it runs).")
    status: SdkRunStatus
    metadata: dict[str, Any] = Field(description="The client's, as the run was started with.")
    multitask_strategy: MultitaskStrategy = "reject"
    reason: TerminalReason | None = Field(
        description="Consentry's terminal reason (null while it runs)."
    )
    error_code: str | None = Field(description="The stable code of the error that ended it.")


class WebhookPayload(SdkRun):
    """What a run's end posts to its webhook: its record as ``runs.get`` reads it, then (as the
    LangGraph Agent Server posts them) when it started and ended, when this attempt was sent, the
    thread's state values as the run left them, and the code of the error that ended it."""

    run_started_at: datetime
    run_ended_at: datetime
    webhook_sent_at: datetime = Field(description="When this attempt was sent.")
    values: dict[str, Any] | None = Field(
        description="The thread's state values as the run left them (null when they could not "
        "be read)."
    )
    error: str | None = Field(
        description="The stable code of the error that ended the run (`error_code`), or null."
    )


def _names_runs_schema(schema: dict[str, Any]) -> None:
    """The JSON Schema of ``RunCancelManyRequest`` says what its ``_names_runs`` checks."""
    schema["anyOf"] = [
        {"required": ["thread_id"], "properties": {"thread_id": {"type": "string"}}},
        {
            "required": ["status"],
            "properties": {"status": {"type": "string"}, "run_ids": {"type": "null"}},
        },
    ]


class RunCancelManyRequest(RequestModel):
    """``POST /runs/cancel`` (``runs.cancel_many``): the caller's runs of one thread, or of all
    its threads, by id or by status."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_names_runs_schema)

    thread_id: str | None = Field(default=None, max_length=64)
    run_ids: list[str] | None = Field(
        default=None, max_length=1000, description="Only these (with `thread_id`)."
    )
    status: Literal["pending", "running", "all"] | None = Field(
        default=None,
        description="`pending`: runs waiting in a thread's queue; `running`: active ones; "
        "`all`: both (the default with `thread_id`).",
    )

    @model_validator(mode="after")
    def _names_runs(self) -> Self:
        if self.thread_id is None and self.status is None:
            raise ValueError("name a `thread_id` (with `run_ids`), or a `status`")
        if self.run_ids is not None and self.thread_id is None:
            raise ValueError("`run_ids` are a thread's: send its `thread_id` too")
        return self


class CancelledRuns(BaseModel):
    """What ``runs.cancel_many`` answers: each run it cancelled."""

    cancelled: list[dict[str, str]] = Field(description="`{thread_id, run_id}` of each.")
