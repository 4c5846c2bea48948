"""The served graphs' assistants and the owners' own (:class:`Assistants`): look-ups, changes
as versions, search, and each graph's drawing and subgraphs, made once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, cast
from uuid import uuid4

from langgraph.pregel import Pregel

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.assistants._assistant import (
    Assistant,
    AssistantChanges,
    SortKey,
    as_uuid,
    assistant_exists,
    assistant_uuid,
    from_record,
    matches,
    sort_value,
)
from consentry.runtime.clock import Clock
from consentry.runtime.graph_state import as_json
from consentry.runtime.runs.execute import RunOptions
from consentry.storage import assistants as assistants_repo
from consentry.storage.assistants import AssistantFields, AssistantRecord, AssistantVersionRecord
from consentry.storage.db.database import Database, is_duplicate_key
from consentry.storage.metadata_filters import MetadataValue
from consentry_graphs.graph_io import GraphIO, describe_graph
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["Assistants"]


class Assistants:
    """The served graphs' assistants (by name or UUID) and the owners' own (by UUID)."""

    def __init__(
        self,
        *,
        graphs: Mapping[str, GraphSpec],
        compiled: Callable[[str], CompiledGraph],
        created_at: datetime,
        db: Database,
        clock: Clock,
    ) -> None:
        self._graphs = graphs
        self._compiled = compiled
        self._db = db
        self._clock = clock
        self._by_id = {
            key: Assistant(assistant_uuid(name), name, created_at, created_at, name)
            for name in sorted(graphs)
            for key in (name, assistant_uuid(name))
        }
        self._drawings: dict[tuple[str, int | bool], dict[str, Any]] = {}
        self._subgraphs: dict[tuple[str, str | None, bool], dict[str, GraphIO]] = {}

    def served(self) -> list[Assistant]:
        """Every served graph's assistant, by graph name."""
        return [self._by_id[name] for name in sorted(self._graphs)]

    async def get(self, owner: Principal, assistant_id: str) -> Assistant:
        """The served graph's assistant (by its graph or UUID) or the owner's own;
        ``NotFoundError`` otherwise (another owner's answers the same)."""
        found = self._by_id.get(assistant_id)
        if found is not None:
            return found
        if (uuid := as_uuid(assistant_id)) is not None:
            async with self._db.read() as conn:
                row = await assistants_repo.get_assistant(conn, owner, uuid)
            if row is not None:
                return from_record(row)
        raise NotFoundError.of("assistant", assistant_id)

    def spec(self, assistant: Assistant) -> GraphSpec:
        return self._graphs[assistant.graph]

    async def create(
        self,
        owner: Principal,
        given: AssistantChanges,
        *,
        assistant_id: str | None,
        if_exists: Literal["raise", "do_nothing"],
    ) -> Assistant:
        """A new assistant of the owner's over a served graph (``if_exists="do_nothing"``: the
        owner's own of that id, as it is)."""
        chosen = as_uuid(assistant_id) if assistant_id is not None else str(uuid4())
        if chosen is None or chosen in self._by_id:
            raise InvalidRequestError(
                "An assistant's id is a UUID that no served graph's assistant has.",
                code="invalid_assistant_id",
                details={"assistant_id": assistant_id},
            )
        graph = given.graph or ""
        fields = self._checked(
            AssistantFields(
                graph=graph,
                name=given.name or graph,
                description=given.description,
                config=given.config or {},
                context=given.context or {},
                metadata=given.metadata or {},
            )
        )
        try:
            async with self._db.write() as conn:
                existing = await assistants_repo.get_assistant(conn, owner, chosen)
                if existing is not None and if_exists == "do_nothing":
                    return from_record(existing)
                if existing is not None or await assistants_repo.assistant_id_taken(conn, chosen):
                    raise assistant_exists(chosen)
                row = await assistants_repo.insert_assistant(
                    conn, owner, chosen, fields, now=self._clock()
                )
        except Exception as exc:
            if not is_duplicate_key(exc):
                raise
            # Created meanwhile by another request: the owner's, answered as it is, or 409.
            async with self._db.read() as conn:
                existing = await assistants_repo.get_assistant(conn, owner, chosen)
            if existing is not None and if_exists == "do_nothing":
                return from_record(existing)
            raise assistant_exists(chosen) from None
        return from_record(row)

    async def update(
        self, owner: Principal, assistant_id: str, given: AssistantChanges
    ) -> Assistant:
        """A new version of the owner's assistant with ``given`` (metadata merged into its
        metadata, every other field given replacing its own), now the one in use."""
        async with self._db.write() as conn:
            current = await self._own(conn, owner, assistant_id)
            fields = self._checked(
                AssistantFields(
                    graph=given.graph or current.graph,
                    name=given.name or current.name,
                    description=(
                        given.description if given.description is not None else current.description
                    ),
                    config=given.config if given.config is not None else current.config,
                    context=given.context if given.context is not None else current.context,
                    metadata={**current.metadata, **(given.metadata or {})},
                )
            )
            row = await assistants_repo.add_version(conn, owner, current, fields, now=self._clock())
        return from_record(row)

    async def set_latest(self, owner: Principal, assistant_id: str, version: int) -> Assistant:
        async with self._db.write() as conn:
            current = await self._own(conn, owner, assistant_id)
            row = await assistants_repo.set_version(
                conn, owner, current, version, now=self._clock()
            )
        if row is None:
            raise NotFoundError(
                f"Assistant {assistant_id!r} has no version {version}.",
                code="assistant_version_not_found",
                details={"assistant_id": assistant_id, "version": version},
            )
        return from_record(row)

    async def delete(self, owner: Principal, assistant_id: str) -> None:
        async with self._db.write() as conn:
            row = await self._own(conn, owner, assistant_id)
            await assistants_repo.delete_assistant(conn, owner, row.id)

    async def versions(
        self,
        owner: Principal,
        assistant_id: str,
        *,
        metadata: Mapping[str, MetadataValue] | None,
        limit: int,
        offset: int,
    ) -> list[AssistantVersionRecord]:
        """The assistant's versions, newest first (a served graph's: its one version)."""
        served = self._by_id.get(assistant_id)
        if served is not None:
            only = AssistantVersionRecord(
                assistant_id=served.assistant_id,
                version=1,
                graph=served.graph,
                name=served.name,
                description=None,
                config={},
                context={},
                metadata=dict(served.metadata),
                created_at=served.created_at,
            )
            return [only][offset : offset + limit] if matches(served, None, None, metadata) else []
        async with self._db.read() as conn:
            row = await self._own(conn, owner, assistant_id, lock=False)
            return await assistants_repo.assistant_versions_of(
                conn, row.id, metadata=metadata, limit=limit, offset=offset
            )

    async def search(
        self,
        owner: Principal,
        *,
        graph: str | None,
        name: str | None,
        metadata: Mapping[str, MetadataValue] | None,
        limit: int,
        offset: int,
        sort_by: SortKey | None,
        descending: bool,
    ) -> list[Assistant]:
        """The served graphs' assistants and the owner's own that match every filter: the
        served ones first by graph name, then the owner's newest first; or all by ``sort_by``
        (``created_at`` when only the order is given), ties by id."""
        if sort_by is None and descending:
            sort_by = "created_at"
        served = [a for a in self.served() if matches(a, graph, name, metadata)]
        async with self._db.read() as conn:
            own = await assistants_repo.search_assistants(
                conn,
                owner,
                graph=graph,
                name=name,
                metadata=metadata,
                limit=offset + limit,
                order_by=sort_by or "created_at",
                descending=descending or sort_by is None,
            )
        found = served + [from_record(row) for row in own]
        if sort_by is not None:
            key = sort_by
            found.sort(key=lambda a: (sort_value(a, key), a.assistant_id), reverse=descending)
        return found[offset : offset + limit]

    async def count(
        self,
        owner: Principal,
        *,
        graph: str | None,
        name: str | None,
        metadata: Mapping[str, MetadataValue] | None,
    ) -> int:
        served = sum(matches(a, graph, name, metadata) for a in self.served())
        async with self._db.read() as conn:
            own = await assistants_repo.count_assistants(
                conn, owner, graph=graph, name=name, metadata=metadata
            )
        return served + own

    def nodes(self, graph: str) -> frozenset[str]:
        """The names of a served graph's nodes (what a breakpoint may name)."""
        return frozenset(self._compiled(graph).nodes) - {"__start__"}

    def subgraphs(
        self, assistant: Assistant, *, namespace: str | None, recurse: bool
    ) -> dict[str, GraphIO]:
        """The graph's subgraphs by namespace (LangGraph's ``get_subgraphs``), each described
        as a served graph is (its schemas), made once per graph, namespace and depth."""
        key = (assistant.graph, namespace, recurse)
        if key not in self._subgraphs:
            found = self._compiled(assistant.graph).get_subgraphs(
                namespace=namespace, recurse=recurse
            )
            self._subgraphs[key] = {
                name: describe_graph(cast(Pregel[Any, Any, Any, Any], graph))
                for name, graph in found
            }
        return self._subgraphs[key]

    def drawing(self, assistant: Assistant, *, xray: int | bool = False) -> dict[str, Any]:
        """The graph's nodes and edges (LangGraph's ``get_graph(xray=...).to_json()``), made
        once per graph and depth."""
        key = (assistant.graph, xray)
        if key not in self._drawings:
            drawn = as_json(self._compiled(assistant.graph).get_graph(xray=xray).to_json())
            for node in drawn.get("nodes", []):
                data = node.get("data")
                if isinstance(data, dict):
                    data.pop("id", None)  # the Python import path of a node's runnable
            self._drawings[key] = drawn
        return self._drawings[key]

    async def _own(
        self, conn: Any, owner: Principal, assistant_id: str, *, lock: bool = True
    ) -> AssistantRecord:
        """The owner's own assistant (``lock``: for a change in this write transaction)."""
        if assistant_id in self._by_id:
            raise ConflictError(
                "A served graph's own assistant is the server's: create one of your own over "
                "its graph (`assistants.create`) to configure it.",
                code="assistant_read_only",
                details={"assistant_id": assistant_id},
            )
        row = None
        if (uuid := as_uuid(assistant_id)) is not None:
            row = await assistants_repo.get_assistant(conn, owner, uuid, lock=lock)
        if row is None:
            raise NotFoundError.of("assistant", assistant_id)
        return row

    def _checked(self, given: AssistantFields) -> AssistantFields:
        """``given``, its graph served and its ``context`` and ``configurable`` what a run on
        that graph takes (422 ``unknown_graph``, ``invalid_context``, ``invalid_config``)."""
        spec = self._graphs.get(given.graph)
        if spec is None:
            raise InvalidRequestError(
                f"No graph named {given.graph!r}; available: {', '.join(sorted(self._graphs))}.",
                code="unknown_graph",
                details={"graph_id": given.graph},
            )
        unserved = sorted(set(given.config) - {"configurable"})
        if unserved:
            raise InvalidRequestError(
                "Of an assistant's `config` only `configurable` is served.",
                code="unsupported_field",
                details={"fields": [f"config.{key}" for key in unserved]},
            )
        RunOptions.checked(
            spec,
            context=given.context,
            configurable=given.config.get("configurable") or {},
            kept=RunOptions(),
        )
        return given
