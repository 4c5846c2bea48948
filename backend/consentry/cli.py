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

With the development tools installed (``tools/``, by ``make test``; ``TOOL_COMMANDS``):

consentry bench [--graph tutor|consent_flow|memory_flow] [--concurrency 1,10,100]
                [--conversations N] [--postgres URL [--baseline-postgres URL]] [--url URL] …
                                          measure a server beside a naive baseline, on the
                                          same graph and database (docs/performance.md)
consentry chaos [--trials N] [--database sqlite|postgres] [--database-url URL] [--plant F] …
                                          kill trials and their invariants (docs/release-checks.md)

The help that argparse prints is plain text: DESCRIPTION and EPILOG below, never this docstring.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from functools import partial
from importlib.metadata import entry_points

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
    from consentry.storage.db.database import Database
    from consentry.storage.db.database_check import DatabaseSettingError, check_database

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
        choices=[
            "pending",
            "approved",
            "edited",
            "rejected",
            "answered",
            "expired",
            "cancelled",
            "superseded",
        ],
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


TOOL_COMMANDS = {
    "bench": "measure a server beside a naive baseline (a development tool)",
    "chaos": "kill trials and their invariants (a development tool)",
}
"""The commands of the development tools (``tools/``, the ``consentry-tools`` package, installed
by ``make test``, never by ``make run``). Installed, each registers itself through the
``consentry.commands`` entry points; the product never imports them."""
TOOL_ENTRY_POINTS = "consentry.commands"


def _add_tool_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], argv: list[str]
) -> None:
    """The installed tools' commands; for a tool that is not installed, a command that says how
    to get it. The installed ones are looked up (about 50 ms: every package's entry points are
    read) only for a tool's command or the help, not when ``argv`` runs another command."""
    first = argv[0] if argv else None
    looked_up = first in TOOL_COMMANDS or first is None or first.startswith("-")
    found = entry_points(group=TOOL_ENTRY_POINTS) if looked_up else ()
    installed = {entry.name: entry for entry in found}
    for _, add_command in sorted(installed.items()):
        add_command.load()(commands)  # registers only: a command imports what it runs
    for name, summary in TOOL_COMMANDS.items():
        if name in installed:
            continue
        missing = commands.add_parser(name, help=summary, description=f"{summary}.")
        missing.set_defaults(run=partial(_tool_not_installed, name), takes_any_options=True)


def _tool_not_installed(name: str, _: argparse.Namespace) -> int:
    print(
        f"consentry {name} is a development tool, not part of this installation: in a checkout "
        "of Consentry, `make test` installs it (or `pip install -e tools`)",
        file=sys.stderr,
    )
    return 2


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
    _add_client_commands(commands)
    argv = sys.argv[1:] if argv is None else argv
    _add_tool_commands(commands, argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "takes_any_options", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")  # as parse_args says it
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
