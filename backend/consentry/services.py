"""The long-lived objects of one app: opened by the lifespan, injected into routes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, TTLConfig

from consentry.exit_signals import forwarding_exit_signals
from consentry.observability.metrics import Metrics
from consentry.observability.tracing import Tracing
from consentry.runtime.assistants import Assistants
from consentry.runtime.clock import Clock, MonotonicClock
from consentry.runtime.consents import ApprovalFeed, ApprovalInbox, ExpiryAlarm, ExpirySweeper
from consentry.runtime.crons import Crons
from consentry.runtime.guards import (
    KEY_RETENTION,
    IdempotencyGuard,
    OpenStreams,
    RateLimiter,
    StreamSlots,
    rate_limiter,
)
from consentry.runtime.notes import NotesService, SampleNote, read_sample_notes
from consentry.runtime.readiness import BackgroundTask, Readiness
from consentry.runtime.replicas import EventNotifications
from consentry.runtime.runs import (
    LeftRunCloser,
    RunExecutor,
    RunLimits,
    RunRecords,
    RunRollback,
    RunService,
    RunTakeover,
    RunWorker,
    ThreadReader,
    ThreadWriter,
)
from consentry.runtime.store import ItemStore, ScopedStore, StoreIndex
from consentry.runtime.webhooks import WebhookHosts, WebhookSender
from consentry.settings import Settings
from consentry.storage.checkpoints import open_checkpointer
from consentry.storage.db.database import Database
from consentry.storage.db.process_lock import serving_lock
from consentry_graphs.models import build_chat_model
from consentry_graphs.models.embeddings import build_embeddings
from consentry_graphs.registry import CompiledGraph, GraphSpec, build_graphs, load_graphs

__all__ = ["Services", "open_services"]


@dataclass(frozen=True)
class Services:
    settings: Settings
    db: Database
    graphs: Mapping[str, GraphSpec]
    executor: RunExecutor
    runs: RunService
    threads: ThreadReader
    approvals: ApprovalInbox
    approval_feed: ApprovalFeed
    """Each caller's approvals as they change (``GET /v1/approvals/stream``)."""
    idempotency: IdempotencyGuard
    expiry: ExpirySweeper
    clock: Clock
    notifications: EventNotifications
    open_streams: OpenStreams
    """The event streams being sent, which a shutdown ends at once with a reconnect hint."""
    readiness: Readiness
    metrics: Metrics
    rate_limits: RateLimiter
    """Per-principal token buckets of messages and decisions, in this process."""
    stream_slots: StreamSlots
    """The event streams each principal holds open in this process, capped."""
    sample_notes: tuple[SampleNote, ...]
    """What an owner's default project starts with (``CONSENTRY_SAMPLE_NOTES``)."""
    notes: NotesService
    """Projects, notes, their versions and search (``/v1/projects``, ``/v1/notes``)."""
    thread_writer: ThreadWriter
    """Threads created, updated and deleted outside a run (the LangGraph SDK face)."""
    assistants: Assistants
    """The served graphs as the LangGraph SDK's assistants."""
    run_records: RunRecords
    """A thread's runs as the LangGraph SDK's (``runs.get``, ``runs.list``)."""
    run_rollback: RunRollback
    """What a rolled-back run wrote undone (the LangGraph SDK's ``rollback``)."""
    store: ItemStore
    """The Store: each tenant's items (the ``/store`` routes; the graphs' ``runtime.store``)."""
    crons: Crons
    """Each owner's crons (the ``/runs/crons`` routes); the app's lifespan runs their
    scheduler (``runtime.crons.CronScheduler``) beside the run queue."""
    webhook_hosts: WebhookHosts
    """Where a run's ``webhook`` may point (``CONSENTRY_WEBHOOK_HOSTS``), checked at its start."""
    webhooks: WebhookSender
    """Posts the runs' ends the outbox holds to their webhooks."""


@asynccontextmanager
async def open_services(
    settings: Settings, *, clock: Clock | None = None, tracing: Tracing | None = None
) -> AsyncIterator[Services]:
    """Open the database (migrated), the checkpointer and the compiled graphs, once. ``clock``:
    a :class:`MonotonicClock` started now, unless given."""
    clock = clock or MonotonicClock()
    with serving_lock(settings.sqlite_path):
        async with _open(settings, clock, tracing) as services:
            yield services


def chat_model(settings: Settings) -> BaseChatModel:
    """The one chat model every served graph is built with (``CONSENTRY_LLM_*``)."""
    return build_chat_model(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        model=settings.llm_model,
        timeout_seconds=settings.llm_timeout_seconds,
        retry=settings.llm_retry_policy,
        json_mode=settings.llm_json_mode,
    )


@asynccontextmanager
async def _open(
    settings: Settings, clock: Clock, tracing: Tracing | None
) -> AsyncIterator[Services]:
    graphs: Mapping[str, GraphSpec] = load_graphs(settings.graphs)
    metrics = Metrics()
    db = Database(settings.database_url, pool_size=settings.database_pool_size)
    try:
        await db.open()
        if settings.run_migrations:
            await db.migrate()
        else:
            await db.require_current_schema()
        async with open_checkpointer(db, settings.database_url) as checkpointer:
            model = chat_model(settings)
            # Each graph compiled once, and described (its schemas, the check of an `input`).
            graphs, compiled = build_graphs(graphs, model, checkpointer)
            store = item_store(settings, db, clock)
            compiled = with_store(compiled, ScopedStore(store))
            # Made in the order they depend on each other; nothing is wired afterwards.
            alarm = ExpiryAlarm()  # rung by whoever learns of a deadline; the sweeper waits on it
            executor = RunExecutor(
                db=db,
                graphs=compiled,
                clock=clock,
                consent_ttl_seconds=settings.consent_ttl_seconds,
                interrupt_ttl_seconds=settings.interrupt_ttl_seconds,
                alarm=alarm,
                limits=RunLimits(
                    max_steps=settings.max_steps_per_run,
                    timeout_seconds=settings.run_timeout_seconds,
                    thread_token_budget=settings.thread_token_budget,
                    tenant_token_budget=settings.tenant_token_budget,
                    conversation_window=settings.conversation_window,
                ),
                checkpoint_retention=settings.checkpoint_retention,
                lease_seconds=settings.lease_seconds,
                metrics=metrics,
                tracing=tracing,
            )
            idempotency = IdempotencyGuard(
                db, clock, stale_after=timedelta(seconds=settings.lease_seconds)
            )
            if not db.is_postgres:  # the only process on the file: no key is really in flight
                await idempotency.release_abandoned()
            worker = RunWorker(db=db, executor=executor, graphs=graphs, clock=clock)
            webhook_hosts = WebhookHosts(settings.webhook_hosts)
            webhooks = WebhookSender(
                db=db,
                clock=clock,
                metrics=metrics,
                hosts=webhook_hosts,
                secret=settings.webhook_secret,
                retry_seconds=settings.webhook_retry_seconds,
                timeout_seconds=settings.webhook_timeout_seconds,
                owner=executor.leases.owner,
            )
            # Replicas share the database (PostgreSQL): unless this is an API-only replica, it
            # executes the runs API replicas queue, and takes over the runs of dead replicas.
            works = db.is_postgres and settings.role != "api"
            notifications = EventNotifications(
                settings.database_url if db.is_postgres else None,
                on_consent_requested=alarm.consent_requested,
                on_cancel_requested=executor.cancel_run,
                on_run_queued=worker.run_queued if works else None,
                on_webhook_queued=webhooks.wake,
            )
            if not db.is_postgres:  # one process: what it notifies at commit, it tells itself
                db.listen_locally(notifications.deliver)
            await notifications.start()
            sample_notes = (
                await asyncio.to_thread(read_sample_notes) if settings.sample_notes else ()
            )
            runs = RunService(
                db=db,
                executor=executor,
                graphs=dict(graphs),
                clock=clock,
                metrics=metrics,
                alarm=alarm,
                notifications=notifications,
                max_message_chars=settings.max_message_chars,
                queue_for_workers=settings.role == "api",
                max_active_runs_per_tenant=settings.max_active_runs_per_tenant,
                sample_notes=sample_notes,
            )
            # On SQLite this process is the only one on the file (serving_lock): every run left
            # open is dead, whatever its lease says. On PostgreSQL only expired leases are.
            await runs.take_over_dead_runs(lease_expired_by=clock() if db.is_postgres else None)
            expiry = ExpirySweeper(
                db=db,
                runs=runs,
                alarm=alarm,
                clock=clock,
                key_retention=KEY_RETENTION,
                event_retention=timedelta(hours=settings.event_retention_hours),
                kept_output_retention=timedelta(seconds=settings.resumable_stream_seconds),
                graphs=executor.graph_names,
            )
            expiry.start()
            takeover = RunTakeover(
                db=db,
                runs=runs,
                clock=clock,
                lease_seconds=settings.lease_seconds,
            )
            if works:
                worker.start()
                takeover.start()
            # SQLite: the runs whose end this process could not store, closed once it can (on
            # PostgreSQL their lease expires, and the takeover closes them).
            closer = None if db.is_postgres else LeftRunCloser(left=executor.left_open, runs=runs)
            if closer is not None:
                closer.start()
            # Every process sends what is due, whatever its role: one replica per attempt.
            webhooks.start()
            background: dict[str, BackgroundTask] = {
                "expiry_sweeper": expiry,
                "webhook_sender": webhooks,
            }
            if notifications.enabled:
                background["notifications"] = notifications
            if works:
                background |= {"run_worker": worker, "run_takeover": takeover}
            if closer is not None:
                background["left_run_closer"] = closer
            readiness = Readiness(db, background=background)
            open_streams = OpenStreams()
            metrics.watch(
                open_streams=lambda: len(open_streams), active_runs=lambda: executor.running
            )
            begin_shutdown = _shutdown_steps(executor, open_streams, readiness)
            threads = ThreadReader(db=db, executor=executor, clock=clock)
            try:
                with forwarding_exit_signals(begin_shutdown):
                    yield Services(
                        settings=settings,
                        db=db,
                        graphs=graphs,
                        executor=executor,
                        runs=runs,
                        threads=threads,
                        approvals=ApprovalInbox(db=db),
                        approval_feed=ApprovalFeed(db=db, notifications=notifications, clock=clock),
                        idempotency=idempotency,
                        expiry=expiry,
                        clock=clock,
                        notifications=notifications,
                        open_streams=open_streams,
                        readiness=readiness,
                        metrics=metrics,
                        rate_limits=rate_limiter(settings, clock),
                        stream_slots=StreamSlots(settings.max_streams_per_principal),
                        sample_notes=sample_notes,
                        notes=NotesService(db=db, clock=clock, sample_notes=sample_notes),
                        thread_writer=ThreadWriter(
                            db=db,
                            graphs=graphs,
                            checkpointer=checkpointer,
                            compiled=executor.graph,
                            reader=threads,
                            clock=clock,
                            sample_notes=sample_notes,
                        ),
                        assistants=Assistants(
                            graphs=graphs,
                            compiled=executor.graph,
                            created_at=clock(),
                            db=db,
                            clock=clock,
                        ),
                        run_records=RunRecords(db=db, clock=clock),
                        run_rollback=RunRollback(db=db, runs=runs, clock=clock),
                        store=store,
                        crons=Crons(db=db, clock=clock),
                        webhook_hosts=webhook_hosts,
                        webhooks=webhooks,
                    )
            finally:
                await webhooks.stop()
                await worker.stop()
                await takeover.stop()
                if closer is not None:
                    await closer.stop()
                await notifications.stop()
                await expiry.stop()
                await executor.shutdown()
    finally:
        await db.close()


def item_store(settings: Settings, db: Database, clock: Clock) -> ItemStore:
    """The Store, its semantic search on the configured fields (``CONSENTRY_STORE_INDEX_FIELDS``)
    with the model server's ``CONSENTRY_EMBEDDINGS_MODEL`` when one is named (so that a server
    configured for chat alone never fails a put), else the offline embedding."""
    index = None
    if settings.store_index_fields:
        embeddings = build_embeddings(
            base_url=settings.llm_base_url if settings.embeddings_model else None,
            api_key=settings.llm_api_key if settings.embeddings_model else None,
            model=settings.embeddings_model or "",
            timeout_seconds=settings.llm_timeout_seconds,
        )
        index = StoreIndex(embeddings=embeddings, fields=tuple(settings.store_index_fields))
    ttl: TTLConfig = {"refresh_on_read": True, "default_ttl": settings.store_ttl_minutes}
    return ItemStore(db=db, clock=clock, index=index, ttl=ttl)


def with_store(compiled: Mapping[str, CompiledGraph], store: BaseStore) -> dict[str, CompiledGraph]:
    """Each graph with the server's Store (``runtime.store``, ``InjectedStore``,
    ``get_store()``), in place of any a graph was compiled with: its items are the run owner's
    tenant's, kept in the server's database."""
    return {name: graph.copy(update={"store": store}) for name, graph in compiled.items()}


def _shutdown_steps(
    executor: RunExecutor, open_streams: OpenStreams, readiness: Readiness
) -> Callable[[], None]:
    """What happens as soon as the server is asked to stop, before the server waits for its
    open responses (the lifespan's end comes after them): every run stops at its next step
    boundary (the lifespan's end waits for them, up to the grace period), and every open stream
    ends at once with a reconnect hint, so that a tab left open (the approvals feed, a followed
    thread) does not hold the stop: its client reconnects with ``Last-Event-ID`` to the next
    process, which sends what it missed from the event log."""
    started = False

    def begin_shutdown() -> None:
        nonlocal started
        if started:
            return
        started = True
        readiness.draining = True  # GET /readyz answers 503: the balancer sends nothing new
        executor.suspend_all()
        open_streams.end_all()

    return begin_shutdown
