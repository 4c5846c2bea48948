"""The thread a run is for: a new one or an existing one, resolved and checked from a request
before anything is written (unknown ids are 404, mismatches 422, a busy thread 409)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from uuid import uuid4

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.notes import SampleNote, default_project_id
from consentry.runtime.runs.execute import RunOptions
from consentry.schemas.chat import ChatRequest, ConsentPolicy
from consentry.schemas.events import TerminalReason
from consentry.schemas.threads import ThreadStatus
from consentry.storage import notes as notes_repo
from consentry.storage import projects as projects_repo
from consentry.storage import threads as threads_repo
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import ThreadVersion
from consentry.storage.threads import ThreadRecord
from consentry_graphs.registry import GraphSpec

__all__ = ["RunTarget", "RunTargets", "refuse_if_running", "run_in_progress", "thread_exists"]

_DEFAULT_PROJECTS_KEPT = 10_000


@dataclass(frozen=True)
class RunTarget:
    thread_id: str
    spec: GraphSpec
    project_id: str
    note_id: str | None
    is_new: bool
    status: ThreadStatus
    last_reason: TerminalReason | None
    consent_policy: ConsentPolicy
    transcript_kept: bool = True
    """False for a thread from before the transcript table: its messages are in its checkpoint."""
    remembered_note_id: str | None = None
    """The note the thread is about (``threads.note_id``), if it has one yet."""
    never_ran: bool = False
    """An existing thread no run has claimed yet (``POST /threads``): its first message titles
    it."""
    chosen_id: bool = False
    """A new thread under the id the client chose (AG-UI's ``threadId``), created by its run."""
    run_options: RunOptions = field(default_factory=RunOptions)
    """What the run gets beside its input: the request's (checked), else the thread's."""
    assistant_id: str | None = None
    """The owner's assistant the run is on (``threads.assistant_id``; None: its graph's own)."""
    version: ThreadVersion | None = None
    """The thread's row as this request read it (None: a new thread)."""

    @property
    def stopped_half_way(self) -> bool:
        """The last run failed or was cancelled: the graph may have work left to continue."""
        return self.last_reason in ("failed", "cancelled")


def run_in_progress(thread_id: str) -> ConflictError:
    """409 ``run_in_progress``: a thread runs one run at a time."""
    return ConflictError(
        "Another run is active on this thread; wait for its final event.",
        code="run_in_progress",
        details={"thread_id": thread_id},
    )


def thread_exists(thread_id: str) -> ConflictError:
    """409 ``thread_exists``: a client chose an id a thread (anybody's) has already."""
    return ConflictError(
        f"A thread with id {thread_id!r} exists.",
        code="thread_exists",
        details={"thread_id": thread_id},
    )


async def _existing(
    conn: DbConnection, owner: Principal, thread_id: str, *, creates: bool
) -> ThreadRecord | None:
    """The owner's thread ``thread_id``; None when the request creates it under that id."""
    if not creates:
        return await threads_repo.get_thread(conn, owner, thread_id)
    found = await threads_repo.get_thread_or_taken(conn, owner, thread_id)
    if found is True:
        raise thread_exists(thread_id)
    return found or None


def refuse_if_running(target: RunTarget) -> None:
    if target.status == "running":
        raise run_in_progress(target.thread_id)


class RunTargets:
    """Resolves requests to the thread they are for, and names to the graphs served."""

    def __init__(
        self,
        *,
        db: Database,
        graphs: dict[str, GraphSpec],
        clock: Clock,
        sample_notes: Sequence[SampleNote] = (),
    ) -> None:
        self._db = db
        self._graphs = graphs
        self._clock = clock
        self._sample_notes = sample_notes
        """What a default project starts with (``runtime.sample_notes``)."""
        self._default_projects: dict[Principal, str] = {}
        """Each owner's default project, once read: it is never deleted nor replaced (one per
        owner, ``0009_one_default_project``), so a new thread needs no read to find it."""

    async def resolve(
        self, owner: Principal, request: ChatRequest, *, creates: bool = False
    ) -> RunTarget:
        """The thread ``request`` is for: checked (404, 422) and read once; a new thread's
        default project is created on first use. ``creates``: a ``thread_id`` no thread has is
        a new thread under that id (one of another owner: 409 ``thread_exists``). With the
        options its run gets (``RunOptions.checked``: 422 before anything is written)."""
        target = await self._resolve(owner, request, creates=creates)
        options = RunOptions.checked(
            target.spec,
            context=request.context,
            configurable=request.configurable,
            kept=target.run_options,
        )
        before, after = request.breakpoints
        if before or after:  # this run's only
            options = replace(options, interrupt_before=before, interrupt_after=after)
        if request.webhook is not None:  # this run's only, as its breakpoints
            url, metadata = request.webhook
            options = replace(options, webhook=url, metadata=metadata)
        assistant_id = target.assistant_id
        if request.assistant_named:  # the LangGraph SDK face's run: on this assistant
            assistant_id = request.assistant_id
        if options is target.run_options and assistant_id == target.assistant_id:
            return target
        return replace(target, run_options=options, assistant_id=assistant_id)

    async def _resolve(self, owner: Principal, request: ChatRequest, *, creates: bool) -> RunTarget:
        binding: str | None = None
        if request.thread_id is None and request.project_id is None and request.note_id is None:
            known = self._default_projects.get(owner)
            if known is not None:  # a new thread in the owner's default project: nothing to read
                return self._new_thread(request, self.spec(request.graph), known)
        async with self._db.read() as conn:
            row = None
            if request.thread_id is not None:
                row = await _existing(conn, owner, request.thread_id, creates=creates)
            if row is None:  # a message's new thread (a `resume` names its thread: ChatRequest)
                project_id = request.project_id
                if project_id is not None:
                    await projects_repo.get_project(conn, owner, project_id)
                target = self._new_thread(request, self.spec(request.graph), project_id or "")
                if request.thread_id is not None:  # under the id the client chose
                    target = replace(target, thread_id=request.thread_id, chosen_id=True)
            else:
                if request.project_id not in (None, row.project_id):
                    await projects_repo.get_project(conn, owner, request.project_id)  # 404 first
                binding = _first_graph(row, request)
                self._check_thread_matches(row, request, binding=binding)
                target = self.of(row, note_id=request.note_id, graph=binding)
                if _takes_thread_note(request, target):
                    target = replace(target, note_id=target.remembered_note_id)
            if (note_id := target.note_id) is not None:
                note = await notes_repo.find_note(conn, owner, note_id)
                if note is None and note_id != request.note_id:  # the thread's, deleted since
                    target = replace(target, note_id=None)
                elif note is None:
                    raise NotFoundError.of("note", note_id)
                elif not target.project_id:
                    target = replace(target, project_id=note.project_id)
                elif note.project_id != target.project_id:
                    raise NotFoundError.of("note", note_id)
            default_project = None
            if not target.project_id:
                default_project = self._default_projects.get(owner)
                if default_project is None:
                    default_project = await projects_repo.find_default_project_id(conn, owner)
        if binding is not None and row is not None:
            await self._bind_graph(owner, row, request, binding)
        if not target.project_id:
            if default_project is None:  # first use: create it
                async with self._db.write() as conn:
                    default_project = await default_project_id(
                        conn, owner, now=self._clock(), samples=self._sample_notes
                    )
            self._remember_default_project(owner, default_project)
            target = replace(target, project_id=default_project)
        return target

    @staticmethod
    def _new_thread(request: ChatRequest, spec: GraphSpec, project_id: str) -> RunTarget:
        return RunTarget(
            thread_id=str(uuid4()),
            spec=spec,
            project_id=project_id,
            note_id=request.note_id,
            is_new=True,
            status="idle",
            last_reason=None,
            consent_policy=request.consent_policy or "ask",
        )

    def _remember_default_project(self, owner: Principal, project_id: str) -> None:
        if len(self._default_projects) >= _DEFAULT_PROJECTS_KEPT:
            self._default_projects.clear()  # bounded: owners beyond it are read again
        self._default_projects[owner] = project_id

    async def _bind_graph(
        self, owner: Principal, row: ThreadRecord, request: ChatRequest, graph: str
    ) -> None:
        """Store the graph a thread's first run binds it to; a run claimed it meanwhile: the
        graph it ran stays, and this request is checked against it."""
        async with self._db.write() as conn:
            if not await threads_repo.bind_graph(conn, row.id, graph):
                current = await threads_repo.get_thread(conn, owner, row.id)
                self._check_thread_matches(current, request, binding=None)

    def _check_thread_matches(
        self, row: ThreadRecord, request: ChatRequest, *, binding: str | None
    ) -> None:
        fields = request.model_fields_set
        mismatches = [
            ("graph", "graph_mismatch", binding or request.graph, binding or row.graph),
            ("project_id", "project_mismatch", request.project_id, row.project_id),
            ("consent_policy", "policy_mismatch", request.consent_policy, row.consent_policy),
        ]
        for name, code, asked, actual in mismatches:
            if name in fields and asked is not None and asked != actual:
                raise InvalidRequestError(
                    f"Thread {row.id!r} keeps its {name.replace('_', ' ')}: {actual!r}.",
                    code=code,
                    details={name: actual},
                )

    def of(
        self, row: ThreadRecord, *, note_id: str | None = None, graph: str | None = None
    ) -> RunTarget:
        """The target of an existing thread's row (run with ``graph``, when its first run binds
        it to another one than it was created with)."""
        return RunTarget(
            thread_id=row.id,
            spec=self.spec(graph or row.graph),
            project_id=row.project_id,
            note_id=note_id,
            is_new=False,
            status=row.status,
            last_reason=row.last_reason,
            consent_policy=row.consent_policy,
            transcript_kept=row.transcript_kept,
            remembered_note_id=row.note_id,
            never_ran=row.never_ran,
            run_options=RunOptions.for_thread(self.spec(graph or row.graph), row.run_options),
            assistant_id=row.assistant_id,
            version=ThreadVersion(row.created_at, row.fencing_token),
        )

    def spec(self, name: str) -> GraphSpec:
        spec = self._graphs.get(name)
        if spec is None:
            available = sorted(self._graphs)
            raise InvalidRequestError(
                f"No graph named {name!r}; available: {', '.join(available)}.",
                code="unknown_graph",
                details={"graph": name, "available": available},
            )
        return spec


def _takes_thread_note(request: ChatRequest, target: RunTarget) -> bool:
    """A LangGraph SDK run whose ``input`` names no note, on a thread about one
    (``threads.update(metadata={"note_id": ...})``): it is about the thread's note. Its client
    sends only messages (Agent Chat UI); ``/v1`` and AG-UI name the note with each run."""
    return (
        request.assistant_named
        and request.input is not None
        and "note_id" not in request.input
        and target.note_id is None
        and target.remembered_note_id is not None
    )


def _first_graph(row: ThreadRecord, request: ChatRequest) -> str | None:
    """The graph a thread that never ran takes from its first run's request, when it names
    another one than the thread was created with (``POST /threads`` creates a thread before
    its first run knows its assistant); None otherwise."""
    asked = request.graph if "graph" in request.model_fields_set else None
    return asked if row.never_ran and asked is not None and asked != row.graph else None
