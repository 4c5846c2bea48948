"""consentry: serve the API, talk to a running server, or print the protocol's JSON Schema.

consentry serve [--host H] [--port P] [--role all|api|worker] [--config langgraph.json]
                                          start the server (defaults from settings), with the
                                          graphs of a LangGraph project (docs/graphs.md)
consentry chat [--url URL] [--api-key KEY] [--thread ID] [--note ID] [--project ID] [--graph G]
               [--color auto|always|never]
                                          chat with a running server, decide its consents
                                          (docs/terminal.md)
consentry notes [NOTE_ID] [--project ID] [--url URL] [--api-key KEY] [--color …]
                                          projects and notes, or a note and its conversations
consentry approvals list [--status S] | show ID | approve ID [--comment C] | reject ID [--comment C]
               | answer ID --value V [--url URL] [--api-key KEY] [--color auto|always|never]
                                          the approvals inbox of a running server
consentry schema                          print docs/protocol.schema.json to stdout
consentry db upgrade                      apply database migrations and exit
consentry bench [--graph tutor|consent_flow] [--concurrency 1,10,100] [--conversations N]
                [--postgres URL [--baseline-postgres URL]] [--url URL] …
                                          measure a server beside a naive baseline, on the
                                          same graph and database (docs/performance.md)
consentry chaos [--trials N] [--database sqlite|postgres] [--database-url URL] [--plant F] …
                                          kill trials and their invariants (docs/release-checks.md)

The help that argparse prints is plain text: DESCRIPTION and EPILOG below, never this docstring.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys

__all__ = ["main"]

DESCRIPTION = (
    "Consentry: serve the API and the web app, talk to a running server from the terminal "
    "(chat, notes, approvals), or print the protocol's JSON Schema."
)
EPILOG = (
    "consentry COMMAND --help shows the options of a command. The terminal client is described "
    "in docs/terminal.md, the server's settings in README.md."
)


STOPPED = "stopped"
"""What ``consentry serve`` says as it ends after Ctrl-C or SIGTERM: a line of its log (text or
JSON, like the rest), or ``consentry: stopped`` on stderr if it had no log yet."""


def _serve(args: argparse.Namespace) -> int:
    # SIGTERM as SIGINT: uvicorn stops gracefully on either, then raises the signal again for its
    # caller once it has restored this handler; before uvicorn listens (imports, checks), either
    # stops start-up where it is. The stop the person asked for is not an error: one line, exit
    # code 0, no traceback (and make, the parent of `make run`, prints nothing either).
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        from consentry.serve import serve_command

        result = serve_command(
            host=args.host,
            port=args.port,
            role=args.role,
            log_level=args.log_level,
            config=args.config,
        )
    except KeyboardInterrupt:
        if logging.getLogger().handlers:  # the server's log is configured
            logging.getLogger("consentry").info(STOPPED)
        else:
            print(f"consentry: {STOPPED}", file=sys.stderr, flush=True)
        result = 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    if result == 0:
        # The process ends next, and the interpreter's last garbage collection would walk every
        # object the imports made (seconds with LangChain's, while a restart waits for the SQLite
        # file's lock): frozen, they are left to the process's end.
        gc.freeze()
    return result


def _schema(_: argparse.Namespace) -> int:
    from consentry.protocol_schema import protocol_schema_json

    sys.stdout.write(protocol_schema_json())
    return 0


def _db_upgrade(_: argparse.Namespace) -> int:
    from consentry.settings import Settings
    from consentry.storage.database import Database
    from consentry.storage.database_check import DatabaseSettingError, check_database

    settings = Settings()
    try:
        check_database(settings.database_url, sqlite_path=settings.sqlite_path)
    except DatabaseSettingError as exc:
        print(f"consentry: {exc}", file=sys.stderr)
        return 2

    async def upgrade() -> None:
        db = Database(settings.database_url)
        try:
            await db.open()
            await db.migrate()
        finally:
            await db.close()

    asyncio.run(upgrade())
    print("database is up to date")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from consentry.bench.run import Target, format_table, run_bench, run_local_bench

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


def _chat(args: argparse.Namespace) -> int:
    from consentry.terminal.commands import chat_command

    return chat_command(
        url=args.url,
        api_key=args.api_key,
        color=args.color,
        thread_id=args.thread,
        note_id=args.note,
        project_id=args.project,
        graph=args.graph,
    )


def _notes(args: argparse.Namespace) -> int:
    from consentry.terminal.commands import notes_command

    return notes_command(
        url=args.url,
        api_key=args.api_key,
        color=args.color,
        note_id=args.note_id,
        project_id=args.project,
    )


def _approvals(args: argparse.Namespace) -> int:
    from consentry.terminal.commands import approvals_command

    return approvals_command(
        args.action,
        url=args.url,
        api_key=args.api_key,
        color=args.color,
        approval_id=getattr(args, "approval_id", None),
        status=getattr(args, "status", None),
        comment=getattr(args, "comment", None),
        value=getattr(args, "value", None),
    )


def _add_client_options(parser: argparse.ArgumentParser) -> None:
    """How a client command reaches the server (docs/terminal.md)."""
    parser.add_argument("--url", help="the server (default: CONSENTRY_URL, http://127.0.0.1:8000)")
    parser.add_argument("--api-key", help="sent as a bearer token (default: CONSENTRY_API_KEY)")
    parser.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="auto: only on a terminal and without NO_COLOR (default)",
    )


def _add_client_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = commands.add_parser("chat", help="chat with a running server and decide its consents")
    _add_client_options(chat)
    chat.add_argument("--thread", help="go on with this thread (its id is printed at its start)")
    chat.add_argument("--note", help="the note you are looking at (the tutor edits it)")
    chat.add_argument("--project", help="the project of a new thread")
    chat.add_argument("--graph", help="the graph of a new thread (default: tutor)")
    chat.set_defaults(run=_chat)
    notes = commands.add_parser(
        "notes",
        help="the projects and notes of a running server, or one note and its conversations",
        description="Without NOTE_ID: every project and its notes, with their ids. With NOTE_ID: "
        "the note, and the conversations about it (go on with one: consentry chat --thread ID).",
    )
    notes.add_argument(
        "note_id", nargs="?", metavar="NOTE_ID", help="show this note and its conversations"
    )
    notes.add_argument("--project", help="list only this project's notes")
    _add_client_options(notes)
    notes.set_defaults(run=_notes)
    approvals = commands.add_parser("approvals", help="the approvals inbox of a running server")
    actions = approvals.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list approvals, newest first")
    listing.add_argument(
        "--status",
        choices=["pending", "approved", "edited", "rejected", "answered", "expired", "cancelled"],
    )
    show = actions.add_parser("show", help="one approval, with its proposal as a diff")
    show.add_argument("approval_id")
    for action in ("approve", "reject"):
        decide = actions.add_parser(action, help=f"{action} a pending consent")
        decide.add_argument("approval_id")
        decide.add_argument("--comment", help="recorded with the decision")
    answer = actions.add_parser("answer", help="answer a raw interrupt() with a value")
    answer.add_argument("approval_id")
    answer.add_argument(
        "--value", required=True, help="the answer: JSON, or text when it is not JSON"
    )
    answer.add_argument("--comment", help="recorded with the decision")
    deciders = (actions.choices[a] for a in ("approve", "reject", "answer"))
    for parser in (listing, show, *deciders):
        _add_client_options(parser)
        parser.set_defaults(run=_approvals)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="consentry", description=DESCRIPTION, epilog=EPILOG)
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
    serve.add_argument(
        "--config",
        metavar="LANGGRAPH_JSON",
        help="serve a LangGraph project as it is: the graphs and env of its langgraph.json "
        "(docs/graphs.md)",
    )
    serve.set_defaults(run=_serve)
    commands.add_parser("schema", help="print the protocol JSON Schema").set_defaults(run=_schema)
    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    db_commands.add_parser("upgrade", help="apply migrations").set_defaults(run=_db_upgrade)
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
        choices=["tutor", "consent_flow"],
        default="tutor",
        help="the graph of every conversation, the same on every server: tutor (the default; "
        "with the offline model) or consent_flow (five nodes, no model: analyze, draft, "
        "consent, apply or cancel; consentry_graphs.examples.consent_flow), which measures the "
        "serving stack alone",
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
        help="drive this running server instead (no CPU figures; with --graph consent_flow it "
        "must serve consentry_graphs.examples.consent_flow:graph_spec as consent_flow)",
    )
    bench.set_defaults(run=_bench)
    _add_client_commands(commands)
    from consentry.chaos import add_chaos_command  # registers only; runs import what they need

    add_chaos_command(commands)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
