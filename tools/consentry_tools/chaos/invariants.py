"""All the invariants of a settled trial, checked against what its clients saw
(``observations``) and what the API and the database say (``snapshot``).

| invariant | checked by |
|---|---|
| no lost consent | ``consent_checks.check_consents`` |
| no acknowledged message lost | ``request_checks.check_messages`` |
| no decision lost or applied twice | ``consent_checks.check_decisions`` |
| no thread stuck | ``consent_checks.check_stuck`` (and clients whose thread never settled) |
| replay gap- and duplicate-free | ``log_checks.check_replay`` (and refused rejoins) |
| seq contiguous | ``log_checks.check_contiguous`` |
| idempotent retries replayed | ``request_checks.check_idempotency`` |
| event log, runs and audit agree | ``log_checks.check_records`` |
| one history per thread | ``history_checks.check_one_history`` (and the replay's framing) |
| no 500, no unhandled error | ``server_checks.check_server_errors`` (the answers and the logs) |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from consentry_tools.chaos.consent_checks import check_consents, check_decisions, check_stuck
from consentry_tools.chaos.history_checks import check_one_history
from consentry_tools.chaos.log_checks import check_contiguous, check_records, check_replay
from consentry_tools.chaos.observations import ClientLog
from consentry_tools.chaos.request_checks import check_idempotency, check_messages
from consentry_tools.chaos.server_checks import check_server_errors
from consentry_tools.chaos.snapshot import Snapshot
from consentry_tools.chaos.violations import INVARIANTS, Violation

__all__ = ["check_trial"]


def check_trial(
    trial: int,
    clients: Sequence[ClientLog],
    snapshot: Snapshot,
    *,
    server_log: Sequence[str] = (),
) -> list[Violation]:
    """Every violation, in the order of ``INVARIANTS``, each once; ``server_log``: the lines the
    servers logged during the trial."""
    found = [
        *check_consents(snapshot),
        *check_messages(clients, snapshot),
        *check_decisions(clients, snapshot),
        *check_stuck(snapshot),
        *check_replay(clients, snapshot),
        *check_contiguous(snapshot),
        *check_idempotency(clients, snapshot),
        *check_records(snapshot),
        *check_one_history(snapshot),
        *check_server_errors(clients, server_log),
        *(problem for client in clients for problem in client.problems),
    ]
    order = list(INVARIANTS)
    unique = {v.key(): replace(v, trial=trial) for v in found}
    return sorted(unique.values(), key=lambda v: order.index(v.invariant))
