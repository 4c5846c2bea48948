"""``consentry chaos`` (``tools/consentry_tools/chaos``): short kill-trial runs against real server
processes, on SQLite and on two PostgreSQL replicas (killing the one that owns a run), and
freeze trials on two PostgreSQL replicas (the one that owns a run stopped past its lease, then
woken), and database trials (every connection to PostgreSQL cut, or the database away for a
while) hold every invariant; and every fault planted in the database after a trial is caught by
the invariant it targets.

The runs are bounded (twelve trials on SQLite, twelve on PostgreSQL, reusing the running servers
between kills, each about a minute on two cores; six freezes of about six seconds each; eight
database cuts and outages, under a minute); the long runs of a release are in
docs/release-checks.md. Each run is the real command, in a process of its own, with its JSON
report read back.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from consentry_tools.chaos.faults import FAULTS
from consentry_tools.chaos.sqlite_faults import SqliteDisk, SqliteStrikeError
from consentry_tools.chaos.violations import INVARIANTS
from tests.postgres import PostgresCluster, postgres_cluster

RUN_TIMEOUT_SECONDS = 300.0
SQLITE_TRIALS = 12
POSTGRES_TRIALS = 12
FREEZE_TRIALS = 6
OUTAGE_TRIALS = 8
FILE_TRIALS = 8
RESTART_TRIALS = 6
SEED_5 = ("--seed", "5")
SHORT_TRIALS = ("--clients", "4", "--conversations", "1", "--double-kill-rate", "0.5")
"""A trial's cost is mostly its restart (about 2 s): more clients, one conversation each; half
the kills doubled, so that a short run has some (one in a thousand runs of ten has none)."""


@dataclass(frozen=True)
class ChaosRun:
    exit_code: int
    table: str
    """What the command printed: the table, planted faults, the first violations."""
    result: dict[str, Any]
    """Its ``--json`` report."""


def _chaos(work: Path, *args: str) -> ChaosRun:
    report = work / "chaos.json"
    files = ("--work-dir", str(work / "run"), "--json", str(report))
    done = subprocess.run(
        [sys.executable, "-m", "consentry.cli", "chaos", *args, "--details", "40", *files],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )
    assert report.exists(), f"exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return ChaosRun(done.returncode, done.stdout, json.loads(report.read_text()))


def _assert_kills_landed_mid_run(run: ChaosRun, trials: int) -> None:
    result = run.result
    assert result["trials"] == trials
    assert result["kills"] == trials, run.table
    assert result["kills_with_runs_active"] >= trials // 3, run.table
    assert result["runs_cut"] >= trials // 3, run.table
    assert result["acknowledged_decisions"] > 0, run.table


def test_kill_trials_on_sqlite_lose_no_consent_message_or_decision(tmp_path: Path) -> None:
    trials = ["--trials", str(SQLITE_TRIALS), *SHORT_TRIALS, "--seed", "17"]
    run = _chaos(tmp_path, "--database", "sqlite", *trials)

    _assert_kills_landed_mid_run(run, SQLITE_TRIALS)
    assert run.result["double_kills"] >= 1, run.table
    assert run.result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


def test_kill_trials_on_two_postgres_replicas_survive_killing_the_run_owner(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    database = ["--database", "postgres", "--database-url", postgres.new_database()]
    trials = ["--trials", str(POSTGRES_TRIALS), *SHORT_TRIALS, "--seed", "23"]
    run = _chaos(tmp_path, *database, "--replicas", "2", *trials)

    _assert_kills_landed_mid_run(run, POSTGRES_TRIALS)
    assert run.result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


def test_freeze_trials_on_two_postgres_replicas_store_nothing_the_woken_replica_writes(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    """A replica stopped (SIGSTOP) past its lease while it runs a thread, whose run another
    replica takes over, wakes believing it still runs it: every write it then tries is refused
    by the fence, so the thread keeps one history and the clients lose nothing. Seed 5 met the
    checkpoint's refusal read after the ``COMMIT`` (a user's message stored twice, an event sent
    that was never stored) in three of its first four trials."""
    database = ["--database", "postgres", "--database-url", postgres.new_database()]
    trials = ["--trials", str(FREEZE_TRIALS), "--clients", "4", "--conversations", "1"]
    run = _chaos(tmp_path, *database, "--replicas", "2", *trials, "--freeze-rate", "1", *SEED_5)

    result = run.result
    assert result["freezes"] == FREEZE_TRIALS, run.table
    assert result["kills"] == 0, run.table
    assert result["runs_taken_over_while_frozen"] >= FREEZE_TRIALS // 2, run.table
    assert result["acknowledged_decisions"] > 0, run.table
    assert result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


def test_database_cut_and_outage_trials_on_two_postgres_replicas_lose_nothing(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    """Every connection of both replicas to PostgreSQL cut at once (through the run's proxy), or
    cut and refused for up to two and a half leases: requests meanwhile get 503
    ``database_unavailable``, runs in flight stop storing nothing more and are continued from
    their last checkpoint by a takeover once the database is back, and nothing a client was
    told is lost, sent unstored or applied twice. Seed 5 met a run's end sent to its clients
    though neither its end nor its failure could be stored (its seqs then reused by its
    recovery) in its first trial."""
    database = ["--database", "postgres", "--database-url", postgres.new_database()]
    trials = ["--trials", str(OUTAGE_TRIALS), "--clients", "4", "--conversations", "1"]
    strikes = ["--cut-rate", "0.5", "--outage-rate", "0.5"]
    run = _chaos(tmp_path, *database, "--replicas", "2", *trials, *strikes, *SEED_5)

    result = run.result
    assert result["database_cuts"] >= 1, run.table
    assert result["database_outages"] >= 1, run.table
    assert result["database_cuts"] + result["database_outages"] == OUTAGE_TRIALS, run.table
    assert result["outages_with_requests_open"] >= OUTAGE_TRIALS // 3, run.table
    assert result["acknowledged_decisions"] > 0, run.table
    assert result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


def _tmpfs_refused(where: Path) -> str | None:
    """Why this machine will not mount the tmpfs a full-disk run needs, if it will not."""

    async def mount_once() -> None:
        async with SqliteDisk.mounted(where):
            pass

    try:
        asyncio.run(mount_once())
    except SqliteStrikeError as exc:
        return str(exc)
    return None


def test_full_disk_and_locked_file_trials_on_sqlite_lose_nothing(tmp_path: Path) -> None:
    """The SQLite file's disk full for up to two and a half seconds (its tmpfs shrunk to what it
    holds), or its write lock held by another process as long: requests meanwhile get 507
    ``storage_full`` (or wait for the lock), nothing half-written is left, and a run whose end
    could not be stored is closed and continued by the server itself once there is room. Seed 3
    met such runs left running until the next start (three threads stuck, a message lost) in
    its first two trials. Root only (CI runs as root): the run mounts a tmpfs."""
    refused = _tmpfs_refused(tmp_path / "probe")
    if refused is not None:
        pytest.skip(refused)
    trials = ["--trials", str(FILE_TRIALS), "--clients", "4", "--conversations", "1"]
    strikes = ["--disk-full-rate", "0.5", "--lock-rate", "0.5"]
    run = _chaos(tmp_path, "--database", "sqlite", *trials, *strikes, "--seed", "3")

    result = run.result
    assert result["disk_fulls"] >= 1, run.table
    assert result["file_locks"] >= 1, run.table
    assert result["disk_fulls"] + result["file_locks"] == FILE_TRIALS, run.table
    assert result["file_strikes_with_requests_open"] >= FILE_TRIALS // 3, run.table
    assert result["refused_for_space"] >= 1, run.table  # the disk was full for real
    assert result["acknowledged_decisions"] > 0, run.table
    assert result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


@pytest.mark.postgres
def test_restart_trials_of_postgres_under_two_replicas_lose_nothing(tmp_path: Path) -> None:
    """``pg_ctl restart -m immediate`` mid-run, on a cluster of the test's own (every database
    of it goes down) whose commits are synchronous: every connection of both replicas, their
    ``LISTEN`` ones too, dropped at once, new ones refused while it recovers; runs in flight are
    continued from their last committed step, and nothing a client was told is lost."""
    with postgres_cluster(synchronous_commit=True) as cluster:
        database = ["--database", "postgres", "--database-url", cluster.new_database()]
        restarts = ["--restart-rate", "1", "--postgres-data", cluster.data_dir]
        trials = ["--trials", str(RESTART_TRIALS), "--clients", "4", "--conversations", "1"]
        run = _chaos(tmp_path, *database, "--replicas", "2", *restarts, *trials, *SEED_5)

    result = run.result
    assert result["database_restarts"] == RESTART_TRIALS, run.table
    assert result["restarts_with_requests_open"] >= RESTART_TRIALS // 3, run.table
    assert result["acknowledged_decisions"] > 0, run.table
    assert result["violations"] == dict.fromkeys(INVARIANTS, 0), run.table
    assert run.exit_code == 0, run.table


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> ChaosRun:
    """One clean trial without kills, then every fault planted one after the other."""
    return _chaos(
        tmp_path_factory.mktemp("planted"),
        *("--database", "sqlite", "--trials", "1", "--clients", "4", "--kill-rate", "0"),
        *("--seed", "7", "--plant", "all"),
    )


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_planted_fault_is_caught_by_the_invariant_it_targets(
    planted: ChaosRun, fault: str
) -> None:
    target = INVARIANTS[FAULTS[fault].invariant]
    plant = next(p for p in planted.result["plants"] if p["fault"] == fault)

    assert plant["error"] is None, planted.table
    assert plant["caught"], planted.table
    assert all(v["thread_id"] in (plant["thread_id"], None) for v in plant["caught"])
    assert f"{fault:<28} caught by '{target}'" in planted.table
    assert planted.result["violations"][FAULTS[fault].invariant] >= 1
    assert planted.exit_code == 1, planted.table  # violations found, no planted fault missed
