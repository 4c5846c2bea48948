"""The LangGraph SDK's ``events`` stream mode: LangChain's ``astream_events`` (v2) events of a
run, as the Agent Server streams them (``on_chain_start``, ``on_chat_model_stream``,
``on_tool_end``, ``on_custom_event`` ...), each recorded as an ``events`` graph output.

The run's graph streams as it always does (``astream`` with the run's modes); the events come from
LangChain's own event handler added to the run's callbacks, the one ``astream_events`` adds
(``langchain_core.tracers.event_stream``, private: a unit test checks it is still there), whose
``_send`` records instead of queueing. Only a run whose request asked for ``events`` before its
graph started has it (it sees every callback of the run: not free).

A node that runs in a worker thread (a sync node calling a model) calls back from that thread:
its events are handed to the run's loop, where the run's events live.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler

from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.runtime.runs.execute._graph_outputs import graph_output_json, message_metadata

__all__ = ["EventRecorder"]


class EventRecorder(_AstreamEventsCallbackHandler):
    """Records a run's ``astream_events`` events (create it on the run's loop)."""

    def __init__(self, events: RunEventStream) -> None:
        super().__init__()
        self._events = events
        self._loop = asyncio.get_running_loop()

    def _send(self, event: Any, event_type: str) -> None:
        # The metadata as a ``messages`` frame's: without Consentry's marks and private keys.
        shown = {**event, "metadata": message_metadata(event.get("metadata") or {})}
        output = graph_output_json("events", shown, run_id=self._events.run_id)
        if output is None:
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:
            self._events.record_graph_output("events", output)
        else:
            self._loop.call_soon_threadsafe(self._events.record_graph_output, "events", output)
