"""``consentry bench``: run the load at each concurrency level against each server, side by side,
and report what it cost.

For every level the servers take turns (the baseline first), so the ratio of their CPU per
conversation is measured on the same machine at the same moment: absolute figures drift on a
shared machine, ratios hold.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from backend.bench.load import LoadResult, run_load
from backend.bench.servers import LocalServer, start_baseline, start_consentry

__all__ = ["BenchRow", "Target", "format_table", "run_bench", "run_local_bench"]

WARM_UP_CONVERSATIONS = 10


@dataclass(frozen=True)
class Target:
    """A server under test: started here (``local``, measured from ``/proc``) or remote."""

    name: str
    base_url: str
    local: LocalServer | None = None


@dataclass(frozen=True)
class BenchRow:
    server: str
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
        )
    for level in levels:
        count = max(conversations, level)
        measured = {}
        for target in targets:
            row = await _measure(target, level, count, approve_ratio, progress)
            measured[target.name] = row
            rows.append(row)
        baseline = measured.get("baseline")
        if baseline is not None and baseline.cpu_ms_per_conversation:
            for index, row in enumerate(rows):
                if row.concurrency == level and row.cpu_ms_per_conversation is not None:
                    ratio = row.cpu_ms_per_conversation / baseline.cpu_ms_per_conversation
                    rows[index] = _with_ratio(row, ratio)
    return rows


async def _measure(
    target: Target, level: int, count: int, approve_ratio: float, progress: TextIO | None
) -> BenchRow:
    local = target.local
    cpu_before = local.cpu_seconds() if local else 0.0
    bytes_before = local.database_bytes() if local else 0

    def show(done: int) -> None:
        if progress is not None and (done == count or done % max(1, count // 50) == 0):
            filled = done * 30 // count
            bar = "#" * filled + "." * (30 - filled)
            progress.write(f"\r{target.name:>10} C={level:<5} [{bar}] {done}/{count}")
            progress.flush()

    result = await run_load(
        target.base_url,
        concurrency=level,
        conversations=count,
        approve_ratio=approve_ratio,
        on_progress=show,
    )
    if progress is not None:
        progress.write("\n")
    cpu = (local.cpu_seconds() - cpu_before) if local else None
    stored = (local.database_bytes() - bytes_before) if local else None
    return _row(target.name, result, cpu, local, stored)


def _row(
    name: str,
    result: LoadResult,
    cpu: float | None,
    local: LocalServer | None,
    stored: int | None,
) -> BenchRow:
    count = result.conversations
    return BenchRow(
        server=name,
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


def _with_ratio(row: BenchRow, ratio: float) -> BenchRow:
    return BenchRow(**{**asdict(row), "cpu_vs_baseline": round(ratio, 2)})


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 1)


def format_table(rows: Sequence[BenchRow]) -> str:
    header = (
        "| server | C | conv | errors | conv/s | message p50/p95/p99 ms | decision p50/p95/p99 ms "
        "| CPU ms/conv | × baseline | peak RSS MB | DB bytes/conv |"
    )
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r.server} | {r.concurrency} | {r.conversations} | {r.errors} "
            f"| {r.conversations_per_second} "
            f"| {r.message_p50_ms} / {r.message_p95_ms} / {r.message_p99_ms} "
            f"| {r.decision_p50_ms} / {r.decision_p95_ms} / {r.decision_p99_ms} "
            f"| {_or_dash(r.cpu_ms_per_conversation)} | {_or_dash(r.cpu_vs_baseline)} "
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
    postgres_url: str | None,
    baseline: bool,
    json_out: TextIO | None,
) -> list[BenchRow]:
    """Start the servers here (Consentry on a fresh SQLite file, on ``postgres_url`` too when
    given, and the baseline), run the bench, print the table (and JSON), stop them."""
    workdir = Path(tempfile.mkdtemp(prefix="consentry-bench-"))
    servers: list[LocalServer] = []
    try:
        if baseline:
            servers.append(start_baseline(workdir / "baseline.db"))
        servers.append(start_consentry(f"sqlite:///{workdir / 'consentry.db'}"))
        if postgres_url:
            postgres = start_consentry(postgres_url)
            postgres.name = "consentry-pg"
            servers.append(postgres)
        targets = [Target(s.name, s.base_url, s) for s in servers]
        rows = await run_bench(
            targets, levels=levels, conversations=conversations, approve_ratio=approve_ratio
        )
    finally:
        for server in servers:
            server.stop()
    print(format_table(rows))
    if json_out is not None:
        json.dump([asdict(row) for row in rows], json_out, indent=2)
        json_out.write("\n")
    return rows
