"""LangGraph's own outputs (``values``, ``updates``, ``tasks``, ``messages``, ``custom``,
``checkpoints``, ``debug`` chunks) as the JSON the LangGraph SDK reads, for a run a listener asked
them of (``RunEventStream.graph_modes``).

Each chunk is serialized once, whatever the number of listeners (and stored, as it is, only for a
run whose stream asked to be resumable: ``RunEventStream.kept_modes``). A run nobody
asked them of pays nothing here: the graph streamer calls :func:`graph_output_json` only for a
mode in its stream's ``graph_modes`` (for a ``/v1`` run, none).

- ``values``: the state, as ``GET /threads/{id}/state`` shows it (messages as their
  ``model_dump()``, ``_graph_state.as_json``). At an interrupt LangGraph adds ``__interrupt__`` to
  the state it streams; it is left out here: the SDK face sends the interrupt in a ``values`` frame
  of its own at the run's end, read from the checkpoint (``useStream`` takes only
  ``__interrupt__`` from a frame that has it, so a state beside it would not be shown).
- ``updates``: ``{node: what it wrote}``; ``__interrupt__`` as ``[{"value", "id"}]`` (the id is
  the approval's); ``__metadata__`` (a cached replay's) left out.
- ``tasks``: as LangGraph gives them (a task's start with its input, its end with its result).
- ``messages``: ``[message chunk, metadata]`` as LangGraph streams them: the metadata is the
  model call's (``langgraph_node``, ``langgraph_step``, ``langgraph_triggers``, ``tags``,
  ``ls_*`` ...), without Consentry's own marks (``consentry_*``) and private keys (``__…``).
- ``custom``: what a graph's ``get_stream_writer()`` wrote.
- ``checkpoints`` (and the ``checkpoint`` entries of ``debug``): the checkpoint as LangGraph
  streams it, its ``config`` and ``parent_config`` cut to ``thread_id``, ``checkpoint_ns`` and
  ``checkpoint_id`` (a run's own configurable objects are not JSON, nor anybody's business).

A subgraph's outputs (asked as ``subgraphs:<mode>``) are the same, with the subgraph's namespace
(``ns``: LangGraph's, ``["plan:<task id>", ...]``).

The JSON is ``{"run_id", "chunk"}`` (and ``ns``; a ``messages`` pair's message ``id``): a join
that reads a thread's log for one run tells its run's outputs from another's as it does for every
event, and a face tells which messages it streamed without reading the chunk.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import to_json

from consentry.runtime.graph_state import as_json, interrupt_as_json

__all__ = ["graph_output_json", "message_metadata", "split_output"]

_INTERRUPT = "__interrupt__"
_METADATA = "__metadata__"
_CONFIG_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")
_OWN_MARKS = ("consentry_",)
_CHUNK = ',"chunk":'


def graph_output_json(
    mode: str,
    chunk: Any,
    *,
    run_id: str,
    namespace: tuple[str, ...] = (),
    message_id: str | None = None,
) -> str | None:
    """The chunk of ``mode`` as JSON (of a subgraph's ``namespace``, when given; ``message_id``:
    the message a ``messages`` chunk is of, beside ``run_id``), or None when it has nothing to
    show (a ``values`` chunk that is only an interrupt, an ``updates`` chunk that is only
    metadata)."""
    if mode == "values":
        shown = _values(chunk)
    elif mode == "updates":
        shown = _updates(chunk)
    elif mode == "messages":
        message, metadata = chunk
        shown = [as_json(message), message_metadata(metadata)]
    elif mode == "checkpoints":
        shown = _checkpoint(chunk)
    elif mode == "debug":
        shown = _debug(chunk)
    else:
        shown = as_json(chunk)
    if shown is None:
        return None
    head: dict[str, Any] = {"run_id": run_id}
    if namespace:
        head["ns"] = list(namespace)
    if message_id is not None:
        head["id"] = message_id
    return to_json({**head, "chunk": shown}).decode()  # the chunk last: ``split_output``


def message_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A model call's metadata as a ``messages`` frame carries it (see above)."""
    shown: dict[str, Any] = as_json(
        {
            key: value
            for key, value in metadata.items()
            if not key.startswith("__") and not key.startswith(_OWN_MARKS)
        }
    )
    return shown


def split_output(data: str) -> tuple[dict[str, Any], str]:
    """A graph output's ``run_id`` (and ``ns``, ``id``), and its chunk's JSON as it is: a face
    sends it without parsing the state and writing it again (the chunk comes last, and the text
    before it, JSON strings, cannot hold ``,"chunk":`` unescaped)."""
    head, _, chunk = data.partition(_CHUNK)
    return json.loads(head + "}"), chunk[:-1]


def _values(chunk: Any) -> Any:
    if not isinstance(chunk, Mapping):
        return {"__root__": as_json(chunk)}  # a graph whose output is one channel
    state = {key: value for key, value in chunk.items() if key != _INTERRUPT}
    if not state and _INTERRUPT in chunk:
        return None
    return as_json(state)


def _updates(chunk: Mapping[str, Any]) -> dict[str, Any] | None:
    shown: dict[str, Any] = {}
    for node, update in chunk.items():
        if node == _INTERRUPT:
            shown[node] = [interrupt_as_json(interrupt) for interrupt in update]
        elif node != _METADATA:
            shown[node] = as_json(update)
    return shown or None


def _checkpoint(chunk: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = as_json(
        {key: value for key, value in chunk.items() if not key.endswith("config")}
    )
    shown["config"] = _config(chunk.get("config"))
    shown["parent_config"] = _config(chunk.get("parent_config"))
    return shown


def _config(config: Any) -> dict[str, Any] | None:
    if not isinstance(config, Mapping):
        return None
    configurable = config.get("configurable") or {}
    return {"configurable": {key: configurable[key] for key in _CONFIG_KEYS if key in configurable}}


def _debug(chunk: Mapping[str, Any]) -> Any:
    if chunk.get("type") == "checkpoint":
        return {
            **as_json({k: v for k, v in chunk.items() if k != "payload"}),
            "payload": _checkpoint(chunk["payload"]),
        }
    return as_json(chunk)
