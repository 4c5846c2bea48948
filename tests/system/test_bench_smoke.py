"""``consentry bench`` runs end to end with a handful of conversations (so it cannot rot): it
starts Consentry and the naive baseline, drives both (and a Consentry serving a plain graph's
raw ``interrupt()``, and one driven through the LangGraph SDK's face), and reports every figure,
side by side."""

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
    assert [(row["server"], row["concurrency"]) for row in rows] == [
        ("baseline", 1),
        ("consentry", 1),
        ("consentry-pg", 1),
        ("interrupt", 1),
        ("sdk", 1),
        ("baseline", 3),
        ("consentry", 3),
        ("consentry-pg", 3),
        ("interrupt", 3),
        ("sdk", 3),
    ]
    for row in rows:
        assert (row["conversations"], row["errors"]) == (4, 0), row
        assert row["cpu_ms_per_conversation"] > 0, row
        assert row["peak_rss_mb"] > 0, row
        assert row["database_bytes_per_conversation"] > 0, row
        assert 0 < row["message_p50_ms"] <= row["message_p99_ms"], row
        assert 0 < row["decision_p50_ms"] <= row["decision_p99_ms"], row
        expected_ratio = (
            row["cpu_ms_per_conversation"]
            / rows[0 if row["concurrency"] == 1 else 5]["cpu_ms_per_conversation"]
        )
        assert abs(row["cpu_vs_baseline"] - expected_ratio) < 0.01, row
        chat = rows[1 if row["concurrency"] == 1 else 6]
        if row["server"] == "sdk":  # the SDK face beside /v1/chat on the same conversation
            expected = row["cpu_ms_per_conversation"] / chat["cpu_ms_per_conversation"]
            assert abs(row["cpu_vs_chat"] - expected) < 0.01, row
        else:
            assert row["cpu_vs_chat"] is None, row
    turns = {row["server"]: row for row in results["thread_turns"]}
    assert sorted(turns) == ["baseline", "consentry", "consentry-pg"]  # the tutor's servers
    for row in turns.values():
        assert (row["turns"], row["window"]) == (10, 2), row
        assert min(row["first_latency_ms"], row["last_latency_ms"]) > 0, row
        if row["server"] == "baseline":  # keeps every checkpoint: it grows every turn
            assert min(row["first_bytes_per_turn"], row["last_bytes_per_turn"]) > 0, row
        else:  # keeps the newest only: a turn may reuse what pruning the last one freed
            assert None not in (row["first_bytes_per_turn"], row["last_bytes_per_turn"]), row
    table = result.stdout
    assert table.splitlines()[0].startswith("| server | C | conv | errors |")
    assert table.count("| consentry-pg |") == 3
    assert table.count("| interrupt |") == 2
    assert table.count("| sdk |") == 2
