"""Threads: creating, reading, listing, searching and deleting a caller's threads, their
client's metadata, and the model tokens they used.

A thread's run-related columns (status, active run, lease, seq) belong to ``storage.leases``;
its runs to ``storage.runs``; its stored events to ``storage.events``.

The row and its summary (``_records``: :class:`ThreadRecord`,
:func:`summarize`), the reads (``_reads``: get, list, search, whether an id is taken), the
writes (``_writes``: create, metadata, graph, title, note, delete), a change of its graph
state outside a run and its copy (``_branches``) and the token totals (``_usage``) are private
modules.
"""

from __future__ import annotations

from consentry.storage.metadata_filters import MetadataValue
from consentry.storage.threads._branches import copy_thread, hold_thread
from consentry.storage.threads._reads import (
    ThreadFilter,
    count_threads,
    get_thread,
    get_thread_or_taken,
    list_threads,
    search_threads,
    thread_id_taken,
)
from consentry.storage.threads._records import ThreadRecord, summarize
from consentry.storage.threads._usage import add_tenant_usage, token_usage
from consentry.storage.threads._writes import (
    bind_graph,
    create_thread,
    delete_thread,
    delete_threads_of_assistant,
    insert_thread_unless_taken,
    keep_run_options,
    remember_note,
    set_first_title,
    set_metadata,
    set_note,
)

__all__ = [
    "MetadataValue",
    "ThreadFilter",
    "ThreadRecord",
    "add_tenant_usage",
    "bind_graph",
    "copy_thread",
    "count_threads",
    "create_thread",
    "delete_thread",
    "delete_threads_of_assistant",
    "get_thread",
    "get_thread_or_taken",
    "hold_thread",
    "insert_thread_unless_taken",
    "keep_run_options",
    "list_threads",
    "remember_note",
    "search_threads",
    "set_first_title",
    "set_metadata",
    "set_note",
    "summarize",
    "thread_id_taken",
    "token_usage",
]
