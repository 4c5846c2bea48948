"""The LangGraph SDK's Store bodies and answers (``client.store``): items by namespace and key.

A namespace is a list of labels, each non-empty, without ``.`` (the SDK joins them with ``.`` in
a query string) and at most 256 characters, at most 32 deep; a key at most 1024 characters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, JsonValue, StrictBool, StringConstraints
from pydantic_core import PydanticCustomError

from consentry.schemas.requests import RequestModel
from consentry.schemas.sdk import Count, _not_a_boolean

__all__ = [
    "MAX_TTL_MINUTES",
    "StoreDeleteRequest",
    "StoreItem",
    "StoreItems",
    "StoreNamespaces",
    "StoreNamespacesRequest",
    "StorePutRequest",
    "StoreSearchItem",
    "StoreSearchRequest",
]

Label = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^.]+$")]
"""One label of a namespace: not empty, no ``.``."""
Namespace = Annotated[list[Label], Field(min_length=1, max_length=32)]
Prefix = Annotated[list[Label], Field(max_length=32)]
Key = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
MAX_TTL_MINUTES = 100 * 366 * 24 * 60
"""A century: the longest time to live (past it, a date the databases cannot hold)."""


def _only_false(value: Any) -> Any:
    """``false`` itself (pydantic would take ``0`` for it)."""
    if value is not False:
        raise PydanticCustomError("literal_error", "Input should be false")
    return value


class StorePutRequest(RequestModel):
    """``PUT /store/items``: store the item, or replace the one with its namespace and key."""

    namespace: Namespace = Field(description='Its namespace; the first label is not "langgraph".')
    key: Key
    value: dict[str, JsonValue]
    index: Annotated[Literal[False], BeforeValidator(_only_false)] | list[str] | None = Field(
        default=None,
        description="The fields embedded for semantic search: the configured ones (null), "
        "these, or none (`false`).",
    )
    ttl: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_MINUTES,
        allow_inf_nan=False,
        description="Minutes it lives after its last write or read (null: for ever; left "
        "out: `CONSENTRY_STORE_TTL_MINUTES`).",
    )


class StoreDeleteRequest(RequestModel):
    """``DELETE /store/items``: forget the item (nothing happens when there is none)."""

    namespace: Namespace
    key: Key


class StoreSearchRequest(RequestModel):
    """``POST /store/items/search``: the items under a namespace prefix."""

    namespace_prefix: Prefix = Field(default_factory=list)
    filter: dict[str, JsonValue] | None = Field(
        default=None,
        description="Each key of the value equals this, or meets its operators (`$eq`, `$ne`, "
        "`$gt`, `$gte`, `$lt`, `$lte`).",
    )
    limit: Count = Field(default=10, ge=1, le=1000)
    offset: Count = Field(default=0, ge=0, le=1_000_000)
    query: str | None = Field(
        default=None, max_length=10_000, description="Ranks the items by meaning (`score`)."
    )
    refresh_ttl: StrictBool | None = None


Pattern = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^.]+$")]
"""A label, or ``*`` for any one label."""


class StoreNamespacesRequest(RequestModel):
    """``POST /store/namespaces``: the namespaces that hold items, in order."""

    prefix: Annotated[list[Pattern], Field(max_length=32)] | None = None
    suffix: Annotated[list[Pattern], Field(max_length=32)] | None = None
    max_depth: Annotated[int, Field(ge=1, le=32), BeforeValidator(_not_a_boolean)] | None = None
    limit: Count = Field(default=100, ge=1, le=1000)
    offset: Count = Field(default=0, ge=0, le=1_000_000)


class StoreItem(BaseModel):
    """An item: its namespace, key, value, and when it was created and last written."""

    namespace: list[str]
    key: str
    value: dict[str, JsonValue]
    created_at: datetime
    updated_at: datetime


class StoreSearchItem(StoreItem):
    """An item a search found, with its ``score`` when the search had a ``query``."""

    score: float | None = None


class StoreItems(BaseModel):
    items: list[StoreSearchItem]


class StoreNamespaces(BaseModel):
    namespaces: list[list[str]]
