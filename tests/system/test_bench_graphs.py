"""``consentry bench --graph consent_flow`` end to end at a tiny scale: Consentry and the naive
baseline run the same five-node consent graph, every conversation checked; with ``--postgres``
the baseline runs on PostgreSQL too, on a database of its own (made beside the given one and
dropped after the run, or the one ``--baseline-postgres`` names), and each Consentry's ratio is to
the baseline on its own database. ``--graph memory_flow`` runs the same way, each server on its
own Store (LangGraph's in the baseline's database)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.postgres import PostgresCluster


def _bench(
    tmp_path: Path, *options: str, graph: str = "consent_flow"
) -> tuple[dict[str, Any], str]:
    """Run ``consentry bench --graph <graph> --concurrency 1 --conversations 3`` with
    ``options``: its JSON results and its table."""
    out = tmp_path / "bench.json"
    command = [sys.executable, "-m", "consentry.cli", "bench", "--graph", graph]
    command += ["--concurrency", "1", "--conversations", "3", "--json", str(out), *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text()), result.stdout


def _servers(results: dict[str, Any]) -> list[tuple[str, str, str, int, int]]:
    return [
        (row["server"], row["database"], row["graph"], row["conversations"], row["errors"])
        for row in results["load"]
    ]


def _ratio(row: dict[str, Any], baseline: dict[str, Any]) -> float:
    return float(row["cpu_ms_per_conversation"] / baseline["cpu_ms_per_conversation"])


def _databases(postgres: PostgresCluster) -> set[str]:
    with psycopg.connect(postgres.admin_url) as conn:
        return {name for (name,) in conn.execute("SELECT datname FROM pg_database").fetchall()}


def test_consent_flow_runs_on_both_servers_on_sqlite(tmp_path: Path) -> None:
    results, table = _bench(tmp_path)

    assert results["graph"] == "consent_flow"
    assert _servers(results) == [
        ("baseline", "sqlite", "consent_flow", 3, 0),
        ("consentry", "sqlite", "consent_flow", 3, 0),
    ]
    baseline, consentry = results["load"]
    assert baseline["cpu_vs_baseline"] == 1.0
    assert abs(consentry["cpu_vs_baseline"] - _ratio(consentry, baseline)) < 0.01
    assert table.splitlines()[2].startswith("| baseline | sqlite | 1 | 3 | 0 |")
    assert table.splitlines()[3].startswith("| consentry | sqlite | 1 | 3 | 0 |")


def test_with_postgres_the_baseline_runs_on_a_database_made_for_the_run(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    before = _databases(postgres)

    results, table = _bench(tmp_path, "--postgres", postgres.new_database())

    assert _servers(results) == [
        ("baseline", "sqlite", "consent_flow", 3, 0),
        ("consentry", "sqlite", "consent_flow", 3, 0),
        ("baseline-pg", "postgres", "consent_flow", 3, 0),
        ("consentry-pg", "postgres", "consent_flow", 3, 0),
    ]
    baseline, consentry, baseline_pg, consentry_pg = results["load"]
    assert abs(consentry["cpu_vs_baseline"] - _ratio(consentry, baseline)) < 0.01
    assert baseline_pg["cpu_vs_baseline"] == 1.0
    assert abs(consentry_pg["cpu_vs_baseline"] - _ratio(consentry_pg, baseline_pg)) < 0.01
    assert baseline_pg["database_bytes_per_conversation"] is not None
    assert "| baseline-pg | postgres | 1 | 3 | 0 |" in table
    assert "| consentry-pg | postgres | 1 | 3 | 0 |" in table
    made = _databases(postgres) - before
    assert [name for name in made if "_baseline_" in name] == []  # dropped after the run


def test_baseline_postgres_names_the_baselines_database_and_keeps_it(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    baseline_database = postgres.new_database()

    results, _ = _bench(
        tmp_path,
        "--postgres",
        postgres.new_database(),
        "--baseline-postgres",
        baseline_database,
    )

    assert [row["server"] for row in results["load"]] == [
        "baseline",
        "consentry",
        "baseline-pg",
        "consentry-pg",
    ]
    with psycopg.connect(baseline_database) as conn:
        row = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
    assert row == (13,)  # 10 warm-up conversations and 3 measured, on LangGraph's own table


def test_memory_flow_runs_on_both_servers_on_both_databases(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    baseline_database, consentry_database = postgres.new_database(), postgres.new_database()

    results, _ = _bench(
        tmp_path,
        "--postgres",
        consentry_database,
        "--baseline-postgres",
        baseline_database,
        graph="memory_flow",
    )

    assert results["graph"] == "memory_flow"
    assert _servers(results) == [
        ("baseline", "sqlite", "memory_flow", 3, 0),
        ("consentry", "sqlite", "memory_flow", 3, 0),
        ("baseline-pg", "postgres", "memory_flow", 3, 0),
        ("consentry-pg", "postgres", "memory_flow", 3, 0),
    ]
    # 13 conversations each, one person's decision: on LangGraph's store, and on Consentry's,
    # with no index (not embedded: what is compared is the Store's calls)
    with psycopg.connect(baseline_database) as conn:
        row = conn.execute("SELECT count(*), min(key) FROM store").fetchone()
    assert row == (1, "Record a message of 9 words")
    with psycopg.connect(consentry_database) as conn:
        rows = conn.execute("SELECT key, vectors::text FROM store_items").fetchall()
    assert rows == [("Record a message of 9 words", "null")]
