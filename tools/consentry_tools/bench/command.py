"""``consentry bench``: its options. This module only registers the command; what it runs
(``run``) is imported when it runs.

A development tool: it comes with ``consentry-tools`` (``tools/``, installed by ``make test``),
which registers it with the ``consentry`` command through the ``consentry.commands`` entry
points.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

__all__ = ["add_bench_command"]


def add_bench_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure a server under concurrent consent conversations",
        description="Start Consentry and a naive FastAPI + LangGraph baseline on this machine, "
        "run the same consent conversations on the same graph against each, side by side, and "
        "print what each cost (docs/performance.md). Every ratio is to the baseline on the same "
        "database: SQLite with SQLite, PostgreSQL with PostgreSQL.",
    )
    bench.add_argument(
        "--graph",
        choices=["tutor", "consent_flow", "memory_flow"],
        default="tutor",
        help="the graph of every conversation, the same on every server: tutor (the default; "
        "with the offline model), consent_flow (five nodes, no model: analyze, draft, "
        "consent, apply or cancel; consentry_graphs.examples.consent_flow), which measures the "
        "serving stack alone, or memory_flow (consent_flow with a Store search and a Store put "
        "a conversation; consentry_graphs.examples.memory_flow), which adds the Store's calls",
    )
    bench.add_argument("--concurrency", default="1,10,100", help="levels, e.g. 1,10,100,1000")
    bench.add_argument(
        "--conversations", type=int, default=100, help="per level (at least the level)"
    )
    bench.add_argument("--approve-ratio", type=float, default=0.3, help="share approved")
    bench.add_argument(
        "--interrupt",
        action="store_true",
        help="also measure the conversation of a plain LangGraph graph whose raw interrupt() "
        "is answered (consentry_graphs.examples.ask_city)",
    )
    bench.add_argument(
        "--sdk",
        action="store_true",
        help="also measure the conversation of --graph through the LangGraph SDK's face "
        "(runs.stream and command.resume), beside /v1/chat's",
    )
    bench.add_argument(
        "--agui",
        action="store_true",
        help="also measure the conversation of --graph through AG-UI's face (POST "
        "/v1/agui/{graph}: the message, then a resume entry), beside /v1/chat's",
    )
    bench.add_argument(
        "--thread-turns",
        type=int,
        default=0,
        help="also run one thread of this many tutor question turns (whatever --graph) and "
        "compare its first and last turns",
    )
    bench.add_argument(
        "--postgres",
        metavar="URL",
        help="also measure Consentry on this empty PostgreSQL database, and the baseline on "
        "PostgreSQL (AsyncPostgresSaver) on a database the bench creates on the same server and "
        "drops after the run (needs the CREATEDB privilege; else see --baseline-postgres)",
    )
    bench.add_argument(
        "--baseline-postgres",
        metavar="URL",
        help="with --postgres: run the PostgreSQL baseline on this empty database instead of "
        "creating one",
    )
    bench.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the naive baselines (SQLite and PostgreSQL)",
    )
    bench.add_argument("--json", help="also write the results as JSON to this file")
    bench.add_argument(
        "--url",
        help="drive this running server instead (no CPU figures; with --graph consent_flow or "
        "memory_flow it must serve consentry_graphs.examples.<graph>:graph_spec as <graph>)",
    )
    bench.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from consentry_tools.bench.run import Target, format_table, run_bench, run_local_bench

    levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    if args.url and args.thread_turns:
        print("--thread-turns needs a local server (no --url)", file=sys.stderr)
        return 2
    if args.baseline_postgres and not args.postgres:
        print("--baseline-postgres goes with --postgres", file=sys.stderr)
        return 2
    if args.url:
        rows = asyncio.run(
            run_bench(
                [Target("server", args.url.rstrip("/"), graph=args.graph)],
                levels=levels,
                conversations=args.conversations,
                approve_ratio=args.approve_ratio,
            )
        )
        print(format_table(rows))
    else:
        with contextlib.ExitStack() as files:
            json_out = files.enter_context(open(args.json, "w")) if args.json else None
            rows = asyncio.run(
                run_local_bench(
                    levels=levels,
                    conversations=args.conversations,
                    approve_ratio=args.approve_ratio,
                    thread_turns=args.thread_turns,
                    postgres_url=args.postgres,
                    baseline=not args.no_baseline,
                    json_out=json_out,
                    interrupt=args.interrupt,
                    sdk=args.sdk,
                    agui=args.agui,
                    graph=args.graph,
                    baseline_postgres_url=args.baseline_postgres,
                )
            )
    errors = sum(row.errors for row in rows)
    if errors:
        for row in rows:
            for error in row.first_errors:
                print(f"{row.server} C={row.concurrency}: {error}", file=sys.stderr)
    return 1 if errors else 0
