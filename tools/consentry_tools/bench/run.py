"""``consentry bench``: run the load at each concurrency level against each server, side by side,
and report what it cost.

For every level the servers take turns (each baseline before its Consentry), so the ratio of their
CPU per conversation is measured on the same machine at the same moment: absolute figures drift
on a shared machine, ratios hold. A row's ratio is to the baseline on the same database: SQLite
with SQLite, PostgreSQL with PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TextIO

import httpx

from consentry_tools.bench.databases import database_beside
from consentry_tools.bench.load import (
    CONSENT_FLOW_GRAPH,
    INTERRUPT_GRAPH,
    MEMORY_FLOW_GRAPH,
    BenchGraph,
    LoadResult,
    Workload,
    ask_in_thread,
    run_load,
)
from consentry_tools.bench.progress import ProgressLine
from consentry_tools.bench.servers import DatabaseKind, LocalServer, start_baseline, start_consentry

__all__ = [
    "BenchRow",
    "Target",
    "ThreadTurnsRow",
    "format_table",
    "format_thread_table",
    "run_bench",
    "run_local_bench",
    "run_thread_turns",
]

WARM_UP_CONVERSATIONS = 10


@dataclass(frozen=True)
class Target:
    """A server under test: started here (``local``, measured from ``/proc``) or remote."""

    name: str
    base_url: str
    local: LocalServer | None = None
    workload: Workload = "chat"
    graph: BenchGraph = "tutor"
    baseline: bool = False
    """The naive server: the other rows on its database are measured against it."""

    @property
    def database(self) -> DatabaseKind | None:
        return self.local.database if self.local else None


@dataclass(frozen=True)
class BenchRow:
    server: str
    database: DatabaseKind | None
    """Where the server kept its state; None for a running server (``--url``)."""
    graph: str
    """The graph of its conversations: ``tutor``, ``consent_flow``, ``memory_flow``, or ``city``
    (``interrupt``)."""
    concurrency: int
    conversations: int
    errors: int
    conversations_per_second: float
    message_p50_ms: float
    message_p95_ms: float
    message_p99_ms: float
    decision_p50_ms: float
    decision_p95_ms: float
    decision_p99_ms: float
    cpu_ms_per_conversation: float | None
    peak_rss_mb: float | None
    database_bytes_per_conversation: float | None
    cpu_vs_baseline: float | None = None
    """CPU per conversation as a multiple of the baseline's on the same database."""
    cpu_vs_chat: float | None = None
    """The SDK face's CPU per conversation as a multiple of ``/v1/chat``'s (``consentry``)."""
    first_errors: tuple[str, ...] = ()


async def run_bench(
    targets: Sequence[Target],
    *,
    levels: Sequence[int],
    conversations: int,
    approve_ratio: float,
    progress: TextIO | None = sys.stderr,
) -> list[BenchRow]:
    rows: list[BenchRow] = []
    for target in targets:
        await run_load(
            target.base_url,
            concurrency=1,
            conversations=WARM_UP_CONVERSATIONS,
            approve_ratio=approve_ratio,
            workload=target.workload,
            graph=target.graph,
        )
    for level in levels:
        count = max(conversations, level)
        level_rows = [
            await _measure(target, level, count, approve_ratio, progress) for target in targets
        ]
        baselines = {
            row.database: row
            for target, row in zip(targets, level_rows, strict=True)
            if target.baseline
        }
        chat = next((row for row in level_rows if row.server == "consentry"), None)
        rows += [_with_ratios(row, baselines.get(row.database), chat) for row in level_rows]
    return rows


async def _measure(
    target: Target, level: int, count: int, approve_ratio: float, progress: TextIO | None
) -> BenchRow:
    local = target.local
    cpu_before = local.cpu_seconds() if local else 0.0
    bytes_before = local.database_bytes() if local else 0

    line = ProgressLine(progress, server=target.name, task=f"C={level}", total=count)
    result = await run_load(
        target.base_url,
        concurrency=level,
        conversations=count,
        approve_ratio=approve_ratio,
        on_progress=line.advance,
        workload=target.workload,
        graph=target.graph,
    )
    line.finish(f"{count} conversations in {result.seconds:.1f} s, {len(result.errors)} errors")
    cpu = (local.cpu_seconds() - cpu_before) if local else None
    stored = (local.database_bytes() - bytes_before) if local else None
    return _row(target, result, cpu, stored)


def _row(target: Target, result: LoadResult, cpu: float | None, stored: int | None) -> BenchRow:
    count = result.conversations
    local = target.local
    return BenchRow(
        server=target.name,
        database=target.database,
        graph="city" if target.workload == "interrupt" else target.graph,
        concurrency=result.concurrency,
        conversations=count,
        errors=len(result.errors),
        conversations_per_second=round(count / result.seconds, 1) if result.seconds else 0.0,
        message_p50_ms=_percentile(result.message_seconds, 0.50),
        message_p95_ms=_percentile(result.message_seconds, 0.95),
        message_p99_ms=_percentile(result.message_seconds, 0.99),
        decision_p50_ms=_percentile(result.decision_seconds, 0.50),
        decision_p95_ms=_percentile(result.decision_seconds, 0.95),
        decision_p99_ms=_percentile(result.decision_seconds, 0.99),
        cpu_ms_per_conversation=round(cpu / count * 1000, 2) if cpu is not None else None,
        peak_rss_mb=round(local.peak_rss_bytes() / 2**20, 1) if local else None,
        database_bytes_per_conversation=round(stored / count) if stored is not None else None,
        first_errors=tuple(result.errors[:3]),
    )


def _with_ratios(row: BenchRow, baseline: BenchRow | None, chat: BenchRow | None) -> BenchRow:
    """``row`` with its CPU per conversation as a multiple of the baseline's at its level, on its
    database (and, for a face, of ``/v1/chat``'s)."""
    row = replace(row, cpu_vs_baseline=_ratio(row, baseline))
    if row.server in ("sdk", "agui"):
        row = replace(row, cpu_vs_chat=_ratio(row, chat))
    return row


def _ratio(row: BenchRow, other: BenchRow | None) -> float | None:
    if other is None or not other.cpu_ms_per_conversation or row.cpu_ms_per_conversation is None:
        return None
    return round(row.cpu_ms_per_conversation / other.cpu_ms_per_conversation, 2)


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 1)


def format_table(rows: Sequence[BenchRow]) -> str:
    header = (
        "| server | db | C | conv | errors | conv/s | message p50/p95/p99 ms "
        "| decision p50/p95/p99 ms | CPU ms/conv | × baseline (same db) | × /v1/chat "
        "| peak RSS MB | DB bytes/conv |"
    )
    lines = [header, "|" + "---|" * 13]
    for r in rows:
        lines.append(
            f"| {r.server} | {r.database or '–'} | {r.concurrency} | {r.conversations} "
            f"| {r.errors} "
            f"| {r.conversations_per_second} "
            f"| {r.message_p50_ms} / {r.message_p95_ms} / {r.message_p99_ms} "
            f"| {r.decision_p50_ms} / {r.decision_p95_ms} / {r.decision_p99_ms} "
            f"| {_or_dash(r.cpu_ms_per_conversation)} | {_or_dash(r.cpu_vs_baseline)} "
            f"| {_or_dash(r.cpu_vs_chat)} "
            f"| {_or_dash(r.peak_rss_mb)} | {_or_dash(r.database_bytes_per_conversation)} |"
        )
    return "\n".join(lines)


def _or_dash(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


async def run_local_bench(
    *,
    levels: Sequence[int],
    conversations: int,
    approve_ratio: float,
    thread_turns: int,
    postgres_url: str | None,
    baseline: bool,
    json_out: TextIO | None,
    interrupt: bool = False,
    sdk: bool = False,
    agui: bool = False,
    graph: BenchGraph = "tutor",
    baseline_postgres_url: str | None = None,
) -> list[BenchRow]:
    """Start the servers here, run the bench on ``graph`` (and the tutor's long thread, with
    ``thread_turns``), stop them, print the tables (and JSON).

    The servers: the baseline and Consentry on fresh SQLite files; with ``postgres_url`` the
    baseline on PostgreSQL (on ``baseline_postgres_url``, else on a database made beside
    ``postgres_url`` and dropped after the run: ``bench.databases``) and Consentry on
    ``postgres_url``; with ``interrupt`` a Consentry serving a raw-``interrupt()`` graph, and with
    ``sdk`` one whose conversations go through the LangGraph SDK's face (``agui``: AG-UI's)."""
    workdir = Path(tempfile.mkdtemp(prefix="consentry-bench-"))
    rows: list[BenchRow] = []
    thread_rows: list[ThreadTurnsRow] = []
    with contextlib.ExitStack() as stack:
        if baseline and postgres_url and baseline_postgres_url is None:
            baseline_postgres_url = stack.enter_context(database_beside(postgres_url))
        servers: list[LocalServer] = []

        @stack.callback
        def stop_servers() -> None:
            for server in servers:
                server.stop()

        graphs = _served(graph)

        def serve(name: str, database_url: str, env: dict[str, str]) -> LocalServer:
            server = start_consentry(database_url, env=env)
            server.name = name
            servers.append(server)
            return server

        # Each baseline runs just before the Consentry on its database (same graph, same load).
        pairs: list[tuple[Path | str | None, str, str]] = [
            (workdir / "baseline.db", "consentry", f"sqlite:///{workdir / 'consentry.db'}")
        ]
        if postgres_url:
            pairs.append((baseline_postgres_url, "consentry-pg", postgres_url))
        targets: list[Target] = []
        for baseline_database, name, database_url in pairs:
            if baseline and baseline_database is not None:
                servers.append(start_baseline(baseline_database))
                targets.append(_target(servers[-1], graph, baseline=True))
            targets.append(_target(serve(name, database_url, graphs), graph))
        if interrupt:
            raw = serve(
                "interrupt",
                f"sqlite:///{workdir / 'interrupt.db'}",
                {"CONSENTRY_GRAPHS": INTERRUPT_GRAPH},
            )
            targets.append(_target(raw, graph, workload="interrupt"))
        faces: tuple[tuple[Workload, bool], ...] = (("sdk", sdk), ("agui", agui))
        for workload in (face for face, asked in faces if asked):
            face = serve(workload, f"sqlite:///{workdir / f'{workload}.db'}", graphs)
            targets.append(_target(face, graph, workload=workload))
        if levels:
            rows = await run_bench(
                targets, levels=levels, conversations=conversations, approve_ratio=approve_ratio
            )
        if thread_turns:  # the tutor's question turns: every server serves the tutor
            chats = [target for target in targets if target.workload == "chat"]
            thread_rows = await run_thread_turns(chats, turns=thread_turns)
    if rows:
        print(format_table(rows))
    if thread_rows:
        print(format_thread_table(thread_rows))
    if json_out is not None:
        results = {
            "graph": graph,
            "load": [asdict(row) for row in rows],
            "thread_turns": [asdict(row) for row in thread_rows],
        }
        json.dump(results, json_out, indent=2)
        json_out.write("\n")
    return rows


def _served(graph: BenchGraph) -> dict[str, str]:
    """The settings of a Consentry serving ``graph`` (none for the tutor, a built-in graph).
    ``memory_flow`` on a Store without an index, as the baseline's: what is compared is the
    Store's calls, not the embedding of its puts (``CONSENTRY_STORE_INDEX_FIELDS``' default)."""
    if graph == "consent_flow":
        return {"CONSENTRY_GRAPHS": CONSENT_FLOW_GRAPH}
    if graph == "memory_flow":
        return {"CONSENTRY_GRAPHS": MEMORY_FLOW_GRAPH, "CONSENTRY_STORE_INDEX_FIELDS": "none"}
    return {}


def _target(
    server: LocalServer, graph: BenchGraph, *, workload: Workload = "chat", baseline: bool = False
) -> Target:
    return Target(server.name, server.base_url, server, workload, graph, baseline)


@dataclass(frozen=True)
class ThreadTurnsRow:
    """A long thread: what its first turns cost beside its last ones."""

    server: str
    database: DatabaseKind | None
    turns: int
    window: int
    first_cpu_ms: float | None
    last_cpu_ms: float | None
    first_latency_ms: float
    last_latency_ms: float
    first_bytes_per_turn: float | None
    last_bytes_per_turn: float | None


async def run_thread_turns(
    targets: Sequence[Target], *, turns: int, progress: TextIO | None = sys.stderr
) -> list[ThreadTurnsRow]:
    """Each server: one thread of ``turns`` question turns, one after another; the first and
    the last ``window`` turns are measured (CPU per turn, latency per turn, database bytes)."""
    window = max(1, min(20, turns // 5))
    rows = []
    for target in targets:
        local = target.local
        cpu: list[float] = []
        latency: list[float] = []
        stored: list[int] = []
        thread_id: str | None = None
        line = ProgressLine(progress, server=target.name, task="thread", total=turns)
        started = time.perf_counter()
        async with httpx.AsyncClient(base_url=target.base_url, timeout=600) as client:
            for turn in range(turns):
                measured = turn < window or turn >= turns - window
                if measured and local is not None:
                    cpu_before, bytes_before = local.cpu_seconds(), local.database_bytes()
                thread_id, seconds = await ask_in_thread(client, thread_id)
                if measured:
                    latency.append(seconds)
                    if local is not None:
                        cpu.append(local.cpu_seconds() - cpu_before)
                        stored.append(local.database_bytes() - bytes_before)
                line.advance(turn + 1)
        line.finish(f"{turns} turns in {time.perf_counter() - started:.1f} s")
        rows.append(
            ThreadTurnsRow(
                server=target.name,
                database=target.database,
                turns=turns,
                window=window,
                first_cpu_ms=_mean_ms(cpu[:window]) if cpu else None,
                last_cpu_ms=_mean_ms(cpu[-window:]) if cpu else None,
                first_latency_ms=_mean_ms(latency[:window]),
                last_latency_ms=_mean_ms(latency[-window:]),
                first_bytes_per_turn=_mean(stored[:window]) if stored else None,
                last_bytes_per_turn=_mean(stored[-window:]) if stored else None,
            )
        )
    return rows


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 1)


def _mean_ms(values: Sequence[float]) -> float:
    return round(sum(values) / len(values) * 1000, 2)


def format_thread_table(rows: Sequence[ThreadTurnsRow]) -> str:
    lines = [
        "| server | db | turns | CPU ms/turn first → last | latency ms first → last "
        "| DB bytes/turn first → last |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.server} | {r.database or '–'} | {r.turns} "
            f"| {_or_dash(r.first_cpu_ms)} → {_or_dash(r.last_cpu_ms)} "
            f"| {r.first_latency_ms} → {r.last_latency_ms} "
            f"| {_or_dash(r.first_bytes_per_turn)} → {_or_dash(r.last_bytes_per_turn)} |"
        )
    return "\n".join(lines)
