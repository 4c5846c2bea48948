"""The LangGraph SDK's Store (``client.store.put_item``, ``get_item``, ``delete_item``,
``search_items``, ``list_namespaces``): the caller's tenant's items, the same ones its graphs
read and write through ``runtime.store`` (``storage.store``). No route reaches another tenant's
items: every namespace is the caller's tenant's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from langgraph.store.base import NOT_PROVIDED, InvalidNamespaceError, Item

from consentry.api.http.deps import PrincipalDep, StoreDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.errors import InvalidRequestError
from consentry.runtime.store import InvalidFilterError
from consentry.schemas.sdk_store import (
    StoreDeleteRequest,
    StoreItem,
    StoreItems,
    StoreNamespaces,
    StoreNamespacesRequest,
    StorePutRequest,
    StoreSearchItem,
    StoreSearchRequest,
)

__all__ = ["router"]

router = APIRouter(prefix="/store", tags=["langgraph-sdk"], responses=ERROR_RESPONSES)

JOINED_NAMESPACE = r"^[^.]+(\.[^.]+)*$"
"""Labels joined with ``.``, none empty. (Kept simple: bounded repetitions nested in a pattern
make its compiled automaton tens of megabytes. A namespace beyond the limits holds no item.)"""


@router.put("/items", status_code=204)
async def put_item(body: StorePutRequest, owner: PrincipalDep, store: StoreDep) -> Response:
    """Store the item, or replace the one with its namespace and key (its `created_at` kept).
    `ttl` in minutes; left out, `CONSENTRY_STORE_TTL_MINUTES`."""
    ttl = body.ttl if "ttl" in body.model_fields_set else NOT_PROVIDED
    try:
        await store.for_tenant(owner.tenant).aput(
            tuple(body.namespace), body.key, body.value, index=body.index, ttl=ttl
        )
    except InvalidNamespaceError as exc:
        raise InvalidRequestError(
            str(exc), code="invalid_namespace", details={"namespace": body.namespace}
        ) from None
    return Response(status_code=204)


@router.get("/items")
async def get_item(
    owner: PrincipalDep,
    store: StoreDep,
    namespace: Annotated[
        str,
        Query(
            pattern=JOINED_NAMESPACE, max_length=32 * 257, description="Its labels joined with `.`."
        ),
    ],
    key: Annotated[str, Query(min_length=1, max_length=1024)],
    refresh_ttl: bool | None = None,
) -> StoreItem | None:
    """The item, or `null` when there is none (or it expired)."""
    found = await store.for_tenant(owner.tenant).aget(
        tuple(namespace.split(".")), key, refresh_ttl=refresh_ttl
    )
    return None if found is None else StoreItem(**_fields(found))


@router.delete("/items", status_code=204)
async def delete_item(body: StoreDeleteRequest, owner: PrincipalDep, store: StoreDep) -> Response:
    """Forget the item (204 also when there was none)."""
    await store.for_tenant(owner.tenant).adelete(tuple(body.namespace), body.key)
    return Response(status_code=204)


@router.post("/items/search")
async def search_items(
    body: StoreSearchRequest, owner: PrincipalDep, store: StoreDep
) -> StoreItems:
    """The items under `namespace_prefix` that meet `filter`, most recently written first, or
    by meaning with a `query` (each with its `score`; items without an embedding come last)."""
    try:
        found = await store.for_tenant(owner.tenant).asearch(
            tuple(body.namespace_prefix),
            query=body.query,
            filter=body.filter,
            limit=body.limit,
            offset=body.offset,
            refresh_ttl=body.refresh_ttl,
        )
    except InvalidFilterError as exc:
        raise InvalidRequestError(
            f"{exc} A filter's operators are $eq, $ne, $gt, $gte, $lt and $lte.",
            code="invalid_filter",
            details={"filter": body.filter},
        ) from None
    return StoreItems(items=[StoreSearchItem(**_fields(item), score=item.score) for item in found])


@router.post("/namespaces")
async def list_namespaces(
    body: StoreNamespacesRequest, owner: PrincipalDep, store: StoreDep
) -> StoreNamespaces:
    """The namespaces holding items, in order, that start with `prefix` and end with `suffix`
    (`*` matches any one label), cut to `max_depth` labels."""
    found = await store.for_tenant(owner.tenant).alist_namespaces(
        prefix=tuple(body.prefix) if body.prefix else None,
        suffix=tuple(body.suffix) if body.suffix else None,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return StoreNamespaces(namespaces=[list(namespace) for namespace in found])


def _fields(item: Item) -> dict[str, Any]:
    """LangGraph's item as the SDK reads it."""
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }
