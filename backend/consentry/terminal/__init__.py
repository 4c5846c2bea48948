"""``consentry chat`` and ``consentry approvals``: a terminal client of a running server.

It speaks only the public HTTP API (docs/protocol.md) and parses what it receives with the
published wire models of ``consentry.schemas``; nothing else of the server is imported. Usage and
exit codes: docs/terminal.md.

- ``settings``: where the server is, the API key, the editor, ``NO_COLOR``;
- ``errors``: the one error tree, and the exit code of each error;
- ``sse``: Server-Sent-Events frames from a stream of lines;
- ``api_client``: typed requests and answers;
- ``run_stream``: a run's events to its ``final``, rejoining a cut stream;
- ``render``: colours, diffs, proposals, times and errors as text;
- ``run_view``: how a run's events look as they come;
- ``editor``: ``$EDITOR`` on a temporary file, and whether what was saved is an edit to send;
- ``answers``: what a typed answer to a raw ``interrupt()`` says (JSON or text; yes or no);
- ``consent_prompt``: show a consent and ask for a decision;
- ``chat``: the interactive loop; ``approvals``: the inbox commands;
- ``commands``: the entry points ``consentry.cli`` calls.
"""
