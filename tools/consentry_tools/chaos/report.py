"""What a chaos run found, as a table for people and as JSON for tests and dashboards."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from consentry_tools.chaos.db_proxy import OutageRecord
from consentry_tools.chaos.options import ChaosOptions
from consentry_tools.chaos.pg_restarts import RestartRecord
from consentry_tools.chaos.servers import FreezeRecord, KillRecord
from consentry_tools.chaos.sqlite_faults import FileRecord
from consentry_tools.chaos.violations import INVARIANTS, InvariantName, Violation

__all__ = ["ChaosReport", "PlantResult", "TrialResult"]


@dataclass(frozen=True)
class TrialResult:
    trial: int
    conversations: int
    acknowledged_messages: int
    acknowledged_decisions: int
    retried_requests: int
    replayed_answers: int
    storage_full_answers: int
    """Attempts answered 507 ``storage_full`` (the database's disk full)."""
    refused_for_space: int
    """Lines of the servers' logs saying a request or a run met the full disk."""
    kill: KillRecord | None
    freeze: FreezeRecord | None
    outage: OutageRecord | None
    file: FileRecord | None
    """SQLite's disk full, or its file locked."""
    restart: RestartRecord | None
    """PostgreSQL restarted."""
    violations: list[Violation]
    seconds: float


@dataclass(frozen=True)
class PlantResult:
    fault: str
    invariant: InvariantName
    description: str
    thread_id: str | None
    caught: list[Violation]
    """The new violations of the targeted invariant the fault caused."""
    error: str | None = None
    """Why the fault could not be planted."""


@dataclass
class ChaosReport:
    options: ChaosOptions
    database: str
    """Where the run's data is (the URL without its password)."""
    trials: list[TrialResult] = field(default_factory=list)
    plants: list[PlantResult] = field(default_factory=list)
    plant_violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def violations(self) -> list[Violation]:
        return [v for t in self.trials for v in t.violations] + self.plant_violations

    @property
    def missed_plants(self) -> list[PlantResult]:
        return [p for p in self.plants if not p.caught]

    def exit_code(self) -> int:
        """0: nothing violated; 1: violations; 3: a planted fault was not caught."""
        if self.missed_plants:
            return 3
        return 1 if self.violations else 0

    def counts(self) -> dict[str, int]:
        kills = [t.kill for t in self.trials if t.kill is not None]
        freezes = [t.freeze for t in self.trials if t.freeze is not None]
        outages = [t.outage for t in self.trials if t.outage is not None]
        files = [t.file for t in self.trials if t.file is not None]
        restarts = [t.restart for t in self.trials if t.restart is not None]
        return {
            "trials": len(self.trials),
            "conversations": sum(t.conversations for t in self.trials),
            "acknowledged_messages": sum(t.acknowledged_messages for t in self.trials),
            "acknowledged_decisions": sum(t.acknowledged_decisions for t in self.trials),
            "retried_requests": sum(t.retried_requests for t in self.trials),
            "replayed_answers": sum(t.replayed_answers for t in self.trials),
            "kills": len(kills),
            "kills_with_runs_active": sum(1 for k in kills if k.runs_cut),
            "runs_cut": sum(k.runs_cut for k in kills),
            "kills_with_requests_open": sum(1 for k in kills if k.open_requests),
            "double_kills": sum(1 for k in kills if k.double),
            "freezes": len(freezes),
            "runs_frozen": sum(f.runs_frozen for f in freezes),
            "runs_taken_over_while_frozen": sum(f.runs_taken_over for f in freezes),
            "database_cuts": sum(1 for d in outages if not d.seconds),
            "database_outages": sum(1 for d in outages if d.seconds),
            "connections_cut": sum(d.connections_cut for d in outages),
            "outages_with_requests_open": sum(1 for d in outages if d.open_requests),
            "disk_fulls": sum(1 for f in files if f.kind == "disk_full"),
            "file_locks": sum(1 for f in files if f.kind == "lock"),
            "file_strikes_with_requests_open": sum(1 for f in files if f.open_requests),
            "storage_full_answers": sum(t.storage_full_answers for t in self.trials),
            "refused_for_space": sum(t.refused_for_space for t in self.trials),
            "database_restarts": len(restarts),
            "restarts_with_requests_open": sum(1 for r in restarts if r.open_requests),
        }

    def per_invariant(self) -> dict[InvariantName, int]:
        found = Counter(v.invariant for v in self.violations)
        return {name: found[name] for name in INVARIANTS}

    def table(self) -> str:
        o, c = self.options, self.counts()
        servers = f"{o.replicas} replica{'s' if o.replicas > 1 else ''}"
        lines = [
            f"consentry chaos: {o.database} ({self.database}), {servers}, {o.clients} clients × "
            f"{o.conversations} conversations per trial, seed {o.seed}, {self.seconds:.0f} s",
            "",
            f"{'trials':<28}{c['trials']:>8}",
            f"{'conversations':<28}{c['conversations']:>8}",
            f"{'acknowledged messages':<28}{c['acknowledged_messages']:>8}",
            f"{'acknowledged decisions':<28}{c['acknowledged_decisions']:>8}",
            f"{'retried requests':<28}{c['retried_requests']:>8}   "
            f"({c['replayed_answers']} answer(s) replayed)",
            f"{'kills (SIGKILL)':<28}{c['kills']:>8}   ({c['kills_with_runs_active']} with runs "
            f"active: {c['runs_cut']} runs cut; {c['kills_with_requests_open']} with requests "
            f"open; {c['double_kills']} double kills)",
            f"{'freezes (SIGSTOP)':<28}{c['freezes']:>8}   ({c['runs_frozen']} runs held, "
            f"{c['runs_taken_over_while_frozen']} taken over while frozen)",
            f"{'database cuts / outages':<28}{c['database_cuts']:>4} /{c['database_outages']:>2}   "
            f"({c['connections_cut']} connections cut; {c['outages_with_requests_open']} with "
            "requests open)",
            f"{'disk full / file locked':<28}{c['disk_fulls']:>4} /{c['file_locks']:>2}   "
            f"({c['file_strikes_with_requests_open']} with requests open; "
            f"{c['storage_full_answers']} answers 507 storage_full; "
            f"{c['refused_for_space']} writes refused in the logs)",
            f"{'PostgreSQL restarts':<28}{c['database_restarts']:>8}   "
            f"({c['restarts_with_requests_open']} with requests open)",
            "",
            f"{'invariant':<36}{'violations':>10}   threads",
        ]
        threads: dict[InvariantName, set[str | None]] = {name: set() for name in INVARIANTS}
        for violation in self.violations:
            threads[violation.invariant].add(violation.thread_id)
        for name, count in self.per_invariant().items():
            mark = "" if count == 0 else "   ✗"
            lines.append(f"{INVARIANTS[name]:<36}{count:>10}   {len(threads[name]):>7}{mark}")
        lines.append(f"{'total':<36}{len(self.violations):>10}")
        if self.plants:
            lines += ["", "planted faults:"]
            for plant in self.plants:
                where = f"thread {plant.thread_id}" if plant.thread_id else "-"
                verdict = (
                    f"caught by '{INVARIANTS[plant.invariant]}'"
                    if plant.caught
                    else f"NOT CAUGHT by '{INVARIANTS[plant.invariant]}'"
                )
                reason = f" ({plant.error})" if plant.error else ""
                lines.append(f"  {plant.fault:<28} {verdict}, {where}{reason}")
        if self.violations:
            shown = self.violations[: o.details]
            lines += ["", f"first {len(shown)} of {len(self.violations)} violations:"]
            for v in shown:
                where = f"thread {v.thread_id}" if v.thread_id else "no thread"
                lines.append(f"  trial {v.trial} · {INVARIANTS[v.invariant]} · {where}:")
                lines.append(f"      {v.detail}")
        return "\n".join(lines)

    def as_json(self) -> str:
        document: dict[str, Any] = {
            "options": {
                k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.options).items()
            },
            "database": self.database,
            "seconds": round(self.seconds, 1),
            **self.counts(),
            "violations": self.per_invariant(),
            "exit_code": self.exit_code(),
            "examples": [asdict(v) for v in self.violations[:200]],
            "plants": [
                {
                    "fault": p.fault,
                    "invariant": p.invariant,
                    "thread_id": p.thread_id,
                    "caught": [asdict(v) for v in p.caught],
                    "error": p.error,
                }
                for p in self.plants
            ],
            "kills_detail": [
                {"trial": t.trial, **asdict(t.kill)} for t in self.trials if t.kill is not None
            ],
            "outages_detail": [
                {"trial": t.trial, **asdict(t.outage)} for t in self.trials if t.outage is not None
            ],
            "restarts_detail": [
                {"trial": t.trial, **asdict(t.restart)}
                for t in self.trials
                if t.restart is not None
            ],
            "files_detail": [
                {"trial": t.trial, **asdict(t.file)} for t in self.trials if t.file is not None
            ],
            "freezes_detail": [
                {"trial": t.trial, **asdict(t.freeze)} for t in self.trials if t.freeze is not None
            ],
        }
        return json.dumps(document, indent=2)
