"""``consentry bench`` runs end to end with a handful of conversations (so it cannot rot): it
starts Consentry and the naive baseline on SQLite and on PostgreSQL, drives them (and a Consentry
serving a plain graph's raw ``interrupt()``, and ones driven through the LangGraph SDK's face and
AG-UI's), and
reports every figure, side by side, each ratio to the baseline on the same database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.postgres import PostgresCluster


def test_the_benchmark_measures_consentry_beside_the_baseline(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "consentry.cli",
            "bench",
            "--concurrency",
            "1,3",
            "--conversations",
            "4",
            "--postgres",
            postgres.new_database(),
            "--thread-turns",
            "10",
            "--interrupt",
            "--sdk",
            "--agui",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    results = json.loads(out.read_text())
    rows = results["load"]
    assert [(row["server"], row["database"], row["concurrency"]) for row in rows] == [
        ("baseline", "sqlite", 1),
        ("consentry", "sqlite", 1),
        ("baseline-pg", "postgres", 1),
        ("consentry-pg", "postgres", 1),
        ("interrupt", "sqlite", 1),
        ("sdk", "sqlite", 1),
        ("agui", "sqlite", 1),
        ("baseline", "sqlite", 3),
        ("consentry", "sqlite", 3),
        ("baseline-pg", "postgres", 3),
        ("consentry-pg", "postgres", 3),
        ("interrupt", "sqlite", 3),
        ("sdk", "sqlite", 3),
        ("agui", "sqlite", 3),
    ]
    for row in rows:
        assert (row["conversations"], row["errors"]) == (4, 0), row
        assert row["cpu_ms_per_conversation"] > 0, row
        assert row["peak_rss_mb"] > 0, row
        assert row["database_bytes_per_conversation"] > 0, row
        assert 0 < row["message_p50_ms"] <= row["message_p99_ms"], row
        assert 0 < row["decision_p50_ms"] <= row["decision_p99_ms"], row
        level = 0 if row["concurrency"] == 1 else 7
        baseline = rows[level + (2 if row["database"] == "postgres" else 0)]
        expected_ratio = row["cpu_ms_per_conversation"] / baseline["cpu_ms_per_conversation"]
        assert abs(row["cpu_vs_baseline"] - expected_ratio) < 0.01, row
        chat = rows[level + 1]
        if row["server"] in ("sdk", "agui"):  # a face beside /v1/chat on the same conversation
            expected = row["cpu_ms_per_conversation"] / chat["cpu_ms_per_conversation"]
            assert abs(row["cpu_vs_chat"] - expected) < 0.01, row
        else:
            assert row["cpu_vs_chat"] is None, row
    turns = {row["server"]: row for row in results["thread_turns"]}
    assert sorted(turns) == ["baseline", "baseline-pg", "consentry", "consentry-pg"]
    for row in turns.values():
        assert (row["turns"], row["window"]) == (10, 2), row
        assert min(row["first_latency_ms"], row["last_latency_ms"]) > 0, row
        if row["server"] == "baseline":  # keeps every checkpoint: it grows every turn
            assert min(row["first_bytes_per_turn"], row["last_bytes_per_turn"]) > 0, row
        else:  # Consentry keeps the newest only: a turn may reuse what pruning the last one
            # freed; PostgreSQL's size grows by whole pages, so a turn may add nothing
            assert None not in (row["first_bytes_per_turn"], row["last_bytes_per_turn"]), row
    table = result.stdout
    assert table.splitlines()[0].startswith("| server | db | C | conv | errors |")
    assert table.count("| consentry-pg | postgres |") == 3
    assert table.count("| baseline-pg | postgres |") == 3
    assert table.count("| interrupt |") == 2
    assert table.count("| sdk |") == 2
    assert table.count("| agui |") == 2
