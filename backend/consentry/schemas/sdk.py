"""The LangGraph SDK face's assistants and threads (``/assistants/...``, ``/threads/...``): the
subset of the LangGraph Agent Server's requests and answers that ``langgraph-sdk`` and
``useStream`` use. A request field Consentry does not serve is refused by name (422), never
silently ignored; the run requests are in ``schemas.sdk_runs``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    JsonValue,
    StringConstraints,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from consentry.schemas.requests import RequestModel

__all__ = [
    "Assistant",
    "AssistantCountRequest",
    "AssistantCreateRequest",
    "AssistantLatestRequest",
    "AssistantSchemas",
    "AssistantSearchRequest",
    "AssistantUpdateRequest",
    "AssistantVersion",
    "AssistantVersionsRequest",
    "CheckpointRef",
    "SdkThread",
    "SdkThreadState",
    "SdkThreadStatus",
    "ServerInfo",
    "ThreadCountRequest",
    "ThreadCreateRequest",
    "ThreadHistoryRequest",
    "ThreadSearchRequest",
    "ThreadStateAtRequest",
    "ThreadUpdateRequest",
    "named_checkpoint",
]

SdkThreadStatus = Literal["idle", "busy", "interrupted", "error"]
"""A thread's status as the SDK reads it: Consentry's ``idle`` (``error`` when its last run
failed, hit its step limit, timed out or ran out of tokens), ``running`` (``busy``) and
``awaiting_consent`` (``interrupted``: a consent waits for a decision)."""

MetadataValue = str | int | float | bool
_CHECKPOINT_METADATA_KEY = r"^[a-zA-Z0-9_.-]+$"
CheckpointMetadataKey = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=_CHECKPOINT_METADATA_KEY)
]
"""A key a thread's history is filtered by: the characters a checkpointer takes in one (LangGraph's
SQLite saver refuses the others, as it builds its query from them)."""
CheckpointMetadata = Annotated[
    dict[CheckpointMetadataKey, JsonValue],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {
                "minLength": 1,
                "maxLength": 128,
                "pattern": _CHECKPOINT_METADATA_KEY,
            },
        }
    ),
]
"""(Its JSON Schema names the keys' pattern by ``propertyNames``, which pydantic would leave to a
``patternProperties`` that lets other keys through.)"""
_METADATA_KEY = r'^[^"\\]+$'
MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=_METADATA_KEY)]
"""A key a search names: no ``"`` nor ``\\`` (it becomes a JSON path)."""
_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JSON number holds exactly wherever it is read (a double: JavaScript's
``Number.MAX_SAFE_INTEGER``)."""


def _a_safe_integer(value: Any) -> Any:
    """An integer a filter compares is one JSON holds exactly (the databases bind up to 64 bits);
    a number written with a fraction or an exponent whose value is an integer is one too (JSON
    Schema's ``integer``: ``1e19`` is refused as ``10000000000000000000`` is)."""
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if integral and not isinstance(value, bool) and abs(value) > _SAFE_INTEGER:
        raise PydanticCustomError(
            "int_range",
            "An integer in a metadata filter must be within ±(2^53 - 1), "
            "the integers a JSON number holds exactly",
        )
    return value


MetadataFilter = Annotated[
    dict[MetadataKey, Annotated[MetadataValue, BeforeValidator(_a_safe_integer)]],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"minLength": 1, "maxLength": 128, "pattern": _METADATA_KEY},
            "additionalProperties": {
                "anyOf": [
                    {"type": "string"},
                    {"type": "integer", "minimum": -_SAFE_INTEGER, "maximum": _SAFE_INTEGER},
                    {"type": "number", "not": {"type": "integer"}},
                    {"type": "boolean"},
                ]
            },
        }
    ),
]
"""The metadata a search or a count filters on: text, an integer JSON holds exactly, another
number or a boolean a key. (Its JSON Schema names the keys' pattern by ``propertyNames``: pydantic's
``patternProperties`` would let a key of any other form through.)"""


def _not_a_boolean(value: Any) -> Any:
    """JSON Schema's integers are not booleans (pydantic takes ``false`` for 0); ``3.0`` is
    one."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


Count = Annotated[int, BeforeValidator(_not_a_boolean)]
_LIMIT = Field(default=10, ge=1, le=1000, description="At most this many.")
_OFFSET = Field(default=0, ge=0, le=1_000_000, description="Skip this many first.")


class AssistantSearchRequest(RequestModel):
    """``POST /assistants/search``: the served graphs' assistants and the caller's own that match
    every filter."""

    graph_id: str | None = Field(default=None, max_length=64)
    name: str | None = Field(default=None, max_length=200)
    metadata: MetadataFilter | None = Field(
        default=None,
        description="Each key equals the assistant's (a served graph's has `{\"created_by\": "
        '"system"}`), as a thread search compares them.',
    )
    limit: Count = _LIMIT
    offset: Count = _OFFSET
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None


class AssistantCountRequest(RequestModel):
    """``POST /assistants/count``: how many assistants ``search`` finds with these filters."""

    graph_id: str | None = Field(default=None, max_length=64)
    name: str | None = Field(default=None, max_length=200)
    metadata: MetadataFilter | None = None


_ASSISTANT_CONFIG = Field(
    default=None,
    description='`configurable`: the values its runs\' `config["configurable"]` starts with '
    "(a run's own win, key by key; not the server's keys: 422 `invalid_config`). Any other "
    "key: 422 `unsupported_field`.",
)
_ASSISTANT_CONTEXT = Field(
    default=None,
    description="The runtime context its runs start with (a run's own keys win), checked "
    "against the graph's `context_schema` (422 `invalid_context`).",
)


class AssistantCreateRequest(RequestModel):
    """``POST /assistants``: an assistant of the caller's own over a served graph."""

    graph_id: str = Field(min_length=1, max_length=64, description="A served graph's name.")
    assistant_id: str | None = Field(
        default=None, max_length=64, description="A UUID (default: a new one)."
    )
    if_exists: Literal["raise", "do_nothing"] = Field(
        default="raise",
        description="`raise`: an id taken is 409 `assistant_exists`; `do_nothing`: the caller's "
        "own assistant of that id is answered as it is.",
    )
    name: str | None = Field(
        default=None, min_length=1, max_length=200, description="Default: the graph's name."
    )
    description: str | None = Field(default=None, max_length=2000)
    config: dict[str, Any] | None = _ASSISTANT_CONFIG
    context: dict[str, Any] | None = _ASSISTANT_CONTEXT
    metadata: dict[str, JsonValue] | None = None


class AssistantUpdateRequest(RequestModel):
    """``PATCH /assistants/{id}``: a new version of the caller's assistant, in use at once."""

    graph_id: str | None = Field(default=None, min_length=1, max_length=64)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    config: dict[str, Any] | None = _ASSISTANT_CONFIG
    context: dict[str, Any] | None = _ASSISTANT_CONTEXT
    metadata: dict[str, JsonValue] | None = Field(
        default=None, description="Merged into the assistant's."
    )


class AssistantVersionsRequest(RequestModel):
    """``POST /assistants/{id}/versions``: the assistant's versions, newest first."""

    metadata: MetadataFilter | None = None
    limit: Count = _LIMIT
    offset: Count = _OFFSET


class AssistantLatestRequest(RequestModel):
    """``POST /assistants/{id}/latest``: use one of the assistant's versions."""

    version: Count = Field(ge=1, le=1_000_000)


class AssistantVersion(BaseModel):
    """One version of an assistant, as the SDK's ``AssistantVersion``."""

    assistant_id: str
    graph_id: str
    config: dict[str, Any]
    context: dict[str, Any]
    created_at: datetime
    metadata: dict[str, Any]
    version: int
    name: str
    description: str | None = None


class Assistant(BaseModel):
    """An assistant, as the SDK's ``Assistant``: a served graph's own or the caller's."""

    assistant_id: str = Field(
        description="A served graph's own: `uuid5(NAMESPACE_URL, graph_id)`; the caller's: the "
        "UUID it was created with."
    )
    graph_id: str
    config: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(description="A served graph's own: when this server started.")
    updated_at: datetime
    metadata: dict[str, Any]
    version: int = 1
    name: str
    description: str | None = None


class AssistantSchemas(BaseModel):
    """A graph's JSON Schemas (those of `GET /v1/graphs`), and that of its `context_schema`
    (null: it has none). `config_schema` is null: LangGraph 1 describes what a graph is
    configured with by its context schema; `configurable` values are not described."""

    graph_id: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    state_schema: dict[str, Any] | None
    config_schema: dict[str, Any] | None = None
    context_schema: dict[str, Any] | None = None


class ThreadCreateRequest(RequestModel):
    """``POST /threads``: a thread before its first run. Its graph is ``metadata.graph_id``
    (the SDK's ``graph_id``) or the default, and its first run may bind it to another."""

    thread_id: UUID | None = Field(default=None, description="The id to give it (a UUID).")
    metadata: dict[str, JsonValue] | None = None
    if_exists: Literal["raise", "do_nothing"] = Field(
        default="raise",
        description="When the id is taken: `raise` (409 `thread_exists`) or `do_nothing` (the "
        "caller's thread as it is).",
    )


class ThreadUpdateRequest(RequestModel):
    """``PATCH /threads/{id}``: merge keys into the thread's metadata."""

    metadata: dict[str, JsonValue]


class ThreadSearchRequest(RequestModel):
    """``POST /threads/search``: the caller's threads that match every filter."""

    metadata: MetadataFilter | None = Field(
        default=None,
        description="Each key equals the thread's (text, number or boolean); `graph_id` and "
        "`assistant_id` are the thread's graph.",
    )
    ids: list[str] | None = Field(default=None, max_length=1000)
    status: SdkThreadStatus | None = Field(
        default=None, description="`interrupted`: the threads a consent waits on."
    )
    limit: Count = _LIMIT
    offset: Count = _OFFSET
    sort_by: Literal["thread_id", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None


class ThreadCountRequest(RequestModel):
    """``POST /threads/count``: how many of the caller's threads ``search`` finds with these
    filters (``values`` is not a filter Consentry serves: 422)."""

    metadata: MetadataFilter | None = None
    status: SdkThreadStatus | None = None


class CheckpointRef(RequestModel):
    """One of a thread's checkpoints, as a ``ThreadState.checkpoint`` names it."""

    thread_id: str | None = None
    checkpoint_ns: str = Field(default="", max_length=0, description='Only the graph\'s own: "".')
    checkpoint_id: str | None = Field(default=None, max_length=64)
    checkpoint_map: None = Field(
        default=None,
        description="Subgraphs' checkpoints: none are named (`useStream` sends `null`).",
    )


def named_checkpoint(checkpoint: CheckpointRef | None, checkpoint_id: str | None) -> str | None:
    """The id of the checkpoint a request names (by ``checkpoint_id``, else ``checkpoint``)."""
    if checkpoint_id is not None:
        return checkpoint_id
    return checkpoint.checkpoint_id if checkpoint is not None else None


class ThreadStateAtRequest(RequestModel):
    """``POST /threads/{id}/state/checkpoint``: the graph's state at a checkpoint."""

    checkpoint: CheckpointRef
    subgraphs: bool = Field(default=False, description="Accepted; subgraphs are not shown.")


class ThreadHistoryRequest(RequestModel):
    """``POST /threads/{id}/history``: the thread's checkpoints, newest first."""

    limit: Count = _LIMIT
    before: str | CheckpointRef | None = Field(
        default=None, description="Only checkpoints older than this one (an id or a checkpoint)."
    )
    metadata: CheckpointMetadata | None = Field(
        default=None, description="Only checkpoints whose metadata has these keys and values."
    )
    checkpoint: CheckpointRef | None = Field(
        default=None, description="The graph's own namespace only (subgraphs are not listed)."
    )


class SdkThread(BaseModel):
    """A thread as the SDK's ``Thread``."""

    thread_id: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = Field(
        description="The client's, with `graph_id` and `assistant_id` of the thread's graph."
    )
    status: SdkThreadStatus
    values: dict[str, Any] = Field(description="The graph's state now (messages as dicts).")
    interrupts: dict[str, list[dict[str, Any]]] = Field(
        description='What the thread waits for, by interrupt (approval) id: `[{"value", "id"}]`.'
    )


class SdkThreadState(BaseModel):
    """A checkpoint of the thread's graph, as the SDK's ``ThreadState``."""

    values: dict[str, Any]
    next: list[str]
    tasks: list[dict[str, Any]]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    created_at: str | None
    parent_checkpoint: dict[str, Any] | None
    interrupts: list[dict[str, Any]]


class ServerFlags(BaseModel):
    """What the server offers beyond runs and threads, as the Agent Server's ``/info`` says."""

    assistants: bool = Field(description="Assistants can be read (they are the served graphs).")
    crons: bool = Field(default=True, description="Crons are served (`client.crons`).")
    langsmith: bool = False


class ServerInfo(BaseModel):
    """``GET /info``: what the server is (Agent Chat UI checks it answers before it connects)."""

    server: Literal["consentry"] = "consentry"
    version: str = Field(description="Consentry's version.")
    langgraph_py_version: str = Field(description="The version of LangGraph that runs the graphs.")
    flags: ServerFlags
    host: dict[str, Any] = Field(description='`{"kind": "self-hosted"}`.')
