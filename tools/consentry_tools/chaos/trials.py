"""A chaos run: start the servers once, then trial after trial on the same database.

A trial: each client opens a note of its own; the clients run their conversations at once; at a
seeded random moment a server (on PostgreSQL the replica that holds a run's lease) is struck:
SIGKILLed and restarted (sometimes killed again while it restarts), or (``--freeze-rate``)
SIGSTOPped past its lease and woken, and the clients go on through it (retries, rejoins). Once
every client is done and no thread of the trial has a run left (bounded wait), the trial's
threads are read through the API and in the database, and checked.
The servers keep running into the next trial: one restart per kill is the only start-up cost.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

from sqlalchemy.engine import make_url

from consentry.stored import Database
from consentry_tools.chaos.checkpoints import Positions, open_positions
from consentry_tools.chaos.databases import ChaosDatabase, prepare_database
from consentry_tools.chaos.db_proxy import DatabaseProxy, OutageRecord, start_proxy
from consentry_tools.chaos.faults import FAULTS, NoTargetError, PlantSite
from consentry_tools.chaos.invariants import check_trial
from consentry_tools.chaos.observations import ClientLog
from consentry_tools.chaos.options import ChaosOptions
from consentry_tools.chaos.pg_restarts import PostgresRestarter, RestartRecord
from consentry_tools.chaos.records import leased_pids, running_threads, thread_ids
from consentry_tools.chaos.report import ChaosReport, PlantResult, TrialResult
from consentry_tools.chaos.server_checks import LogCursor
from consentry_tools.chaos.servers import (
    FreezeRecord,
    KillRecord,
    ServerFaults,
    ServerProcess,
    start_servers,
)
from consentry_tools.chaos.snapshot import Snapshot, take_snapshot
from consentry_tools.chaos.sqlite_faults import DISK_FULL, FileRecord, SqliteDisk, strike_file
from consentry_tools.chaos.violations import Violation
from consentry_tools.chaos.workload import Client, ClientPlan, Progress

__all__ = ["run_chaos"]

Strike = KillRecord | FreezeRecord | OutageRecord | FileRecord | RestartRecord

SETTLE_SECONDS = 60.0
"""How long a thread may keep a run after its client is done (plus three leases on PostgreSQL)."""
KILL_WINDOW = 0.9
"""Kills land within this share of a trial's expected events (estimated from earlier trials)."""
TICKS_PER_CONVERSATION = 10


class _Run:
    """The state a run keeps between trials."""

    def __init__(
        self,
        options: ChaosOptions,
        *,
        servers: list[ServerProcess],
        db: Database,
        positions: Positions,
        known: set[str],
        proxy: DatabaseProxy | None,
        disk: SqliteDisk | None,
        restarter: PostgresRestarter | None,
        database_url: str,
    ) -> None:
        self.options = options
        self.servers = servers
        self.db = db
        self.positions = positions
        self.known = known
        """The threads of earlier trials (and of whatever the database held before)."""
        self.proxy = proxy
        """Between the servers and PostgreSQL, when a strike may take the database away."""
        self.disk = disk
        """The tmpfs of the SQLite file, when a strike may fill it up."""
        self.restarter = restarter
        """Of the PostgreSQL cluster, when a strike may restart it."""
        self.database_url = database_url
        self.rng = random.Random(options.seed)
        self.expected_ticks = float(
            options.clients * options.conversations * TICKS_PER_CONVERSATION
        )
        lease = options.lease_seconds if options.database == "postgres" else None
        self.settle_seconds = SETTLE_SECONDS + 3 * (lease or 0.0)
        self.faults = ServerFaults(
            servers,
            rng=self.rng,
            double_kill_rate=options.double_kill_rate,
            leased_pids=lambda: leased_pids(db),
            lease_seconds=lease,
        )

    async def trial(self, number: int) -> tuple[TrialResult, list[ClientLog], Snapshot]:
        started = time.monotonic()
        o = self.options
        progress = Progress()
        plan = ClientPlan(
            trial=number,
            seed=o.seed,
            conversations=o.conversations,
            race_rate=o.race_rate,
            settle_seconds=self.settle_seconds,
            leaves_last_consent=False,
        )
        clients = [
            Client(
                index,
                servers=[s.url for s in self.servers],
                plan=replace(plan, leaves_last_consent=index == o.clients - 1),
                progress=progress,
                rng=random.Random(self.rng.random()),
            )
            for index in range(o.clients)
        ]
        strike: asyncio.Task[Strike] | None = None
        server_log = LogCursor(server.log_path for server in self.servers)
        try:
            await asyncio.gather(*(c.open_note() for c in clients))
            if self.rng.random() < o.kill_rate:
                ticks = self.rng.randint(1, max(1, int(self.expected_ticks * KILL_WINDOW)))
                strike = asyncio.create_task(self._strike(progress, ticks))
            await asyncio.gather(*(c.run() for c in clients))
            self.expected_ticks = 0.7 * self.expected_ticks + 0.3 * progress.ticks
        finally:
            progress.finish()  # a strike not due yet happens now: the server is back either way
            struck = await strike if strike is not None else None
            await asyncio.gather(*(c.aclose() for c in clients))
        logs = [c.log for c in clients]
        await self._settle()
        snapshot = await self.snapshot(logs)
        self.known |= set(snapshot.thread_ids)
        requests = [r for log in logs for r in log.requests]
        server_lines = server_log.new_lines()
        return (
            TrialResult(
                trial=number,
                conversations=sum(log.conversations for log in logs),
                acknowledged_messages=sum(
                    1 for r in requests if r.kind == "message" and r.acknowledged
                ),
                acknowledged_decisions=sum(
                    1 for r in requests if r.kind == "decision" and r.acknowledged
                ),
                retried_requests=sum(1 for r in requests if r.retried),
                replayed_answers=sum(1 for r in requests for a in r.attempts if a.replayed),
                storage_full_answers=sum(
                    1 for r in requests for a in r.attempts if a.code == "storage_full"
                ),
                kill=struck if isinstance(struck, KillRecord) else None,
                freeze=struck if isinstance(struck, FreezeRecord) else None,
                outage=struck if isinstance(struck, OutageRecord) else None,
                file=struck if isinstance(struck, FileRecord) else None,
                restart=struck if isinstance(struck, RestartRecord) else None,
                refused_for_space=sum(1 for line in server_lines if DISK_FULL in line),
                violations=check_trial(number, logs, snapshot, server_log=server_lines),
                seconds=time.monotonic() - started,
            ),
            logs,
            snapshot,
        )

    async def _strike(self, progress: Progress, ticks: int) -> Strike:
        """This trial's strike: a kill, or (by their rates) a freeze, a cut, an outage, a full
        disk, a locked file or a restart of PostgreSQL."""
        o = self.options
        # Drawn only when other strikes are asked for: a seed's kills stay what they were.
        draw = self.rng.random() if sum(o.other_strikes) > 0 else 1.0
        freeze, cut, outage, disk_full, lock, restart = o.other_strikes
        if draw < freeze:
            return await self.faults.freeze_after(progress, ticks)
        draw -= freeze
        if draw < cut + outage and self.proxy is not None:
            away = draw >= cut
            return await self.faults.database_away_after(progress, ticks, self.proxy, outage=away)
        draw -= cut + outage
        if draw < disk_full + lock:
            return await strike_file(
                "disk_full" if draw < disk_full else "lock",
                progress=progress,
                ticks=ticks,
                rng=self.rng,
                disk=self.disk,
                database=Path(self.database_url.removeprefix("sqlite:///")),
            )
        draw -= disk_full + lock
        if draw < restart and self.restarter is not None:
            return await self.restarter.restart_after(progress, ticks, self.rng)
        return await self.faults.kill_after(progress, ticks)

    async def _settle(self) -> None:
        """Until no thread of the trial has a run (bounded; one still running is reported)."""
        deadline = time.monotonic() + self.settle_seconds
        while time.monotonic() < deadline:
            new = sorted(await thread_ids(self.db) - self.known)
            if not await running_threads(self.db, new):
                return
            await asyncio.sleep(0.1)

    async def snapshot(self, logs: Sequence[ClientLog]) -> Snapshot:
        return await take_snapshot(
            db=self.db,
            positions=self.positions,
            server=self.servers[0].url,
            thread_ids=sorted(await thread_ids(self.db) - self.known),
            note_ids=[log.note_id for log in logs],
            keys=[r.key for log in logs for r in log.requests],
        )

    async def plant(
        self, names: Sequence[str], logs: list[ClientLog], snapshot: Snapshot, number: int
    ) -> tuple[list[PlantResult], list[Violation]]:
        """Plant each fault in a thread of the last trial not damaged yet, and check again: a
        fault is caught when its invariant finds something new on that thread."""
        self.known -= set(snapshot.thread_ids)
        before = {v.key() for v in check_trial(number, logs, snapshot)}
        used: Counter[str] = Counter()
        results: list[PlantResult] = []
        latest: list[Violation] = []
        for name in names:
            fault = FAULTS[name]
            site = PlantSite(self.db, snapshot, logs, dict(used))
            try:
                thread_id = await fault.plant(site)
            except NoTargetError as exc:
                results.append(
                    PlantResult(name, fault.invariant, fault.description, None, [], str(exc))
                )
                continue
            used[thread_id] += 1
            snapshot = await self.snapshot(logs)
            latest = check_trial(number, logs, snapshot)
            caught = [
                v
                for v in latest
                if v.invariant == fault.invariant
                and v.thread_id in (thread_id, None)
                and v.key() not in before
            ]
            before |= {v.key() for v in latest}
            results.append(PlantResult(name, fault.invariant, fault.description, thread_id, caught))
        self.known |= set(snapshot.thread_ids)
        return results, latest


async def run_chaos(options: ChaosOptions) -> ChaosReport:
    work = options.work_dir or Path(tempfile.mkdtemp(prefix="consentry-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        disk = None
        if options.disk_full_rate > 0:  # the SQLite file on a tmpfs a strike fills up
            disk = await stack.enter_async_context(SqliteDisk.mounted(work / "disk"))
        database = await prepare_database(options, disk.path if disk is not None else work)
        report = ChaosReport(options, _printable(database.url))
        sys.stderr.write(
            f"consentry chaos: seed {options.seed}, {options.trials} trials on "
            f"{report.database}, server logs in {work}\n"
        )
        started = time.monotonic()
        ended = False
        try:
            await _trials(options, report, database, work=work, disk=disk)
            ended = True
        finally:
            report.seconds = time.monotonic() - started
            if disk is not None and (not ended or _keeps(report)):
                # Its tmpfs is unmounted next: the file is kept as evidence first.
                await asyncio.to_thread(disk.copy_to, work / "database")
                report.database = str(work / "database")
    await _clean_up(report, database, work)
    return report


async def _trials(
    options: ChaosOptions,
    report: ChaosReport,
    database: ChaosDatabase,
    *,
    work: Path,
    disk: SqliteDisk | None,
) -> None:
    """Start the servers (and the proxy), run the trials and plant the faults; stop them."""
    lease = options.lease_seconds if options.database == "postgres" else None
    restarter = None
    if options.restart_rate > 0 and options.postgres_data is not None:
        restarter = PostgresRestarter(options.postgres_data)
        await restarter.check(database.url)
    proxy = await start_proxy(database.url) if options.through_proxy else None
    servers = await start_servers(
        proxy.url_for(database.url) if proxy is not None else database.url,
        count=options.replicas,
        work=work,
        lease_seconds=lease,
    )
    db = Database(database.url, pool_size=2)
    try:
        await db.open()
        async with open_positions(database.url) as positions:
            run = _Run(
                options,
                servers=servers,
                db=db,
                positions=positions,
                known=await thread_ids(db),
                proxy=proxy,
                disk=disk,
                restarter=restarter,
                database_url=database.url,
            )
            logs: list[ClientLog] = []
            snapshot: Snapshot | None = None
            for number in range(1, options.trials + 1):
                result, logs, snapshot = await run.trial(number)
                report.trials.append(result)
                _progress(result, options.trials)
            if options.plant and snapshot is not None:
                report.plants, planted = await run.plant(
                    options.plant, logs, snapshot, options.trials
                )
                known = {v.key() for v in report.violations}
                report.plant_violations = [v for v in planted if v.key() not in known]
    finally:
        await asyncio.gather(*(server.kill() for server in servers))
        if proxy is not None:
            await proxy.aclose()
        await db.close()


def _progress(result: TrialResult, trials: int) -> None:
    kill, freeze = result.kill, result.freeze
    what = "no kill"
    if kill is not None:
        what = (
            f"kill of {kill.server} ({kill.runs_cut} runs cut{', double' if kill.double else ''})"
        )
    elif freeze is not None:
        what = (
            f"freeze of {freeze.server} for {freeze.seconds:.1f} s ({freeze.runs_frozen} runs "
            f"held, {freeze.runs_taken_over} taken over)"
        )
    elif result.file is not None:
        what = {"disk_full": "disk full", "lock": "file locked"}[result.file.kind]
        what += f" for {result.file.seconds:.1f} s"
    elif result.restart is not None:
        what = f"PostgreSQL restarted ({result.restart.seconds:.1f} s)"
    elif result.outage is not None:
        outage = result.outage
        what = f"database connections cut ({outage.connections_cut})" + (
            f", away for {outage.seconds:.1f} s" if outage.seconds else ""
        )
    sys.stderr.write(
        f"trial {result.trial}/{trials}: {result.conversations} conversations, {what}, "
        f"{len(result.violations)} violations, {result.seconds:.1f} s\n"
    )


def _keeps(report: ChaosReport) -> bool:
    return bool(report.violations) or report.options.keep


async def _clean_up(report: ChaosReport, database: ChaosDatabase, work: Path) -> None:
    """Keep the evidence of a run that found something (or when asked); drop the rest."""
    if _keeps(report):
        sys.stderr.write(f"kept: {work} (server logs) and the database {report.database}\n")
        return
    await database.drop()
    if report.options.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)


def _printable(url: str) -> str:
    if url.startswith("sqlite:///"):
        return url
    return make_url(url).render_as_string(hide_password=True)
