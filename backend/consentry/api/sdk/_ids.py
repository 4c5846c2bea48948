"""The ids in the LangGraph SDK's paths. The SDK's API has ``POST /threads/search`` and
``/threads/count`` beside ``GET|PATCH|DELETE /threads/{thread_id}`` (and the same for
assistants): with a plain ``{thread_id}``, ``GET /threads/search`` would be a read of a thread
named "search" and a 405's ``Allow`` would name methods the path does not document. The
``sdk_id`` convertor matches any id but ``search``, ``count`` and ``prune``, so routing says
what the OpenAPI document says (a thread or assistant is never named so: thread ids are UUIDs,
assistant ids graph names or UUIDs, and a graph of that name would still be read at ``GET
/v1/graphs``).
The same for ``POST /runs/crons/search`` and ``/count`` beside ``PATCH|DELETE
/runs/crons/{cron_id}``, and for ``POST /threads/{id}/state/checkpoint`` beside ``GET
/threads/{id}/state/{checkpoint_id}`` (checkpoint ids are UUIDs)."""

from __future__ import annotations

from typing import ClassVar

from starlette.convertors import Convertor, register_url_convertor

__all__ = ["CHECKPOINT_ID", "RUN_ID", "SDK_ID"]

SDK_ID = "sdk_id"
"""``/threads/{thread_id:sdk_id}``: the convertor's name in a path."""
CHECKPOINT_ID = "sdk_checkpoint_id"
"""``/threads/{thread_id}/state/{checkpoint_id:sdk_checkpoint_id}``: any id but ``checkpoint``."""
RUN_ID = "sdk_run_id"
"""``/threads/{thread_id}/runs/{run_id:sdk_run_id}``: any id but ``stream``, ``wait`` and
``crons`` (beside ``POST /threads/{id}/runs/stream``, ``/runs/wait`` and ``/runs/crons``; run ids
are UUIDs)."""


class _SdkId(Convertor[str]):
    regex: ClassVar[str] = "(?!(?:search|count|prune)$)[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


class _RunId(_SdkId):
    regex: ClassVar[str] = "(?!(?:stream|wait|crons)$)[^/]+"


class _CheckpointId(_SdkId):
    regex: ClassVar[str] = "(?!checkpoint$)[^/]+"


register_url_convertor(SDK_ID, _SdkId())
register_url_convertor(RUN_ID, _RunId())
register_url_convertor(CHECKPOINT_ID, _CheckpointId())
