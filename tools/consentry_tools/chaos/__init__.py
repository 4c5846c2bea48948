"""``consentry chaos``: kill and freeze trials against real server processes, and the invariants
that must hold through them (issues 17 and 38; docs/release-checks.md has the long runs).

    consentry chaos --trials 20 --database sqlite
    consentry chaos --trials 300 --database postgres --database-url postgresql://… --replicas 2
    consentry chaos --trials 300 --database postgres --database-url … --freeze-rate 0.5
    consentry chaos --trials 300 --database postgres --database-url … --restart-rate 0.5 \
        --postgres-data /path/to/its/cluster/data
    consentry chaos --trials 100 --database sqlite --disk-full-rate 0.5 --lock-rate 0.5
    consentry chaos --trials 1 --database sqlite --kill-rate 0 --plant all

Each trial runs concurrent clients through message → consent → decision with
``Idempotency-Key``s (``workload``), strikes a server at a seeded random moment (``servers``):
SIGKILLs it, sometimes again while it restarts, freezes it past its lease and wakes it, takes
its database away, restarts PostgreSQL, or fills SQLite's disk or locks its file; lets
the clients finish through retries and rejoins, and checks the invariants (``invariants``)
through the API and in the database. A run prints a table of trials, conversations, kills,
freezes and violations per invariant (``report``) and exits 1 on any violation. ``--plant``
damages the database after the last trial in ways each invariant must catch (``faults``); a
fault it misses makes the run exit 3.

The modules, by concern: ``trials`` (a run, trial after trial), ``workload`` and ``wire`` (the
clients and their HTTP), ``servers`` (the processes, the kills and the freezes), ``db_proxy``
(cuts and outages), ``pg_restarts``, ``sqlite_faults`` (a full disk, a locked file),
``databases`` (where the data goes), ``observations`` (what the clients saw), ``snapshot``,
``records`` and ``checkpoints`` (what the API, the tables and the graph's checkpoints say
afterwards), ``invariants`` with ``consent_checks``, ``request_checks``, ``log_checks``,
``history_checks`` and ``server_checks`` (the checks), ``faults`` with ``plant_site``,
``record_faults`` and ``log_faults`` (the planted faults), ``report`` (the table and the JSON).

This module only registers the command: everything it runs is imported when it runs, so other
commands start as fast as before.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

from consentry_tools.chaos.options import ChaosOptions

__all__ = ["ChaosOptions", "add_chaos_command"]


def add_chaos_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chaos = commands.add_parser(
        "chaos",
        help="kill and freeze trials: servers struck under concurrent consent conversations, "
        "then the invariants",
        description="Kill and freeze trials: concurrent clients, servers SIGKILLed (or frozen "
        "past their lease) at random moments, then every invariant checked through the API and "
        "in the database. Exit 0: no violation; "
        "1: violations; 2: bad options or setup; 3: a planted fault was not caught.",
    )
    chaos.add_argument("--trials", type=int, default=20, help="trials to run (default 20)")
    chaos.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    chaos.add_argument(
        "--database-url",
        help="sqlite: a new file (sqlite:///path; default: in a temporary folder); postgres: "
        "an empty database, or a database of a server where a new one may be created",
    )
    chaos.add_argument("--clients", type=int, default=4, help="concurrent clients per trial")
    chaos.add_argument(
        "--conversations", type=int, default=2, help="conversations per client and trial"
    )
    chaos.add_argument("--seed", type=int, help="the random seed (default: a new one, printed)")
    chaos.add_argument(
        "--replicas", type=int, help="server processes (sqlite: 1; postgres: default 2)"
    )
    chaos.add_argument(
        "--kill-rate",
        type=float,
        default=1.0,
        help="share of trials with a strike (a kill, or a freeze: --freeze-rate)",
    )
    chaos.add_argument(
        "--freeze-rate",
        type=float,
        default=0.0,
        help="share of strikes that freeze a server (SIGSTOP past its lease, then SIGCONT) "
        "instead of killing it",
    )
    chaos.add_argument(
        "--cut-rate",
        type=float,
        default=0.0,
        help="postgres: share of strikes that cut every server's connections to the database "
        "at once (through a proxy the run starts)",
    )
    chaos.add_argument(
        "--outage-rate",
        type=float,
        default=0.0,
        help="postgres: share of strikes that cut them and keep the database away for a while",
    )
    chaos.add_argument(
        "--disk-full-rate",
        type=float,
        default=0.0,
        help="sqlite: share of strikes that fill the disk of the server's file for a while (the "
        "file on a tmpfs the run mounts: root only)",
    )
    chaos.add_argument(
        "--lock-rate",
        type=float,
        default=0.0,
        help="sqlite: share of strikes that hold the file's write lock from another process "
        "for a while",
    )
    chaos.add_argument(
        "--restart-rate",
        type=float,
        default=0.0,
        help="postgres: share of strikes that restart the database server (pg_ctl restart -m "
        "immediate: give --postgres-data, a cluster of the run's own)",
    )
    chaos.add_argument(
        "--postgres-data", help="postgres: the data directory of the cluster, for --restart-rate"
    )
    chaos.add_argument(
        "--double-kill-rate",
        type=float,
        default=0.15,
        help="share of kills followed by another during the restart",
    )
    chaos.add_argument(
        "--race-rate", type=float, default=0.25, help="share of decisions raced by another tab"
    )
    chaos.add_argument(
        "--lease-seconds",
        type=float,
        default=3.0,
        help="CONSENTRY_LEASE_SECONDS of the servers on postgres (default 3)",
    )
    chaos.add_argument(
        "--plant",
        help="after the last trial, plant these faults (comma-separated, or 'all') and check "
        "that each is caught",
    )
    chaos.add_argument("--keep", action="store_true", help="keep the database and server logs")
    chaos.add_argument("--json", help="also write the results as JSON to this file")
    chaos.add_argument(
        "--work-dir", help="for the SQLite file and the server logs (default: a temporary folder)"
    )
    chaos.add_argument("--details", type=int, default=10, help="violations printed in full")
    chaos.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from consentry_tools.chaos.faults import FAULTS
    from consentry_tools.chaos.trials import run_chaos

    plant: tuple[str, ...] = ()
    if args.plant:
        plant = tuple(FAULTS) if args.plant == "all" else tuple(args.plant.split(","))
        unknown = [name for name in plant if name not in FAULTS]
        if unknown:
            print(
                f"consentry chaos: unknown fault(s) {unknown}; one of {list(FAULTS)}",
                file=sys.stderr,
            )
            return 2
    replicas = args.replicas or (2 if args.database == "postgres" else 1)
    refusal = _refusal(args, replicas)
    if refusal is not None:
        print(f"consentry chaos: {refusal}", file=sys.stderr)
        return 2
    options = ChaosOptions(
        database=args.database,
        database_url=args.database_url,
        trials=args.trials,
        seed=args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31),
        clients=args.clients,
        conversations=args.conversations,
        replicas=replicas,
        kill_rate=args.kill_rate,
        freeze_rate=args.freeze_rate,
        cut_rate=args.cut_rate,
        outage_rate=args.outage_rate,
        disk_full_rate=args.disk_full_rate,
        lock_rate=args.lock_rate,
        restart_rate=args.restart_rate,
        postgres_data=Path(args.postgres_data) if args.postgres_data else None,
        double_kill_rate=args.double_kill_rate,
        race_rate=args.race_rate,
        lease_seconds=args.lease_seconds,
        plant=plant,
        keep=args.keep,
        json_path=Path(args.json) if args.json else None,
        work_dir=Path(args.work_dir) if args.work_dir else None,
        details=args.details,
    )
    from consentry_tools.chaos.databases import DatabaseSetupError
    from consentry_tools.chaos.pg_restarts import RestartError
    from consentry_tools.chaos.servers import ServerStartError
    from consentry_tools.chaos.sqlite_faults import SqliteStrikeError

    try:
        report = asyncio.run(run_chaos(options))
    except (DatabaseSetupError, ServerStartError, SqliteStrikeError, RestartError) as exc:
        print(f"consentry chaos: {exc}", file=sys.stderr)
        return 2
    print(report.table())
    if options.json_path is not None:
        options.json_path.write_text(report.as_json())
    return report.exit_code()


def _refusal(args: argparse.Namespace, replicas: int) -> str | None:
    """Why these options cannot make a run, if they cannot."""
    strikes = (
        args.freeze_rate,
        args.cut_rate,
        args.outage_rate,
        args.disk_full_rate,
        args.lock_rate,
        args.restart_rate,
    )
    rates = (args.kill_rate, args.double_kill_rate, args.race_rate, *strikes, sum(strikes))
    sqlite, postgres = args.database == "sqlite", args.database == "postgres"
    refusals = [
        (sqlite and replicas != 1, "SQLite serves one process (--replicas 1)"),
        (
            not all(0.0 <= rate <= 1.0 for rate in rates),
            "every --…-rate is a share between 0 and 1, and the strikes' rates (--freeze-rate, "
            "--cut-rate, --outage-rate, --disk-full-rate, --lock-rate, --restart-rate) share "
            "the strikes (at most 1 together)",
        ),
        (
            sqlite and bool(args.cut_rate or args.outage_rate),
            "--cut-rate and --outage-rate take a PostgreSQL database away (SQLite is a file of "
            "the server's own)",
        ),
        (
            postgres and bool(args.disk_full_rate or args.lock_rate),
            "--disk-full-rate and --lock-rate strike SQLite's file (on PostgreSQL: --cut-rate, "
            "--outage-rate, --restart-rate)",
        ),
        (
            bool(args.restart_rate) and not (postgres and args.postgres_data),
            "--restart-rate restarts a PostgreSQL cluster: give --database postgres and its "
            "--postgres-data directory",
        ),
        (
            bool(args.disk_full_rate and args.database_url),
            "--disk-full-rate puts the file on a tmpfs of the run's own: leave --database-url out",
        ),
        (
            args.trials < 1 or args.clients < 1 or args.conversations < 1,
            "--trials, --clients and --conversations must be ≥ 1",
        ),
    ]
    return next((why for refused, why in refusals if refused), None)
