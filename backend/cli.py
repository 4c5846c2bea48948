"""``consentry``: serve the API, or print the protocol's JSON Schema.

consentry serve [--host H] [--port P] [--role all|api|worker]
                                          start the server (defaults from settings)
consentry schema                          print docs/protocol.schema.json to stdout
consentry db upgrade                      apply database migrations and exit
consentry bench [--concurrency 1,10,100] [--conversations N] [--postgres URL] [--url URL] …
                                          measure a server beside a naive baseline
                                          (docs/performance.md)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from pydantic import ValidationError

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from backend.app import create_app
    from backend.runtime.executor import SHUTDOWN_GRACE_SECONDS
    from backend.settings import Settings
    from backend.storage.process_lock import DatabaseInUseError, serving_lock
    from graphs.registry import GraphLoadError, load_graphs

    given = (("host", args.host), ("port", args.port), ("role", args.role))
    overrides = {k: v for k, v in given if v is not None}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        print(f"consentry: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    try:
        load_graphs(settings.graphs)  # a bad CONSENTRY_GRAPHS entry: one clear line, no server
    except GraphLoadError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return 2
    try:
        with serving_lock(settings.sqlite_path):
            pass  # fail here, with one clear line, rather than in the middle of start-up
    except DatabaseInUseError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS * 2),
    )
    return 0


def _schema(_: argparse.Namespace) -> int:
    from backend.protocol_schema import protocol_schema_json

    sys.stdout.write(protocol_schema_json())
    return 0


def _db_upgrade(_: argparse.Namespace) -> int:
    from backend.settings import Settings
    from backend.storage.database import Database

    async def upgrade() -> None:
        db = Database(Settings().database_url)
        try:
            await db.open()
            await db.migrate()
        finally:
            await db.close()

    asyncio.run(upgrade())
    print("database is up to date")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from backend.bench.run import Target, format_table, run_bench, run_local_bench

    levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    if args.url and args.thread_turns:
        print("--thread-turns needs a local server (no --url)", file=sys.stderr)
        return 2
    if args.url:
        rows = asyncio.run(
            run_bench(
                [Target("server", args.url.rstrip("/"))],
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
                )
            )
    errors = sum(row.errors for row in rows)
    if errors:
        for row in rows:
            for error in row.first_errors:
                print(f"{row.server} C={row.concurrency}: {error}", file=sys.stderr)
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="consentry", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the API server")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument(
        "--role",
        choices=["all", "api", "worker"],
        help="api: serve requests and streams, queue runs; worker: execute runs; all: both "
        "(default; api and worker need PostgreSQL)",
    )
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(run=_serve)
    commands.add_parser("schema", help="print the protocol JSON Schema").set_defaults(run=_schema)
    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    db_commands.add_parser("upgrade", help="apply migrations").set_defaults(run=_db_upgrade)
    bench = commands.add_parser(
        "bench", help="measure a server under concurrent consent conversations"
    )
    bench.add_argument("--concurrency", default="1,10,100", help="levels, e.g. 1,10,100,1000")
    bench.add_argument(
        "--conversations", type=int, default=100, help="per level (at least the level)"
    )
    bench.add_argument("--approve-ratio", type=float, default=0.3, help="share approved")
    bench.add_argument(
        "--thread-turns",
        type=int,
        default=0,
        help="also run one thread of this many turns and compare its first and last turns",
    )
    bench.add_argument("--postgres", help="also measure Consentry on this empty PostgreSQL DB")
    bench.add_argument("--no-baseline", action="store_true", help="skip the naive baseline")
    bench.add_argument("--json", help="also write the results as JSON to this file")
    bench.add_argument("--url", help="drive this running server instead (no CPU figures)")
    bench.set_defaults(run=_bench)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
